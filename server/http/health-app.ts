/**
 * The probes' app (plain HTTP, its own port: server.healthPort): /healthz and /readyz, nothing else. The
 * kubelet must reach them whatever other clients do, so they are served apart from the ops port, whose
 * connections anyone who can reach it may fill, on a listener with bounds of its own (HEALTH_CONNECTIONS).
 */
import Router, { type RouterContext } from '@koa/router';
import Koa from 'koa';

/** One readiness condition, e.g. config loaded, certificate loaded, provider source synced. */
export interface ReadinessCheck {
  readonly name: string;
  ready(): boolean;
  /** Why it is not ready. */
  detail?(): string | undefined;
}

/**
 * Connections the health listener keeps, in all and from one address. The kubelet opens one connection per
 * probe and closes it, so a few from its address are enough; a client holding a few more cannot take the
 * kubelet's, and filling the listener takes many addresses.
 */
export const HEALTH_CONNECTIONS = { max: 32, perAddress: 4 } as const;

export function createHealthApp(checks: readonly ReadinessCheck[]): Koa {
  const app = new Koa();
  app.silent = true;
  const router = new Router();

  router.get('/healthz', (ctx) => {
    ctx.type = 'text/plain';
    ctx.body = 'ok';
  });

  router.get('/readyz', (ctx) => {
    const results = checks.map((c) => {
      const ready = c.ready();
      return { name: c.name, ready, detail: ready ? undefined : c.detail?.() };
    });
    const ready = results.every((c) => c.ready);
    ctx.status = ready ? 200 : 503;
    if (ctx.query.verbose !== undefined) {
      ctx.body = { ready, checks: results };
      return;
    }
    ctx.type = 'text/plain';
    ctx.body = ready
      ? 'ok'
      : `not ready: ${results
          .filter((c) => !c.ready)
          .map((c) => `${c.name}${c.detail ? ` (${c.detail})` : ''}`)
          .join(', ')}`;
  });

  app.use(router.routes());
  app.use(router.allowedMethods());
  app.use((ctx: RouterContext) => {
    // A known path asked with another method stays unanswered here: allowedMethods makes it a 405 with Allow.
    if (ctx.matched?.length) return;
    ctx.status = 404;
    ctx.body = { error: 'not found; try /healthz, /readyz' };
  });
  return app;
}
