/**
 * A `policy` chain entry's body as compiled when the configuration loads: the field names of the apiserver's
 * ValidatingAdmissionPolicy and MutatingAdmissionPolicy, each expression already a program (server/cel/). Its
 * matchConditions are every chain entry's (config/match-conditions.ts), which the dispatchers evaluate.
 */
import type { CelProgram } from '../cel/index.js';

/** `validations[].reason`: the status reason the refusal carries, as the apiserver's. */
export type ValidationReason = 'Unauthorized' | 'Forbidden' | 'Invalid' | 'RequestEntityTooLarge';

export const VALIDATION_REASONS: readonly ValidationReason[] = [
  'Unauthorized',
  'Forbidden',
  'Invalid',
  'RequestEntityTooLarge',
];

/** The HTTP code of each reason (metav1.StatusReason's). */
export const REASON_CODES: Readonly<Record<ValidationReason, number>> = {
  Unauthorized: 401,
  Forbidden: 403,
  Invalid: 422,
  RequestEntityTooLarge: 413,
};

export interface PolicyVariable {
  readonly name: string;
  readonly program: CelProgram;
}

export interface PolicyValidation {
  readonly program: CelProgram;
  readonly message?: string;
  readonly messageProgram?: CelProgram;
  /** Default Invalid, as the apiserver's. */
  readonly reason: ValidationReason;
}

export interface PolicyAuditAnnotation {
  readonly key: string;
  readonly program: CelProgram;
}

/** `mutations[].patchType`: how the expression's result changes the object. */
export type PatchType = 'JSONPatch' | 'ApplyConfiguration';

export const PATCH_TYPES: readonly PatchType[] = ['JSONPatch', 'ApplyConfiguration'];

/** One of `mutations`: a `jsonPatch` or an `applyConfiguration` expression. */
export interface PolicyMutation {
  readonly patchType: PatchType;
  readonly program: CelProgram;
}

export interface PolicySpec {
  readonly variables: readonly PolicyVariable[];
  readonly validations: readonly PolicyValidation[];
  readonly auditAnnotations: readonly PolicyAuditAnnotation[];
  /** Run in the mutate phase, in order; absent or empty: the entry has no mutate step. */
  readonly mutations?: readonly PolicyMutation[];
}

/** Whether any of the spec's expressions (and `more`, a native policy's own conditions) reads `namespaceObject`. */
export function specReadsNamespaceObject(
  spec: PolicySpec,
  more: readonly { readonly program: CelProgram }[] = [],
): boolean {
  const reads = (items: readonly { readonly program: CelProgram }[] | undefined) =>
    items?.some((item) => item.program.readsNamespaceObject) ?? false;
  return (
    reads(spec.variables) ||
    reads(spec.validations) ||
    spec.validations.some((v) => v.messageProgram?.readsNamespaceObject === true) ||
    reads(spec.auditAnnotations) ||
    reads(spec.mutations) ||
    reads(more)
  );
}
