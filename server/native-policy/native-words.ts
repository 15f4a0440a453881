/**
 * What a native policy says, in the apiserver's words (admission/plugin/policy/validating/dispatcher.go, and
 * mutating/dispatcher.go with generic/policy_dispatcher.go for a MutatingAdmissionPolicy): the
 * refusal, the warning, and the keys of its audit annotations. The apiserver keys a policy's annotations
 * `<policy>/<key>` and a failed Audit validation `validation.policy.admission.k8s.io/validation_failure`; a
 * webhook's keys get `<webhook>/` in front and may then hold no other `/`, so the gateway writes that one
 * slash as a dot.
 */
import type { ValidationAction } from './native-objects.js';

/** The refusal of a request (the first Deny decision of the review's first denying binding). */
export function deniedRequest(policy: string, binding: string, message: string): string {
  return `ValidatingAdmissionPolicy '${policy}' with binding '${binding}' denied request: ${message}`;
}

/** The warning of a binding with the Warn action. */
export function validationFailedWarning(policy: string, binding: string, message: string): string {
  return `Validation failed for ValidatingAdmissionPolicy '${policy}' with binding '${binding}': ${message}`;
}

/** The key of a policy's auditAnnotation. */
export function auditAnnotationKey(policy: string, key: string): string {
  return `${policy}.${key}`;
}

/** The key of the annotation a binding with the Audit action writes for a failed validation. */
export const VALIDATION_FAILURE_KEY = 'validation.policy.admission.k8s.io.validation_failure';

/** Its value: a JSON list of one failure, as the apiserver's ValidationFailureValue. */
export function validationFailureValue(failure: {
  readonly message: string;
  readonly policy: string;
  readonly binding: string;
  readonly expressionIndex: number;
  readonly validationActions: readonly ValidationAction[];
}): string {
  const { message, policy, binding, expressionIndex, validationActions } = failure;
  return JSON.stringify([{ message, policy, binding, expressionIndex, validationActions }]);
}

/** A binding whose params cannot be had (generic.CollectParams's errors). */
export function bindingConfigurationError(error: string): string {
  return `failed to configure binding: ${error}`;
}

/**
 * The refusal of a MutatingAdmissionPolicy whose binding failed under failurePolicy Fail (the generic policy
 * dispatcher's PolicyError): its mutation, matchConditions or params could not be had.
 */
export function mutatingPolicyDenied(policy: string, binding: string, message: string): string {
  return `policy '${policy}' with binding '${binding}' denied request: ${message}`;
}

/** A JSONPatch mutation's result that does not apply to the object. */
export function jsonPatchError(message: string): string {
  return `JSON Patch: ${message}`;
}

/** An ApplyConfiguration mutation's result that cannot be merged into the object. */
export function applyConfigurationError(message: string): string {
  return message.startsWith('may not mutate atomic')
    ? `error applying patch: invalid ApplyConfiguration: ${message}`
    : `error applying patch: ${message}`;
}
