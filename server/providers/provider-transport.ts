/**
 * HTTPS/1.1 to one provider: an undici Pool of keep-alive connections (ProviderConnection), each request
 * a ProviderExchange, and CallSlots bounding how many calls it holds and how many wait. TLS trusts only
 * the provider's CA bundle when one is given, presents a client certificate for mTLS, and sends SNI for a
 * host name (none for an IP address, which is checked against the certificate's IP SANs). Given a dispatcher
 * (`admission-gateway test` passes undici's MockAgent), the calls go through it instead, bounded the same way.
 */
import net from 'node:net';
import { Pool, type Dispatcher } from 'undici';
import { CallSlots } from './call-slots.js';
import { ProviderConnection } from './provider-connection.js';
import { ProviderExchange, abortedError, type ExchangeResult } from './provider-exchange.js';

/**
 * Bytes of header fields (names and values) a response head may have; undici fails the request past it.
 * A provider's head is a handful of fields. The bound also caps what a head sent in tiny pieces costs:
 * undici joins the pieces of one field by copying (docs/decisions.md).
 */
export const MAX_RESPONSE_HEAD_BYTES = 16 * 1024;
/** An idle keep-alive connection is closed after this long (sooner when the provider says it closes sooner). */
const IDLE_TIMEOUT_MS = 30_000;

export interface TransportOptions {
  readonly url: URL;
  /** PEM CA bundle; absent = the system's trust store. */
  readonly ca?: string;
  readonly clientCert?: { readonly cert: string; readonly key: string };
  readonly maxConnections: number;
  /** Calls that may wait for a connection; any beyond fail at once. */
  readonly maxQueued: number;
  /** Largest body read for a 200. */
  readonly maxBodyBytes: number;
  /**
   * Sends the calls through this dispatcher instead of a Pool of the transport's own; its owner closes it. The
   * seam by which `admission-gateway test` answers providers without a network (an undici MockAgent).
   */
  readonly dispatcher?: Dispatcher;
}

export interface TransportRequest {
  readonly method: 'GET' | 'POST';
  /** The request target, already visible ASCII. */
  readonly path: string;
  /** Header names and values, alternating. */
  readonly headers: readonly string[];
  readonly body?: string | Uint8Array;
  /** Aborts the call (its deadline). */
  readonly signal: AbortSignal;
  /** undici's own headers and body timeouts: a backstop behind the signal. */
  readonly backstopMs: number;
}

export interface ProviderTransport {
  request(request: TransportRequest): Promise<ExchangeResult>;
  /** Stops taking calls, lets those in flight or waiting finish, and closes every connection. */
  close(): Promise<void>;
}

function closedError(): Error {
  const err = new Error('the client is closed') as Error & { code: string };
  err.code = 'ERR_POOL_CLOSED';
  return err;
}

function createPool(o: TransportOptions): Pool {
  const host = o.url.hostname.replace(/^\[(.*)\]$/, '$1');
  return new Pool(o.url.origin, {
    connections: o.maxConnections,
    pipelining: 1,
    allowH2: false,
    connect: {
      rejectUnauthorized: true,
      ...(net.isIP(host) ? {} : { servername: host }),
      ...(o.ca !== undefined ? { ca: o.ca } : {}),
      ...(o.clientCert ? { cert: o.clientCert.cert, key: o.clientCert.key } : {}),
    },
    keepAliveTimeout: IDLE_TIMEOUT_MS,
    keepAliveMaxTimeout: IDLE_TIMEOUT_MS,
    maxHeaderSize: MAX_RESPONSE_HEAD_BYTES,
    factory: (origin, options) => new ProviderConnection(origin, options),
  });
}

export function createProviderTransport(o: TransportOptions): ProviderTransport {
  const pool = o.dispatcher ?? createPool(o);
  const origin = o.url.origin;
  const slots = new CallSlots(o.maxConnections, o.maxQueued);
  const release = () => slots.release();
  let closed: Promise<void> | undefined;

  /** Sends `request` in the slot the caller holds. */
  function send(request: TransportRequest): Promise<ExchangeResult> {
    if (request.signal.aborted) {
      release();
      return Promise.reject(abortedError());
    }
    return new Promise((resolve, reject) => {
      const dispatch = {
        // A Pool has its origin; a dispatcher given in its place (an Agent, a MockAgent) is told it.
        origin,
        method: request.method,
        path: request.path,
        headers: request.headers as string[],
        body: request.body ?? null,
        headersTimeout: request.backstopMs,
        bodyTimeout: request.backstopMs,
      };
      new ProviderExchange(dispatch, request.signal, o.maxBodyBytes, { resolve, reject, finished: release }).start(
        pool,
      );
    });
  }

  return {
    request(request) {
      if (closed) return Promise.reject(closedError());
      if (slots.tryAcquire()) return send(request);
      return slots.acquire(request.signal, abortedError).then(() => send(request));
    },
    close() {
      closed ??= slots.drained().then(() => (o.dispatcher ? undefined : pool.close()));
      return closed;
    },
  };
}
