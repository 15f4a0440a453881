/**
 * What the step of a native policy's binding is, whichever its kind (a ValidatingAdmissionPolicy's validate step,
 * a MutatingAdmissionPolicy's mutate step): its name, where it stands and how it is guarded, and the head of its
 * `/chain` description.
 */
import type { Phase } from '../admission/types.js';
import type { Mode, ReinvocationPolicy } from '../config/step-options.js';
import { describePlacement, type StepPlacement } from '../steps/placement.js';
import { compiledMatch, matchSpecOf } from './binding-match.js';
import type { NativeMutatingBinding, NativePolicy } from './native-objects.js';

/** Where a binding's steps sit in the chain, and their time. */
export interface NativeStepPlacement {
  /** The entry's name: also the steps' extension. */
  readonly entry: string;
  readonly order: number;
  readonly timeoutMs: number;
  /** A shadow entry's: run after the answer (a validating binding as if its validationActions were [Deny]). */
  readonly shadow?: true;
}

/** The step's placement: the policy's failurePolicy, and the mode and reinvocationPolicy its kind gives. */
export function bindingPlacement(
  policy: NativePolicy,
  binding: NativeMutatingBinding,
  placement: NativeStepPlacement,
  guard: { readonly mode: Mode; readonly reinvocationPolicy: ReinvocationPolicy },
): StepPlacement {
  return {
    name: `${placement.entry}/${policy.name}/${binding.name}`,
    match: compiledMatch(policy, binding),
    matchSpec: matchSpecOf(policy, binding),
    failurePolicy: policy.failurePolicy,
    timeoutMs: placement.timeoutMs,
    mode: guard.mode,
    sideEffects: 'None',
    reinvocationPolicy: guard.reinvocationPolicy,
    order: placement.order,
    extension: placement.entry,
    attach: 'Always',
    ...(placement.shadow ? { shadow: true } : {}),
  };
}

/** The step for `/chain`, with what only its kind has (`validationActions`, `validations`, `mutations`, …). */
export function describeBinding(
  placed: StepPlacement,
  entry: string,
  policy: NativePolicy,
  binding: NativeMutatingBinding,
  phase: Phase,
  own: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const { matchConditions } = policy.spec;
  return {
    name: placed.name,
    source: 'admissionPolicies',
    admissionPolicies: entry,
    policy: policy.name,
    binding: binding.name,
    // Where each came from: a file, or the cluster at a resourceVersion (fromCluster).
    ...(policy.origin && binding.origin ? { origin: { policy: policy.origin, binding: binding.origin } } : {}),
    ...own,
    phase,
    order: placed.order,
    ...describePlacement(placed, phase),
    // The policy's own conditions (they may read params): evaluated by its step, not by the dispatcher.
    ...(matchConditions.length > 0
      ? { matchConditions: matchConditions.map((c) => ({ name: c.name, expression: c.program.expression })) }
      : {}),
  };
}
