/**
 * The middleware of a review route (POST /mutate, /validate and their splits), in the order they run:
 * answers written together → hold the review's memory → answer in protocol → read the review → run it.
 * Every answer is an AdmissionReview: bad input gets 400/413/415 with the request's uid when it could be
 * read; a review the memory budget cannot hold now gets 429 (the apiserver retries it); an unexpected
 * internal error gets HTTP 500 so the apiserver applies the webhook's own failurePolicy.
 */
import type { Middleware, ParameterizedContext } from 'koa';
import { checkContentType, decodeReview, encodeReview, type DecodedReview } from '../admission/codec.js';
import { errored } from '../admission/responses.js';
import { parseTimeoutParam } from '../admission/timeout.js';
import { ADMISSION_V1, type AdmissionApiVersion, type AdmissionResponse } from '../admission/types.js';
import type { BindableLogger } from '../base/log.js';
import type { Reviewer } from '../dispatch/reviewer.js';
import type { StepSelection } from '../chain/chain.js';
import { ReviewDecodeError } from '../admission/review-decode-error.js';
import { errorMessage } from '../base/errors.js';
import { clip } from '../base/limits.js';
import type { Metrics } from '../metrics/metrics.js';
import { BudgetExceededError, WEIGHT_PER_CONTAINER, type ByteBudget, type ByteLease } from './byte-budget.js';
import type { BodyTiming } from './body-arrival.js';
import { readBodyBytes } from './read-body.js';
import { endAfterRefusal } from './refused-body.js';
import { selectionOf, type Route } from './routes.js';

/** What the webhook app's middleware reach through `ctx` (set once on `app.context`). */
export interface ReviewServices {
  readonly reviewer: Reviewer;
  readonly metrics: Metrics;
  readonly log: BindableLogger;
  /** Memory reviews may hold at once, as weighed (byte-budget.ts). */
  readonly budget: ByteBudget;
  readonly maxRequestBytes: number;
  /** How fast a body must arrive. */
  readonly bodyTiming: BodyTiming;
  /** Where reviews too large for the event loop run instead (server/lane/); none: every review runs here. */
  readonly lane?: ReviewLane;
}

/** A lane that runs the reviews it takes elsewhere than on the event loop, and answers them itself. */
export interface ReviewLane {
  /** Whether it takes the review of a body this long (in bytes). */
  takes(bodyBytes: number): boolean;
  /**
   * Decodes, runs and answers the review of `body` (its bytes, which the lane may take over: the caller keeps
   * nothing of them); throws as readReview and runReview do.
   */
  run(ctx: ReviewKoaContext, body: Buffer): Promise<void>;
}

/** One review request's state (`ctx.state`), filled in as its middleware run. */
export interface ReviewState {
  /** The request's share of the byte budget, held until its answer is written and the review is over. */
  lease: ByteLease;
  /** The decoded review, once its body has been read. */
  review?: DecodedReview;
  /** What an answer echoes of a review decoded elsewhere (a lane), once known. */
  echo?: { readonly uid: string; readonly apiVersion: AdmissionApiVersion };
}

/** The Koa context of one review request (the review's own context is dispatch/review-context.ts). */
export type ReviewKoaContext = ParameterizedContext<ReviewState, ReviewServices>;
export type ReviewMiddleware = Middleware<ReviewState, ReviewServices>;

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * client-go, which the apiserver calls webhooks with, retries a 429 carrying Retry-After after that many
 * seconds (up to ten times, within the webhook's timeout): a shed review comes back once memory is free.
 */
export const SHED_RETRY_AFTER_SECONDS = 1;

/**
 * From this many objects and arrays a review takes turns with other work (ReviewOptions.large): a Pod of a
 * few hundred containers takes a millisecond or two and need not.
 */
const LARGE_REVIEW_CONTAINERS = 4096;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Answers are written from the check phase of the event loop, not as soon as they are ready: under load the
 * answers of one turn then go out together, and the clients' next requests arrive together, so each review
 * costs fewer wake-ups and syscalls (docs/decisions.md, "Answers written together").
 */
export const writeAnswersTogether: ReviewMiddleware = async (_ctx, next) => {
  await next();
  await nextTurn();
};

/**
 * Counts the review in flight and gives it a lease of the byte budget. The lease is given back once the
 * answer has been written (or the connection is gone) and the review is over: an apiserver that gave up
 * does not stop the review from holding its object.
 */
export const holdReview: ReviewMiddleware = async (ctx, next) => {
  const lease = ctx.budget.lease();
  ctx.state.lease = lease;
  let holders = 2;
  const letGo = () => {
    if (--holders === 0) lease.release();
  };
  ctx.res.on('close', letGo);
  ctx.metrics.inflight.inc();
  try {
    await next();
  } finally {
    ctx.metrics.inflight.dec();
    letGo();
  }
};

/** Turns whatever the review's middleware throw into an AdmissionReview answer. */
export const answerInProtocol: ReviewMiddleware = async (ctx, next) => {
  try {
    await next();
  } catch (err) {
    answerError(ctx, err);
  }
};

/** Content-Type, body (bounded by maxRequestBytes and the byte budget), decode, and the review's weight. */
export const readReview: ReviewMiddleware = async (ctx, next) => {
  checkContentType(ctx.req.headers['content-type']);
  const bytes = await readBodyBytes(ctx.req, ctx.maxRequestBytes, ctx.state.lease, ctx.bodyTiming);
  // A large body goes to the lane as bytes: the event loop never makes a string of it.
  if (ctx.lane?.takes(bytes.length)) return ctx.lane.run(ctx, bytes);
  const body = bytes.toString('utf8');
  let review: DecodedReview;
  try {
    review = decodeReview(body);
    // Before the weight is taken: a shed review is answered with its uid.
    ctx.state.review = review;
    ctx.state.lease.take(review.containers * WEIGHT_PER_CONTAINER);
  } catch (err) {
    // Refused (shed, or unreadable): its body is let go now, not once the answer has been written, or large
    // bodies arriving meanwhile are shed for bytes no review needs any more (and, in turn, every one of them).
    ctx.state.lease.release();
    throw err;
  }
  // Parsing a large review was a long synchronous stretch already: let what waited meanwhile run first.
  if (review.containers > LARGE_REVIEW_CONTAINERS) await nextTurn();
  await next();
};

/** Runs the decoded review through the chain for `route` and answers with its AdmissionReview. */
export function runReview(route: Route): ReviewMiddleware {
  return runReviewWith(undefined, selectionOf(route));
}

/**
 * Runs the decoded review through `selection` of `reviewer`'s chain (the app's reviewer when undefined) and
 * answers with its AdmissionReview (`present` may rewrite the response first): a provider serving one plugin per
 * path has a reviewer per path.
 */
export function runReviewWith(
  reviewer: Reviewer | undefined,
  selection: StepSelection,
  present: (response: AdmissionResponse) => AdmissionResponse = (response) => response,
): ReviewMiddleware {
  return async (ctx) => {
    const { request, apiVersion, containers } = ctx.state.review!;
    const { response } = await (reviewer ?? ctx.reviewer).review(request, selection, {
      timeoutMs: timeoutParam(ctx.querystring),
      large: containers > LARGE_REVIEW_CONTAINERS,
      incoming: ctx.req.headers,
    });
    const body = encodeReview(apiVersion, present(response));
    ctx.state.lease.force(body.length);
    answer(ctx, 200, body);
  };
}

/** Writes a JSON answer. */
export function answer(ctx: ReviewKoaContext, status: number, body: string | Buffer): void {
  ctx.status = status;
  // Set as a header, not `ctx.type`, which would look the type up in the mime table on every answer.
  ctx.set('Content-Type', JSON_TYPE);
  ctx.body = body;
}

function answerError(ctx: ReviewKoaContext, err: unknown): void {
  const { metrics, log } = ctx;
  const route = ctx.path.slice(1);
  const decodeError = err instanceof ReviewDecodeError ? err : undefined;
  const { review, echo } = ctx.state;
  const uid = review?.request.uid ?? echo?.uid ?? decodeError?.uid ?? '';
  const apiVersion = review?.apiVersion ?? echo?.apiVersion ?? decodeError?.apiVersion ?? ADMISSION_V1;
  if (err instanceof BudgetExceededError && !err.never) {
    metrics.shedReviews.inc({ reason: 'inflight_bytes' });
    log.warn(
      { uid, route, weight: err.weight, inflightBytes: ctx.budget.inUse, limit: ctx.budget.limit },
      'review shed: in-flight memory budget full (answered 429, the apiserver retries)',
    );
    // Shed before its body is read, a review's uid is unknown: the apiserver does not read a 429's body.
    answer(ctx, 429, encodeReview(apiVersion, errored(uid, 429, err.message)));
    ctx.set('Retry-After', String(SHED_RETRY_AFTER_SECONDS));
    endAfterRefusal(ctx.req, ctx.res, 429);
    return;
  }
  // A review too heavy ever to fit is refused like one over maxRequestBytes.
  const status = decodeError?.status ?? (err instanceof BudgetExceededError ? 413 : 500);
  const message =
    decodeError || err instanceof BudgetExceededError
      ? (err as Error).message
      : `internal error: ${clip(errorMessage(err))}`;
  metrics.invalidRequests.inc({ code: String(status) });
  log[status === 500 ? 'error' : 'warn']({ uid, route, status, err: message }, 'review not processed');
  answer(ctx, status, encodeReview(apiVersion, errored(uid, status, message)));
  endAfterRefusal(ctx.req, ctx.res, status);
}

const TIMEOUT_PARAM = /(?:^|&)timeout=([^&]*)/;

/** `?timeout=` as the apiserver sends it (URLSearchParams would cost more than the rest of the routing). */
export function timeoutParam(querystring: string): number | undefined {
  const m = querystring ? TIMEOUT_PARAM.exec(querystring) : null;
  if (!m) return undefined;
  let value: string;
  try {
    value = decodeURIComponent(m[1]!);
  } catch {
    throw new ReviewDecodeError(`?timeout=${clip(m[1]!)} is not a valid percent-encoded query parameter`, 400);
  }
  return parseTimeoutParam(value);
}
