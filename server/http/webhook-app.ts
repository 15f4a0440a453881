/**
 * The webhook HTTPS app: POST /mutate, /validate and their /fail, /ignore splits. Deliberately lean
 * (direct path lookup, a small body reader) because it sits in the path of every write in a cluster.
 * Every answer is an AdmissionReview: bad input gets 400/413/415 with the request's uid when it could
 * be read; a review the memory budget cannot hold now gets 429 (the apiserver retries it); an unexpected
 * internal error gets HTTP 500 so the apiserver applies the webhook's own failurePolicy — and never takes
 * the process down.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import Koa from 'koa';
import { checkContentType, decodeReview, encodeReview } from '../admission/codec.js';
import { errored } from '../admission/responses.js';
import { ADMISSION_V1, type AdmissionApiVersion } from '../admission/types.js';
import { ROUTES, type Route } from '../chain/chain.js';
import type { BindableLogger, Reviewer } from '../chain/reviewer.js';
import { ReviewDecodeError, errorMessage } from '../errors.js';
import { clip } from '../limits.js';
import type { Metrics } from '../metrics/metrics.js';
import { parseTimeoutParam } from '../admission/timeout.js';
import { BudgetExceededError, WEIGHT_PER_CONTAINER, type ByteBudget, type ByteLease } from './byte-budget.js';
import { readBody } from './read-body.js';

export interface WebhookAppDeps {
  readonly reviewer: Reviewer;
  readonly metrics: Metrics;
  readonly log: BindableLogger;
  readonly maxRequestBytes: number;
  /** Memory reviews may hold at once, as weighed (byte-budget.ts): past it a review is shed with 429. */
  readonly budget: ByteBudget;
  /**
   * True once the gateway is shutting down: every answer then carries `Connection: close`, so a keep-alive
   * client (the apiserver's pool) sends its next review on a new connection — to a replica that is still
   * serving — instead of writing it onto a socket about to close (see drain.ts).
   */
  readonly draining?: () => boolean;
}

const PATHS: ReadonlyMap<string, Route> = new Map(ROUTES.map((route) => [`/${route}`, route]));

const TIMEOUT_PARAM = /(?:^|&)timeout=([^&]*)/;

/** `?timeout=` as the apiserver sends it (URLSearchParams would cost more than the rest of the routing). */
function timeoutParam(querystring: string): number | undefined {
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

/** An answer to one review request. */
interface Answer {
  readonly status: number;
  readonly body: string | Buffer;
  /** After refusing an oversized or unread body the connection cannot be reused safely. */
  readonly close?: boolean;
  /** Seconds after which the client may try again (a shed review). */
  readonly retryAfter?: number;
}

/**
 * client-go, which the apiserver calls webhooks with, retries a 429 carrying Retry-After after that many
 * seconds (up to ten times, within the webhook's timeout): a shed review comes back once memory is free.
 */
const SHED_RETRY_AFTER_SECONDS = 1;

/**
 * From this many objects and arrays a review takes turns with other work (ReviewOptions.large): a Pod of a
 * few hundred containers takes a millisecond or two and need not.
 */
const LARGE_REVIEW_CONTAINERS = 4096;

/** Decode → review → encode, always in protocol; never throws. */
async function answerReview(
  deps: WebhookAppDeps,
  req: IncomingMessage,
  route: Route,
  querystring: string,
  lease: ByteLease,
): Promise<Answer> {
  const { reviewer, metrics, log, maxRequestBytes } = deps;
  let uid = '';
  let apiVersion: AdmissionApiVersion = ADMISSION_V1;
  metrics.inflight.inc();
  try {
    checkContentType(req.headers['content-type']);
    const decoded = decodeReview(await readBody(req, maxRequestBytes, lease));
    uid = decoded.request.uid;
    apiVersion = decoded.apiVersion;
    lease.take(decoded.containers * WEIGHT_PER_CONTAINER);
    const large = decoded.containers > LARGE_REVIEW_CONTAINERS;
    // Parsing it was a long synchronous stretch already: let what waited meanwhile run first.
    if (large) await new Promise((resolve) => setImmediate(resolve));
    const { response } = await reviewer.review(decoded.request, route, {
      timeoutMs: timeoutParam(querystring),
      large,
    });
    const body = encodeReview(apiVersion, response);
    lease.force(body.length);
    return { status: 200, body };
  } catch (err) {
    if (err instanceof BudgetExceededError && !err.never) {
      metrics.shedReviews.inc({ reason: 'inflight_bytes' });
      log.warn(
        { uid, route, weight: err.weight, inflightBytes: deps.budget.inUse, limit: deps.budget.limit },
        'review shed: in-flight memory budget full (answered 429, the apiserver retries)',
      );
      // Shed before its body is read, a review's uid is unknown: the apiserver does not read a 429's body.
      return {
        status: 429,
        body: encodeReview(apiVersion, errored(uid, 429, err.message)),
        retryAfter: SHED_RETRY_AFTER_SECONDS,
      };
    }
    const decodeError = err instanceof ReviewDecodeError ? err : undefined;
    // A review too heavy ever to fit is refused like one over maxRequestBytes.
    const status = decodeError?.status ?? (err instanceof BudgetExceededError ? 413 : 500);
    const message =
      decodeError || err instanceof BudgetExceededError
        ? (err as Error).message
        : `internal error: ${clip(errorMessage(err))}`;
    if (decodeError) {
      uid ||= decodeError.uid;
      if (decodeError.apiVersion) apiVersion = decodeError.apiVersion;
    }
    metrics.invalidRequests.inc({ code: String(status) });
    log[status === 500 ? 'error' : 'warn']({ uid, route, status, err: message }, 'review not processed');
    return { status, body: encodeReview(apiVersion, errored(uid, status, message)), close: status === 413 };
  } finally {
    metrics.inflight.dec();
  }
}

/** The Koa app for everything but a review: unknown paths (404) and wrong methods (405). */
function createFallbackApp(): Koa {
  const app = new Koa();
  app.silent = true;
  app.use((ctx) => {
    if (!PATHS.has(ctx.path)) {
      ctx.status = 404;
      ctx.body = { error: `no webhook at ${ctx.path}; routes: ${[...PATHS.keys()].join(', ')}` };
      return;
    }
    ctx.status = 405;
    ctx.set('Allow', 'POST');
    ctx.body = { error: `${ctx.method} ${ctx.path}: expected POST with an AdmissionReview` };
  });
  return app;
}

/**
 * The webhook server's request listener: `POST /mutate…` and `/validate…` go straight to the review
 * (no Koa context, router or body parser on the path of every write in the cluster); anything else —
 * probes of wrong paths or methods — goes through the Koa app.
 */
export function createWebhookListener(deps: WebhookAppDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const fallback = createFallbackApp().callback();
  return (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const route = req.method === 'POST' ? PATHS.get(q < 0 ? url : url.slice(0, q)) : undefined;
    if (!route) {
      if (deps.draining?.()) res.setHeader('connection', 'close');
      void fallback(req, res);
      return;
    }
    const lease = deps.budget.lease();
    // The request's bytes are free again once its answer is written (or the connection is gone) and the
    // review is over: an apiserver that gave up does not stop the review from holding its object.
    let holders = 2;
    const letGo = () => {
      if (--holders === 0) lease.release();
    };
    res.on('close', letGo);
    // answerReview never rejects. The answer is written from setImmediate, after the poll phase, not as soon
    // as it is ready: under load the answers of one event-loop turn then go out together, and clients' next
    // requests arrive together, so each review costs fewer wake-ups and syscalls — about a third less CPU
    // per review for an empty chain on the bench (bench/README.md). At low load it adds microseconds.
    void answerReview(deps, req, route, q < 0 ? '' : url.slice(q + 1), lease).then((answer) =>
      setImmediate(() => {
        letGo();
        try {
          res.writeHead(answer.status, {
            'content-type': 'application/json; charset=utf-8',
            'content-length': typeof answer.body === 'string' ? Buffer.byteLength(answer.body) : answer.body.length,
            ...(answer.close || deps.draining?.() ? { connection: 'close' } : {}),
            ...(answer.retryAfter ? { 'retry-after': String(answer.retryAfter) } : {}),
          });
          res.end(answer.body);
        } catch (err) {
          // Writing to a socket that broke meanwhile.
          deps.log.warn({ err: errorMessage(err) }, 'could not send a review answer');
          res.destroy();
        }
      }),
    );
  };
}
