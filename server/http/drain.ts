/**
 * Graceful close of the webhook server, whose clients (kube-apiserver) keep HTTP/1.1 keep-alive pools.
 *
 * A POST the apiserver has written onto a connection that the server then closes is lost: Go's Transport
 * retries a non-idempotent request only when nothing of it was written, and client-go and the admission
 * dispatcher do not retry webhook calls, so the call fails and the webhook's failurePolicy decides. So:
 *
 *  1. stop accepting connections, but do not close idle ones yet (http.Server#close() would, racing the
 *     client's next write on them);
 *  2. every answer from now on carries `Connection: close` (`closeWhileDraining`, the webhook app's first middleware), so
 *     a busy connection ends right after its answer and the client opens its next one elsewhere;
 *  3. an idle connection gets `idleGraceMs` to carry one more request (answered, with `Connection:
 *     close`); a client under load uses it well within that, so only connections idle for the whole grace
 *     are closed by the server — the one unavoidable race of HTTP/1.1 keep-alive, now confined to clients
 *     that had not used the connection for that long;
 *  4. at `boundMs` after the start, connections still busy are cut.
 */
import type http from 'node:http';
import type https from 'node:https';
import net from 'node:net';
import type { Middleware } from 'koa';

export interface DrainOptions {
  /** From the start of the drain: connections still open then are closed, reviews in flight or not. */
  readonly boundMs: number;
  /** How long an idle keep-alive connection may still carry a request before the server closes it. */
  readonly idleGraceMs: number;
  /** Called once the bound is reached with connections still open, before they are cut. */
  readonly onBound?: (openConnections: number) => void;
}

/** A timer that can be awaited and cancelled (so a finished drain leaves no timer behind). */
function timer(ms: number): { done: Promise<void>; cancel: () => void } {
  let handle: NodeJS.Timeout | undefined;
  const done = new Promise<void>((resolve) => (handle = setTimeout(resolve, ms)));
  return { done, cancel: () => clearTimeout(handle) };
}

function openConnections(server: net.Server): Promise<number> {
  return new Promise((resolve) => server.getConnections((err, count) => resolve(err ? 0 : count)));
}

export async function drainServer(server: http.Server | https.Server, options: DrainOptions): Promise<void> {
  const bound = timer(options.boundMs);
  const grace = timer(Math.min(options.idleGraceMs, options.boundMs));
  // net.Server#close: stop listening and call back once every connection has ended, without the idle
  // sweep http.Server#close() adds.
  const closed = new Promise<'drained'>((resolve) => net.Server.prototype.close.call(server, () => resolve('drained')));
  try {
    await Promise.race([closed, grace.done]);
    server.closeIdleConnections();
    if ((await Promise.race([closed, bound.done.then(() => 'bound' as const)])) === 'drained') return;
    options.onBound?.(await openConnections(server));
    server.closeAllConnections();
  } finally {
    bound.cancel();
    grace.cancel();
  }
}

/**
 * Koa middleware: while the server drains, every answer carries `Connection: close`, so a keep-alive client
 * (the apiserver's pool) sends its next request on a new connection — to a replica that is still serving —
 * instead of writing it onto a socket about to close.
 */
export function closeWhileDraining(draining: () => boolean): Middleware {
  return async (ctx, next) => {
    await next();
    if (draining()) ctx.set('Connection', 'close');
  };
}
