/**
 * A `policy` chain entry's `mutations`, with the semantics of the apiserver's MutatingAdmissionPolicy: in order,
 * each expression evaluated against the object as the mutations before it left it; a JSONPatch result applied as
 * its operations, an ApplyConfiguration result merged (apply-configuration.ts). A JSON patch whose `test`
 * operation does not hold changes nothing and is no failure, as in the apiserver; any other patch that does not
 * apply, an expression that fails or runs out of cost budget, is the step's failure (StepFailedError). The
 * changes come back as one list of JSON Patch operations against the object the step was given, which the
 * mutate phase applies as it applies a provider's patch (declared write sets, conflicts, the review's patch).
 */
import type { AdmissionRequest, JsonPatchOperation, KubeObject } from '../admission/types.js';
import { PatchApplyError, StepFailedError } from '../base/errors.js';
import {
  activation,
  CelValueError,
  evaluate,
  lazyVariables,
  toJson,
  type Activation,
  type EvalResult,
} from '../cel/index.js';
import { applyPatchInPlace } from '../patch/apply.js';
import { applyConfigurationPatch, ApplyConfigurationError } from './apply-configuration.js';
import { mergeSchemaFor } from './merge-schema.js';
import { copyAlong } from './path-copy.js';
import type { PolicyMutation, PolicySpec } from './policy-spec.js';
import { requestValue, reviewCel, type ReviewCel } from './review-cel.js';
import { failed, programsOf } from './run-policy.js';

/** The most operations a policy's mutations may give together (the apiserver's bound on one JSON patch). */
export const MAX_MUTATION_OPERATIONS = 10_000;

/** What the mutations read of a step's invocation. */
export interface MutationInvocation {
  readonly request: AdmissionRequest;
  /** The object as it stands when the step runs, never changed here. */
  readonly plainObject: KubeObject | undefined;
}

/** A mutation that failed, when the run goes on without it (MutationOptions.onFailure). */
export interface MutationFailure {
  readonly index: number;
  /** The failure as the step's: the field and what went wrong. */
  readonly error: StepFailedError;
  /** Evaluating the expression failed: how (else its result could not be applied). */
  readonly evaluation?: Extract<EvalResult, { ok: false }>;
  /** What went wrong, without the field in front. */
  readonly detail: string;
}

/** How a MutatingAdmissionPolicy's binding runs the mutations (native-policy/native-mutate-step.ts). */
export interface MutationOptions {
  /** `params` as CEL reads it (celParams()); absent: null. */
  readonly params?: unknown;
  /**
   * Given: a mutation that fails is handed here and left out, and the later ones still run on the object as the
   * earlier ones left it, as the apiserver runs a MutatingAdmissionPolicy's. Absent: the first failure ends the run.
   */
  readonly onFailure?: (failure: MutationFailure) => void;
}

const fieldOf = (i: number, mutation: PolicyMutation): string =>
  `mutations[${i}].${mutation.patchType === 'JSONPatch' ? 'jsonPatch' : 'applyConfiguration'}.expression`;

/** A JSONPatch expression's result as operations (their shape is checked when they are applied). */
function jsonPatchOf(value: unknown): JsonPatchOperation[] {
  if (!Array.isArray(value)) throw new ApplyConfigurationError('expected a list of JSONPatch{…}');
  return value.map((item, i) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item))
      throw new ApplyConfigurationError(`item ${i} is not a JSONPatch{…}`);
    return item as JsonPatchOperation;
  });
}

/** The values one mutation reads: the object as it is now, and the policy's variables evaluated against it. */
function valuesOf(spec: PolicySpec, base: Activation, cel: ReviewCel): Activation {
  if (spec.variables.length === 0) return base;
  const values: Activation = { ...base, variables: lazyVariables(programsOf(spec), () => values, cel.budget) };
  return values;
}

/** A failure of one mutation: its error as the step's, and how it failed. */
function failure(index: number, field: string, detail: string, evaluation?: Extract<EvalResult, { ok: false }>) {
  const error = evaluation ? failed(field, evaluation) : new StepFailedError('invalid_patch', `${field}: ${detail}`);
  return { index, error, detail, ...(evaluation ? { evaluation } : {}) };
}

/** One mutation's operations against `object`, or how it failed. */
function operationsOf(
  mutation: PolicyMutation,
  index: number,
  values: Activation,
  object: KubeObject,
  request: AdmissionRequest,
  cel: ReviewCel,
): JsonPatchOperation[] | MutationFailure {
  const field = fieldOf(index, mutation);
  const result = evaluate(mutation.program, values, cel.budget);
  if (!result.ok) return failure(index, field, result.message, result);
  try {
    const json = toJson(result.value);
    return mutation.patchType === 'JSONPatch'
      ? jsonPatchOf(json)
      : applyConfigurationPatch(object, json, mergeSchemaFor(request.kind.kind));
  } catch (err) {
    if (err instanceof ApplyConfigurationError || err instanceof CelValueError)
      return failure(index, field, err.message);
    throw err;
  }
}

/** `ops` applied to a copy of `object` (the object itself unchanged), or the error of the one that does not apply. */
export function patchedCopy(object: KubeObject, ops: readonly JsonPatchOperation[]): KubeObject | PatchApplyError {
  const next = copyAlong(object, ops);
  try {
    // Values of their own: an operation's value put in place must not be what a later operation edits.
    applyPatchInPlace(next, structuredClone(ops));
  } catch (err) {
    if (!(err instanceof PatchApplyError)) throw err;
    return err;
  }
  return next;
}

/**
 * The policy's changes to the invocation's object as JSON Patch operations (none when nothing changed), or the
 * failure of one of its mutations (with `options.onFailure`, failed mutations are left out instead).
 */
export function runMutations(
  spec: PolicySpec,
  inv: MutationInvocation,
  options: MutationOptions = {},
): JsonPatchOperation[] | StepFailedError {
  const mutations = spec.mutations ?? [];
  const { request } = inv;
  if (mutations.length === 0 || inv.plainObject === undefined) return [];
  let current: KubeObject = inv.plainObject;
  const cel = reviewCel(request);
  const plainRequest = requestValue(request);
  const params = options.params ?? null;
  // Not the review's shared values (review-cel.ts): those are kept by the object, which the mutate phase edits.
  const baseFor = (object: KubeObject): Activation => ({
    ...activation({ object, oldObject: request.oldObject, request: plainRequest }),
    params,
  });
  let base: Activation;
  try {
    base = baseFor(current);
  } catch (err) {
    if (!(err instanceof CelValueError)) throw err;
    return new StepFailedError('error', `the request cannot be handed to CEL: ${err.message}`);
  }
  const all: JsonPatchOperation[] = [];
  /** A failed mutation: handed on and left out, or the end of the run. */
  const failedWith = (found: MutationFailure): StepFailedError | undefined => {
    if (!options.onFailure) return found.error;
    options.onFailure(found);
    return undefined;
  };
  for (const [i, mutation] of mutations.entries()) {
    const field = fieldOf(i, mutation);
    if (i > 0) base = baseFor(current);
    const ops = operationsOf(mutation, i, valuesOf(spec, base, cel), current, request, cel);
    if (!Array.isArray(ops)) {
      const stop = failedWith(ops);
      if (stop) return stop;
      continue;
    }
    if (ops.length === 0) continue;
    if (all.length + ops.length > MAX_MUTATION_OPERATIONS) {
      const stop = failedWith(failure(i, field, `more than ${MAX_MUTATION_OPERATIONS} operations in all`));
      if (stop) return stop;
      continue;
    }
    const next = patchedCopy(current, ops);
    if (next instanceof PatchApplyError) {
      if (ops[next.index]?.op === 'test') continue;
      const found = failure(i, field, next.message);
      const stop = failedWith({
        ...found,
        error: new StepFailedError('invalid_patch', found.error.message, { cause: next }),
      });
      if (stop) return stop;
      continue;
    }
    all.push(...ops);
    current = next;
  }
  return all;
}
