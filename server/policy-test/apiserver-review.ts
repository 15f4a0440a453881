/**
 * A request reviewed as the apiserver calls the gateway's webhooks: on one route, or on both phases (`all`):
 * the mutate phase, its patch applied to the object, then the validate phase on the object as mutated (not
 * called when the mutate phase refused). What `review` prints and what `test` checks a case against.
 */
import type { AdmissionRequest, KubeObject } from '../admission/types.js';
import type { ReviewResult, Reviewer } from '../dispatch/reviewer.js';
import { selectionOf, type Route } from '../http/routes.js';
import { applyPatchInPlace } from '../patch/apply.js';

export interface ApiserverReview {
  /** The mutate phase's result, when a mutate route was called. */
  readonly mutate?: ReviewResult;
  /** The validate phase's result, when a validate route was called. */
  readonly validate?: ReviewResult;
  /** The object as the last phase saw it: the request's, with the mutate phase's patch applied. */
  readonly object: KubeObject | null | undefined;
  readonly allowed: boolean;
}

export async function reviewAsApiserver(
  reviewer: Reviewer,
  request: AdmissionRequest,
  route: 'all' | Route,
): Promise<ApiserverReview> {
  const phases = route === 'all' ? (['mutate', 'validate'] as const) : [route];
  let object = request.object;
  let mutate: ReviewResult | undefined;
  let validate: ReviewResult | undefined;
  for (const phase of phases) {
    const result = await reviewer.review(
      object === request.object ? request : { ...request, object },
      selectionOf(phase),
    );
    if (phase.startsWith('mutate')) {
      mutate = result;
      // The apiserver validates the object as mutated; do the same.
      if (object && result.decision.patch) {
        object = structuredClone(object);
        applyPatchInPlace(object, result.decision.patch);
      }
    } else validate = result;
    if (!result.response.allowed) break;
  }
  const allowed = (mutate?.response.allowed ?? true) && (validate?.response.allowed ?? true);
  return { ...(mutate ? { mutate } : {}), ...(validate ? { validate } : {}), object, allowed };
}
