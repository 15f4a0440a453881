/**
 * The ops app's guard under `server.opsAuth: kube`: every request carries `Authorization: Bearer <token>`, and
 * what the apiserver says of it (ops-access.ts) decides the answer — 401 without a token the apiserver
 * authenticates, 403 for a caller not allowed to `get` the path, 503 when the apiserver could not be asked,
 * never the route's answer unless it said yes.
 */
import type Koa from 'koa';
import { clip } from '../base/limits.js';
import type { Logger } from '../base/log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { OpsAccess } from './ops-access.js';

/** Seconds a caller refused with 503 is asked to wait before trying again. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

const BEARER = /^Bearer +(\S+) *$/i;

export interface OpsAuthDeps {
  readonly access: OpsAccess;
  readonly metrics: Pick<Metrics, 'opsAuthDecisions'>;
  readonly log: Logger;
}

function refuse(ctx: Koa.Context, status: number, error: string): void {
  ctx.status = status;
  ctx.body = { error };
}

export function opsAuthMiddleware({ access, metrics, log }: OpsAuthDeps): Koa.Middleware {
  // Logged when the apiserver stops answering and when it answers again, not once per refused request.
  let unavailable = false;
  return async (ctx, next) => {
    const token = BEARER.exec(ctx.get('authorization'))?.[1];
    if (!token) {
      metrics.opsAuthDecisions.inc({ decision: 'unauthenticated' });
      ctx.set('WWW-Authenticate', 'Bearer realm="admission-gateway"');
      return refuse(
        ctx,
        401,
        'unauthorized: send Authorization: Bearer <token> with a token the cluster authenticates',
      );
    }
    // Reads are what RBAC grants on these URLs (`get`); another method is asked as itself and routed after.
    const verb = ctx.method === 'GET' || ctx.method === 'HEAD' ? 'get' : ctx.method.toLowerCase();
    const checked = await access.check(token, ctx.path, verb);
    metrics.opsAuthDecisions.inc({ decision: checked.decision });
    if (checked.decision === 'unavailable') {
      if (!unavailable) log.warn({ err: checked.error }, 'ops access check failed: the apiserver did not answer; 503');
      unavailable = true;
      ctx.set('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
      return refuse(ctx, 503, 'cannot check access now: the apiserver did not answer; try again');
    }
    if (unavailable) log.info({}, 'ops access check: the apiserver answers again');
    unavailable = false;
    if (checked.decision === 'unauthenticated') {
      ctx.set('WWW-Authenticate', 'Bearer realm="admission-gateway", error="invalid_token"');
      return refuse(ctx, 401, 'unauthorized: the cluster does not authenticate this token');
    }
    if (checked.decision === 'forbidden') {
      log.debug({ user: checked.user, verb, path: clip(ctx.path) }, 'ops request forbidden');
      return refuse(
        ctx,
        403,
        `forbidden: user "${checked.user}" may not ${verb} this path (RBAC nonResourceURLs; README "Metrics reference")`,
      );
    }
    await next();
  };
}
