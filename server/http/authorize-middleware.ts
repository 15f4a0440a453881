/**
 * POST /authorize: a SubjectAccessReview (authorization.k8s.io v1 or v1beta1) from kube-apiserver's
 * authorization webhook, answered with the authorize chain's decision — denied with a reason, or no opinion.
 * Its body is bounded and weighed like a review's (it shares holdReview with the review routes). A body that
 * cannot be read gets 400 with what is wrong as `evaluationError`; the apiserver takes any failed call as no
 * opinion, so a broken answer never locks anyone out.
 */
import type { Middleware } from 'koa';
import { checkContentType } from '../admission/codec.js';
import { ReviewDecodeError } from '../admission/review-decode-error.js';
import {
  SAR_V1,
  SubjectAccessReviewError,
  decodeSubjectAccessReview,
  encodeSubjectAccessReview,
} from '../authorization/subject-access-review.js';
import { errorMessage } from '../base/errors.js';
import { clip } from '../base/limits.js';
import type { Authorizer } from '../dispatch/authorizer.js';
import { BudgetExceededError } from './byte-budget.js';
import { readBody } from './read-body.js';
import { endAfterRefusal } from './refused-body.js';
import { answer, type ReviewServices, type ReviewState } from './review-middleware.js';

/** Runs the SubjectAccessReview through `authorizer` and answers it. */
export function runAuthorize(authorizer: Authorizer): Middleware<ReviewState, ReviewServices> {
  return async (ctx) => {
    try {
      checkContentType(ctx.req.headers['content-type']);
      const { apiVersion, attributes } = decodeSubjectAccessReview(
        await readBody(ctx.req, ctx.maxRequestBytes, ctx.state.lease, ctx.bodyTiming),
      );
      const found = authorizer.authorize(attributes);
      const decision = found instanceof Promise ? await found : found;
      answer(
        ctx,
        200,
        encodeSubjectAccessReview(apiVersion, decision.denied ? { reason: decision.reason } : undefined),
      );
    } catch (err) {
      const { status, message, counted } = failureOf(err);
      if (counted === 'shed') ctx.metrics.shedReviews.inc({ reason: 'inflight_bytes' });
      else ctx.metrics.invalidRequests.inc({ code: counted });
      ctx.log[counted === '500' ? 'error' : 'warn'](
        { route: 'authorize', status, err: message },
        status === 200 ? 'authorization review answered with no opinion' : 'authorization review not processed',
      );
      const apiVersion = err instanceof SubjectAccessReviewError ? err.apiVersion : SAR_V1;
      const body = { apiVersion, kind: 'SubjectAccessReview', status: { allowed: false, evaluationError: message } };
      answer(ctx, status, JSON.stringify(body));
      endAfterRefusal(ctx.req, ctx.res, status);
    }
  };
}

/**
 * How a review that failed is answered. One that can never be answered is refused (400, 413, 415). Otherwise
 * (a full memory budget, an internal error) it gets no opinion at once, with HTTP 200: the apiserver retries
 * 429 and 5xx answers for seconds, and then takes the call as no opinion anyway.
 */
function failureOf(err: unknown): { status: number; message: string; counted: string } {
  if (err instanceof SubjectAccessReviewError) return { status: 400, message: err.message, counted: '400' };
  if (err instanceof ReviewDecodeError)
    return { status: err.status, message: err.message, counted: String(err.status) };
  if (err instanceof BudgetExceededError) {
    return err.never
      ? { status: 413, message: err.message, counted: '413' }
      : { status: 200, message: err.message, counted: 'shed' };
  }
  return { status: 200, message: `internal error: ${clip(errorMessage(err))}`, counted: '500' };
}
