/**
 * The webhook HTTPS app: POST /mutate, /validate and their /fail, /ignore splits. Deliberately lean
 * (direct path lookup, a small body reader) because it sits in the path of every write in a cluster.
 * Every answer is an AdmissionReview: bad input gets 400/413/415 with the request's uid when it could
 * be read; an unexpected internal error gets HTTP 500 so the apiserver applies the webhook's own
 * failurePolicy — and never takes the process down.
 */
import Koa from 'koa';
import { checkContentType, decodeReview, encodeReview } from '../admission/codec.js';
import { errored } from '../admission/responses.js';
import { ADMISSION_V1, type AdmissionApiVersion } from '../admission/types.js';
import { ROUTES, type Route } from '../chain/chain.js';
import type { BindableLogger, Reviewer } from '../chain/reviewer.js';
import { ReviewDecodeError, errorMessage } from '../errors.js';
import type { Metrics } from '../metrics/metrics.js';
import { parseTimeoutParam } from '../admission/timeout.js';
import { readBody } from './read-body.js';

export interface WebhookAppDeps {
  readonly reviewer: Reviewer;
  readonly metrics: Metrics;
  readonly log: BindableLogger;
  readonly maxRequestBytes: number;
}

const PATHS: ReadonlyMap<string, Route> = new Map(ROUTES.map((route) => [`/${route}`, route]));

function timeoutParam(querystring: string): number | undefined {
  if (!querystring) return undefined;
  return parseTimeoutParam(new URLSearchParams(querystring).get('timeout'));
}

export function createWebhookApp(deps: WebhookAppDeps): Koa {
  const { reviewer, metrics, log, maxRequestBytes } = deps;
  const app = new Koa();
  // Koa would log every thrown error itself; the gateway answers in protocol and logs once.
  app.silent = true;

  app.use(async (ctx) => {
    const route = PATHS.get(ctx.path);
    if (!route) {
      ctx.status = 404;
      ctx.body = { error: `no webhook at ${ctx.path}; routes: ${[...PATHS.keys()].join(', ')}` };
      return;
    }
    if (ctx.method !== 'POST') {
      ctx.status = 405;
      ctx.set('Allow', 'POST');
      ctx.body = { error: `${ctx.method} ${ctx.path}: expected POST with an AdmissionReview` };
      return;
    }

    let uid = '';
    let apiVersion: AdmissionApiVersion = ADMISSION_V1;
    metrics.inflight.inc();
    try {
      checkContentType(ctx.get('content-type') || undefined);
      const decoded = decodeReview(await readBody(ctx.req, maxRequestBytes));
      uid = decoded.request.uid;
      apiVersion = decoded.apiVersion;
      const { response } = await reviewer.review(decoded.request, route, timeoutParam(ctx.querystring));
      ctx.type = 'application/json';
      ctx.body = encodeReview(apiVersion, response);
    } catch (err) {
      const decodeError = err instanceof ReviewDecodeError ? err : undefined;
      const status = decodeError?.status ?? 500;
      const message = decodeError ? decodeError.message : `internal error: ${errorMessage(err)}`;
      if (decodeError) {
        uid ||= decodeError.uid;
        if (decodeError.apiVersion) apiVersion = decodeError.apiVersion as AdmissionApiVersion;
      }
      metrics.invalidRequests.inc({ code: String(status) });
      log[status === 500 ? 'error' : 'warn']({ uid, route, status, err: message }, 'review not processed');
      ctx.status = status;
      ctx.type = 'application/json';
      // After refusing an oversized or unread body the connection cannot be reused safely.
      if (status === 413) ctx.set('Connection', 'close');
      ctx.body = encodeReview(apiVersion, errored(uid, status, message));
    } finally {
      metrics.inflight.dec();
    }
  });
  return app;
}
