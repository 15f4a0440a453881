/**
 * The mutate step of one binding of a MutatingAdmissionPolicy, as the apiserver dispatches it
 * (admission/plugin/policy/mutating/dispatcher.go): the policy's and the binding's matching, then for each of the
 * binding's params in turn, on the object as the previous one left it, the policy's matchConditions (any false:
 * nothing to do; an error: a failure) and its mutations in order (server/policy/mutations.ts, the `policy` entry's
 * machinery). A mutation that fails is left out and the later ones still run, as in the apiserver; what the
 * failures come to is the policy's failurePolicy: Fail refuses the request in the apiserver's words (the first
 * failure's), Ignore keeps what the other mutations changed and says nothing, as the apiserver says nothing. The
 * step's reinvocationPolicy is the policy's: the mutate phase runs it again when a later step changed the object.
 */
import { APPROVED, type Decision } from '../admission/decision.js';
import type { JsonPatchOperation, KubeObject } from '../admission/types.js';
import { StepFailedError } from '../base/errors.js';
import { activation, CelValueError, type Activation, type EvalResult } from '../cel/index.js';
import { MAX_MUTATION_OPERATIONS, patchedCopy, runMutations, type MutationFailure } from '../policy/mutations.js';
import { keepPolicyRun } from '../policy/policy-runs.js';
import { requestValue, reviewCel } from '../policy/review-cel.js';
import { specReadsNamespaceObject } from '../policy/policy-spec.js';
import type { ExpressionRef } from '../policy/run-policy.js';
import { placedFields } from '../steps/placement.js';
import type { Step, StepInvocation } from '../steps/step.js';
import { bindingPlacement, describeBinding, type NativeStepPlacement } from './binding-step.js';
import { celParams, paramsOfBinding } from './binding-params.js';
import type { NativeMutatingBinding, NativeMutatingPolicy } from './native-objects.js';
import {
  applyConfigurationError,
  bindingConfigurationError,
  jsonPatchError,
  mutatingPolicyDenied,
} from './native-words.js';
import { conditionsMatch, expressionError } from './validate-policy.js';

/** The apiserver's words for a failed mutation. */
function mutationError(policy: NativeMutatingPolicy, found: MutationFailure): string {
  const mutation = policy.spec.mutations![found.index]!;
  if (found.evaluation) return expressionError(mutation.program.expression, found.evaluation);
  return mutation.patchType === 'JSONPatch' ? jsonPatchError(found.detail) : applyConfigurationError(found.detail);
}

/** What one invocation of the binding came to, before its failurePolicy settles the errors. */
interface Mutated {
  readonly patch: readonly JsonPatchOperation[];
  /** In the apiserver's words, in the order they happened. */
  readonly errors: readonly string[];
  /** For the decision trace: the first mutation that failed, and how. */
  readonly decidedBy?: ExpressionRef;
  readonly failure?: Extract<EvalResult, { ok: false }>;
  readonly failureMessage?: string;
}

/** Runs the policy for each of the binding's params, on the object as the params before left it. */
function mutate(
  policy: NativeMutatingPolicy,
  params: ReturnType<typeof paramsOfBinding>,
  inv: Pick<StepInvocation, 'request' | 'plainObject'>,
): Mutated {
  const { request } = inv;
  const found = params(request.namespace ?? '');
  if ('error' in found) return { patch: [], errors: [bindingConfigurationError(found.error)] };
  const cel = reviewCel(request);
  const plainRequest = requestValue(request);
  const patch: JsonPatchOperation[] = [];
  const errors: string[] = [];
  let first: MutationFailure | undefined;
  let current = inv.plainObject as KubeObject;
  for (const [i, param] of found.params.entries()) {
    const celParam = param === null ? null : celParams(param);
    let values: Activation;
    try {
      values = {
        ...activation({ object: current, oldObject: request.oldObject, request: plainRequest }),
        params: celParam,
      };
    } catch (err) {
      if (!(err instanceof CelValueError)) throw err;
      errors.push(`the request cannot be handed to CEL: ${err.message}`);
      break;
    }
    const matched = conditionsMatch(policy.spec, values, cel.budget);
    if (matched === false) continue;
    if (typeof matched === 'string') {
      errors.push(matched);
      continue;
    }
    const ops = runMutations(
      policy.spec,
      { request, plainObject: current },
      {
        params: celParam,
        onFailure: (failure) => {
          first ??= failure;
          errors.push(mutationError(policy, failure));
        },
      },
    );
    // Only with onFailure unset does a run end in a failure: here, never.
    if (ops instanceof StepFailedError) throw ops;
    if (ops.length === 0) continue;
    // Each params' run is bounded on its own: together too.
    if (patch.length + ops.length > MAX_MUTATION_OPERATIONS) {
      errors.push(`more than ${MAX_MUTATION_OPERATIONS} JSON Patch operations for all the binding's params`);
      break;
    }
    patch.push(...ops);
    if (i < found.params.length - 1) {
      const next = patchedCopy(current, ops);
      // The run applied these very operations to this very object: they apply.
      if (!(next instanceof Error)) current = next;
    }
  }
  return {
    patch,
    errors,
    ...(first
      ? {
          decidedBy: { list: 'mutations', index: first.index } as const,
          ...(first.evaluation ? { failure: first.evaluation } : { failureMessage: first.detail }),
        }
      : {}),
  };
}

/** The mutate step of `binding` of the MutatingAdmissionPolicy `policy`, with the params the entry's files hold. */
export function createNativeMutateStep(
  policy: NativeMutatingPolicy,
  binding: NativeMutatingBinding,
  objects: readonly KubeObject[],
  placement: NativeStepPlacement,
): Step {
  const placed = bindingPlacement(policy, binding, placement, {
    // A MutatingAdmissionPolicy has no actions: what it changes, it changes.
    mode: 'enforce',
    reinvocationPolicy: policy.reinvocationPolicy,
  });
  const params = paramsOfBinding(policy, binding, objects);
  return {
    ...placedFields(placed, 'mutate'),
    source: 'policy',
    phase: 'mutate',
    // Nothing to mutate on a DELETE or CONNECT: the apiserver calls no patcher without an object.
    needsObject: true,
    ownWords: true,
    readsNamespaceObject: specReadsNamespaceObject(policy.spec, policy.spec.matchConditions),
    invoke(inv): Decision {
      const budget = reviewCel(inv.request).budget;
      const before = budget.remaining;
      const result = mutate(policy, params, inv);
      const refused = policy.failurePolicy === 'Fail' && result.errors.length > 0;
      // The apiserver's PolicyError: Forbidden's code, whatever went wrong.
      const outcome: Decision = refused
        ? { allowed: false, message: mutatingPolicyDenied(policy.name, binding.name, result.errors[0]!), code: 403 }
        : result.patch.length > 0
          ? { allowed: true, patch: [...result.patch] }
          : APPROVED;
      keepPolicyRun(inv.request, placed.name, {
        spec: policy.spec,
        outcome,
        ...(result.decidedBy ? { decidedBy: result.decidedBy } : {}),
        ...(result.failure ? { failure: result.failure } : {}),
        ...(result.failureMessage !== undefined ? { failureMessage: result.failureMessage } : {}),
        annotations: [],
        cost: before - budget.remaining,
      });
      return outcome;
    },
    describe: () => ({
      ...describeBinding(placed, placement.entry, policy, binding, 'mutate', {}),
      mutations: (policy.spec.mutations ?? []).map((m) => m.patchType),
    }),
  };
}
