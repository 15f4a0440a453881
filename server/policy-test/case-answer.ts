/**
 * What the apiserver makes of the gateway's answers to one request, which is what a case's expectations are
 * about: refused when a phase refused (with that phase's message and code), the warnings of both phases as
 * kubectl shows them, their audit annotations, the mutate phase's patch and the object it makes.
 */
import type { JsonPatchOperation } from '../admission/types.js';
import type { ApiserverReview } from './apiserver-review.js';

export interface CaseAnswer {
  readonly allowed: boolean;
  /** A refusal's HTTP code and message. */
  readonly code?: number;
  readonly message?: string;
  readonly warnings: readonly string[];
  readonly auditAnnotations: Readonly<Record<string, string>>;
  readonly patch: readonly JsonPatchOperation[];
  /** The object after the patch (the request's when nothing patched it). */
  readonly patched: unknown;
}

export function caseAnswerOf(reviewed: ApiserverReview): CaseAnswer {
  const responses = [reviewed.mutate?.response, reviewed.validate?.response].filter((r) => r !== undefined);
  const refusal = responses.find((r) => !r.allowed);
  return {
    allowed: reviewed.allowed,
    ...(refusal?.status?.code !== undefined ? { code: refusal.status.code } : {}),
    ...(refusal ? { message: refusal.status?.message ?? '' } : {}),
    warnings: responses.flatMap((r) => r.warnings ?? []),
    auditAnnotations: Object.assign({}, ...responses.map((r) => r.auditAnnotations ?? {})) as Record<string, string>,
    patch: reviewed.mutate?.decision.patch ?? [],
    patched: reviewed.object,
  };
}
