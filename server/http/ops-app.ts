/** The operations app (plain HTTP): /metrics, /healthz, /readyz, /chain, /openapi/v3. Never on the request path. */
import Router, { type RouterContext } from '@koa/router';
import Koa from 'koa';
import type { Registry } from 'prom-client';

/** One readiness condition, e.g. config loaded, certificate loaded, provider source synced. */
export interface ReadinessCheck {
  readonly name: string;
  ready(): boolean;
  /** Why it is not ready. */
  detail?(): string | undefined;
}

export interface OpsAppDeps {
  readonly registry: Registry;
  readonly checks: readonly ReadinessCheck[];
  readonly chain: () => object;
  /** The OpenAPI document of the provider protocol; asked for only when someone reads it. */
  readonly openapi: () => Promise<object>;
}

export function createOpsApp(deps: OpsAppDeps): Koa {
  const app = new Koa();
  app.silent = true;
  const router = new Router();

  router.get('/metrics', async (ctx) => {
    ctx.type = deps.registry.contentType;
    ctx.body = await deps.registry.metrics();
  });

  router.get('/healthz', (ctx) => {
    ctx.type = 'text/plain';
    ctx.body = 'ok';
  });

  router.get('/readyz', (ctx) => {
    const checks = deps.checks.map((c) => {
      const ready = c.ready();
      return { name: c.name, ready, detail: ready ? undefined : c.detail?.() };
    });
    const ready = checks.every((c) => c.ready);
    ctx.status = ready ? 200 : 503;
    if (ctx.query.verbose !== undefined) {
      ctx.body = { ready, checks };
      return;
    }
    ctx.type = 'text/plain';
    ctx.body = ready
      ? 'ok'
      : `not ready: ${checks
          .filter((c) => !c.ready)
          .map((c) => `${c.name}${c.detail ? ` (${c.detail})` : ''}`)
          .join(', ')}`;
  });

  router.get('/chain', (ctx) => {
    ctx.body = deps.chain();
  });

  router.get('/openapi/v3', async (ctx) => {
    ctx.body = await deps.openapi();
  });

  app.use(router.routes());
  app.use(router.allowedMethods());
  app.use((ctx: RouterContext) => {
    // A known path asked with another method stays unanswered here: allowedMethods makes it a 405 with Allow.
    if (ctx.matched?.length) return;
    ctx.status = 404;
    ctx.body = { error: `not found; try /metrics, /healthz, /readyz, /chain, /openapi/v3` };
  });
  return app;
}
