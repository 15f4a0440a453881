/**
 * The operations app: /metrics, /chain, /openapi/v3, /explain. Never on the request path; the probes have their
 * own port (health-app.ts). With `server.opsAuth: kube` it is served over HTTPS behind a guard (ops-auth.ts) that
 * answers every request the apiserver does not allow before any route sees it.
 */
import Router, { type RouterContext } from '@koa/router';
import Koa from 'koa';
import type { Registry } from 'prom-client';
import { renderTrace } from '../explain/render-trace.js';
import type { TraceBuffer } from '../explain/trace-buffer.js';

/** Recent reviews `GET /explain` lists at most. */
const MAX_LISTED = 1000;
/** A W3C trace id: 32 lowercase hex digits. */
const TRACE_ID = /^[0-9a-f]{32}$/;

export interface OpsAppDeps {
  readonly registry: Registry;
  readonly chain: () => object;
  /** The OpenAPI document of the provider protocol; asked for only when someone reads it. */
  readonly openapi: () => Promise<object>;
  /** The decision traces of recent reviews; absent when none are kept (explain.bufferSize 0). */
  readonly traces?: Pick<TraceBuffer, 'get' | 'withTraceId' | 'recent' | 'size' | 'keep' | 'bytes' | 'maxBytes'>;
  /** Runs before every route, unknown paths included (ops-auth.ts). */
  readonly guard?: Koa.Middleware;
}

export function createOpsApp(deps: OpsAppDeps): Koa {
  const app = new Koa();
  app.silent = true;
  if (deps.guard) app.use(deps.guard);
  const router = new Router();

  router.get('/metrics', async (ctx) => {
    ctx.type = deps.registry.contentType;
    ctx.body = await deps.registry.metrics();
  });

  router.get('/chain', (ctx) => {
    ctx.body = deps.chain();
  });

  router.get('/openapi/v3', async (ctx) => {
    ctx.body = await deps.openapi();
  });

  router.get('/explain', (ctx) => {
    const limit = Math.min(Math.max(Number.parseInt(String(ctx.query.limit ?? '100'), 10) || 100, 1), MAX_LISTED);
    const { traces } = deps;
    ctx.body = {
      size: traces?.size ?? 0,
      bytes: traces?.bytes ?? 0,
      maxBytes: traces?.maxBytes ?? 0,
      reviews: traces?.recent(limit, ctx.query.denied === 'true') ?? [],
    };
  });

  // A review's uid (the decision-trace audit annotation names it), or a trace id for every review of that trace.
  router.get('/explain/:id', (ctx) => {
    const id = ctx.params.id!;
    // A trace is built each time it is read: looked up once.
    const byUid = deps.traces?.get(id);
    const found = !byUid && TRACE_ID.test(id) ? deps.traces?.withTraceId(id) : undefined;
    const traces = found ?? (byUid ? [byUid] : []);
    if (traces.length === 0) {
      ctx.status = 404;
      ctx.body = {
        error: deps.traces
          ? `no trace of "${id}": not a recent review's uid or trace id (the last ${deps.traces.size}${
              deps.traces.keep === 'notable' ? ' refused, warned or annotated reviews' : ''
            } are kept, fewer when their traces would hold more than explain.maxBytes)`
          : 'no traces are kept: explain.bufferSize is 0',
      };
      return;
    }
    if (ctx.query.format === 'text') {
      ctx.type = 'text/plain';
      ctx.body = `${traces.map(renderTrace).join('\n\n')}\n`;
      return;
    }
    ctx.body = found ? { traceId: id, reviews: traces } : traces[0];
  });

  app.use(router.routes());
  app.use(router.allowedMethods());
  app.use((ctx: RouterContext) => {
    // A known path asked with another method stays unanswered here: allowedMethods makes it a 405 with Allow.
    if (ctx.matched?.length) return;
    ctx.status = 404;
    ctx.body = { error: 'not found; try /metrics, /chain, /openapi/v3, /explain (probes: server.healthPort)' };
  });
  return app;
}
