/** The operations app (plain HTTP): /metrics, /healthz, /readyz, /chain. Never on the request path. */
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
}

export function createOpsApp(deps: OpsAppDeps): Koa {
  const app = new Koa();
  app.silent = true;
  app.use(async (ctx) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.status = 405;
      return;
    }
    switch (ctx.path) {
      case '/metrics':
        ctx.type = deps.registry.contentType;
        ctx.body = await deps.registry.metrics();
        return;
      case '/healthz':
        ctx.type = 'text/plain';
        ctx.body = 'ok';
        return;
      case '/readyz': {
        const checks = deps.checks.map((c) => ({
          name: c.name,
          ready: c.ready(),
          detail: c.ready() ? undefined : c.detail?.(),
        }));
        const ready = checks.every((c) => c.ready);
        ctx.status = ready ? 200 : 503;
        if (ctx.query.verbose !== undefined) ctx.body = { ready, checks };
        else {
          ctx.type = 'text/plain';
          ctx.body = ready
            ? 'ok'
            : `not ready: ${checks
                .filter((c) => !c.ready)
                .map((c) => `${c.name}${c.detail ? ` (${c.detail})` : ''}`)
                .join(', ')}`;
        }
        return;
      }
      case '/chain':
        ctx.body = deps.chain();
        return;
      default:
        ctx.status = 404;
        ctx.body = { error: `not found; try /metrics, /healthz, /readyz, /chain` };
    }
  });
  return app;
}
