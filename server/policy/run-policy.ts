/**
 * A `policy` chain entry's evaluation, with the semantics of the apiserver's ValidatingAdmissionPolicy (its
 * matchConditions, every entry's, are the dispatchers' to evaluate): validations in order, the first false one refuses
 * with its message and reason; auditAnnotations as the step's annotations; an expression that fails or runs out
 * of cost budget is the step's failure (StepFailedError), which the chain settles by its failurePolicy.
 */
import { APPROVED, type Decision } from '../admission/decision.js';
import { StepFailedError } from '../base/errors.js';
import {
  evaluate,
  lazyVariables,
  withVariables,
  type Activation,
  type CelProgram,
  type EvalResult,
  type PolicyVariables,
} from '../cel/index.js';
import type { AdmissionRequest, KubeObject } from '../admission/types.js';
import { REASON_CODES, type PolicySpec, type PolicyValidation } from './policy-spec.js';
import { reviewCel, type ReviewCel } from './review-cel.js';

/** The longest refusal message a policy gives, as the apiserver bounds a messageExpression's result. */
export const MAX_POLICY_MESSAGE_CHARS = 5 * 1024;

/** Which expression of a policy: `validations[2]`, `auditAnnotations[1] (key)`, `mutations[0] (JSONPatch)`. */
export interface ExpressionRef {
  readonly list: 'validations' | 'auditAnnotations' | 'mutations';
  readonly index: number;
}

/** What decided one evaluation of a policy, for the decision trace (explain-policy.ts); references, built on read. */
export interface PolicyRun {
  readonly spec: PolicySpec;
  readonly outcome: Decision | StepFailedError;
  /**
   * The expression that ended it: the false validation that refused, or the expression that failed (`failure`).
   * Undefined: every validation held.
   */
  readonly decidedBy?: ExpressionRef;
  /** The deciding expression's failure (an error, or cost_exceeded). */
  readonly failure?: Extract<EvalResult, { ok: false }>;
  /** Why the deciding mutation failed when its expression gave a value: the value could not be applied. */
  readonly failureMessage?: string;
  /** The review's values and variables as the validations read them; what was evaluated is read from them. */
  readonly variables?: PolicyVariables;
  /** The audit annotations it made, in order. */
  readonly annotations: ReadonlyArray<readonly [key: string, value: string]>;
  /** What its expressions spent of the review's CEL budget. */
  readonly cost: number;
}

/** An expression that did not give a value: the step fails, naming the field and where in the expression. */
export function failed(field: string, result: Extract<EvalResult, { ok: false }>): StepFailedError {
  const at = result.position ? ` (at column ${result.position.column})` : '';
  return new StepFailedError(
    result.reason === 'cost_exceeded' ? 'cost_exceeded' : 'error',
    `${field}: ${result.message}${at}`,
  );
}

export function notBool(field: string, value: unknown): StepFailedError {
  return new StepFailedError('error', `${field}: expected a bool result, got ${typeof value}`);
}

/** A messageExpression's result when the apiserver would show it: a non-blank string on one line. */
function usableMessage(result: EvalResult): string | undefined {
  if (!result.ok || typeof result.value !== 'string') return undefined;
  const text = result.value;
  if (text.trim() === '' || /[\r\n]/.test(text)) return undefined;
  return text.length > MAX_POLICY_MESSAGE_CHARS ? text.slice(0, MAX_POLICY_MESSAGE_CHARS) : text;
}

function refusal(validation: PolicyValidation, values: Activation, cel: ReviewCel): Decision {
  // As the apiserver: a messageExpression that fails or gives nothing usable falls back to `message`.
  const fromExpression = validation.messageProgram
    ? usableMessage(evaluate(validation.messageProgram, values, cel.budget))
    : undefined;
  const message = fromExpression ?? validation.message ?? `failed expression: ${validation.program.expression}`;
  return { allowed: false, message, code: REASON_CODES[validation.reason] };
}

/** What the policy reads of a step's invocation (chain/step.ts's StepInvocation has it). */
export interface PolicyInvocation {
  readonly request: AdmissionRequest;
  /** The object as it stands, without a tracking view. */
  readonly plainObject: KubeObject | undefined;
  readonly annotate: (key: string, value: string) => void;
}

/** Each policy's variables as lazyVariables() takes them: made once, not per review. */
const variablePrograms = new WeakMap<PolicySpec, ReadonlyMap<string, CelProgram>>();

export function programsOf(spec: PolicySpec): ReadonlyMap<string, CelProgram> {
  let programs = variablePrograms.get(spec);
  if (programs === undefined) {
    programs = new Map(spec.variables.map((v) => [v.name, v.program]));
    variablePrograms.set(spec, programs);
  }
  return programs;
}

/** Evaluates the policy for one invocation: its decision or failure, and what decided it. */
export function evaluatePolicy(spec: PolicySpec, inv: PolicyInvocation): PolicyRun {
  const cel = reviewCel(inv.request);
  const before = cel.budget.remaining;
  let decidedBy: ExpressionRef | undefined;
  let failure: Extract<EvalResult, { ok: false }> | undefined;
  // Lazy: nothing is evaluated until an expression reads a variable, after `values` is made below.
  const variables: PolicyVariables = lazyVariables(programsOf(spec), () => values, cel.budget);
  const annotations: Array<readonly [string, string]> = [];
  /** The expression `ref` decided; `result` when it failed. */
  const decided = (ref: ExpressionRef, result?: EvalResult): void => {
    decidedBy = ref;
    if (result !== undefined && !result.ok) failure = result;
  };
  // One shape, no spreads: this runs for every policy step of every review.
  const done = (outcome: Decision | StepFailedError): PolicyRun => ({
    spec,
    outcome,
    decidedBy,
    failure,
    variables,
    annotations,
    cost: before - cel.budget.remaining,
  });
  let base: Activation;
  try {
    base = cel.valuesFor(inv.plainObject);
  } catch (err) {
    // CelValueError: an object nested past what CEL is handed.
    return done(new StepFailedError('error', `the request cannot be handed to CEL: ${(err as Error).message}`));
  }
  const values = withVariables(base, variables);
  let decision: Decision = APPROVED;
  for (let i = 0; i < spec.validations.length; i++) {
    const validation = spec.validations[i]!;
    const result = evaluate(validation.program, values, cel.budget);
    const field = `validations[${i}]`;
    if (!result.ok || result.value !== true) decided({ list: 'validations', index: i }, result);
    if (!result.ok) return done(failed(field, result));
    if (typeof result.value !== 'boolean') return done(notBool(field, result.value));
    if (!result.value) {
      decision = refusal(validation, values, cel);
      break;
    }
  }
  for (let i = 0; i < spec.auditAnnotations.length; i++) {
    const annotation = spec.auditAnnotations[i]!;
    const result = evaluate(annotation.program, values, cel.budget);
    const field = `auditAnnotations[${i}] (${annotation.key})`;
    const ref: ExpressionRef = { list: 'auditAnnotations', index: i };
    if (!result.ok) {
      decided(ref, result);
      return done(failed(field, result));
    }
    // As the apiserver: null means no annotation; anything else must be a string.
    if (result.value === null) continue;
    if (typeof result.value !== 'string') {
      decided(ref);
      return done(new StepFailedError('error', `${field}: expected a string or null, got ${typeof result.value}`));
    }
    inv.annotate(annotation.key, result.value);
    annotations.push([annotation.key, result.value]);
  }
  return done(decision);
}

/** Evaluates the policy for one invocation: its decision, or the failure of one of its expressions. */
export function policyOutcome(spec: PolicySpec, inv: PolicyInvocation): Decision | StepFailedError {
  return evaluatePolicy(spec, inv).outcome;
}
