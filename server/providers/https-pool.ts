/**
 * A small pool of keep-alive HTTPS/1.1 connections to one origin, for the provider client: each request
 * is written as one pre-built buffer on a node:tls socket and its answer read by ResponseParser. At most
 * `maxConnections` sockets (one request in flight on each, no pipelining) and `maxQueued` requests
 * waiting for one. A socket goes back to the pool only after a complete response that allows reuse.
 *
 * Retry rule (Go's net/http Transport: `shouldRetryRequest` for errServerClosedIdle / a reused
 * connection that broke before any response byte, with a replayable body): a request is retried once, on a
 * freshly dialled connection, only when it failed on a REUSED socket before any byte of the response
 * arrived — the server had closed the idle connection while the request was on its way. Anything else
 * (a fresh socket, a partial answer, a timeout or an abort) is reported as it is.
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import tls, { type TLSSocket } from 'node:tls';
import { ResponseParser } from './http1-response-parser.js';

export interface HttpsPoolOptions {
  readonly host: string;
  readonly port: number;
  /** PEM CA bundle; absent = the system's trust store. */
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly maxConnections: number;
  readonly maxQueued: number;
  /** An idle socket is closed after this long without traffic. */
  readonly idleTimeoutMs: number;
}

export interface ExchangeOptions {
  readonly signal: AbortSignal;
  /** Hard limit for the whole exchange (connect, write, answer); a backstop behind `signal`. */
  readonly timeoutMs: number;
  /** Largest body kept for an accepted status. */
  readonly maxBodyBytes: number;
  /** Statuses whose body the caller reads; any other answer resolves at its head, the body discarded. */
  readonly accept: (status: number) => boolean;
}

export interface HttpResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Empty for a status the caller does not accept. */
  readonly body: Buffer;
}

/** The answer is bigger than `limit`: declared in Content-Length, or seen while reading. */
export class ResponseTooLargeError extends Error {
  override readonly name = 'ResponseTooLargeError';
  constructor(
    readonly limit: number,
    readonly declared: number | undefined,
  ) {
    super(declared === undefined ? `response exceeds ${limit} bytes` : `response declares ${declared} bytes`);
  }
}

function codedError(code: string, message: string, name = 'Error'): Error {
  const err = new Error(message) as Error & { code: string };
  err.code = code;
  err.name = name;
  return err;
}

/** Bytes of an unwanted answer's body read to keep its connection; beyond that the socket is closed. */
const MAX_DISCARD_BYTES = 64 * 1024;

const abortError = () => codedError('ABORT_ERR', 'the call was aborted', 'AbortError');
const EMPTY = Buffer.alloc(0);

/** How often the pool checks exchanges against their backstop deadline (one timer per pool, not per call). */
const SWEEP_MS = 100;

class Exchange {
  settled = false;
  retried = false;
  conn: Connection | undefined;
  /** performance.now() after which the pool's sweep fails the exchange (a backstop behind the signal). */
  readonly deadline: number;
  private readonly onAbort = () => this.fail(abortError());

  constructor(
    readonly bytes: Buffer,
    readonly options: ExchangeOptions,
    private readonly resolve: (response: HttpResponse) => void,
    private readonly reject: (err: unknown) => void,
    private readonly pool: HttpsPool,
  ) {
    this.deadline = performance.now() + options.timeoutMs;
    options.signal.addEventListener('abort', this.onAbort);
  }

  timedOut(): void {
    this.fail(codedError('ETIMEDOUT', `no answer within ${this.options.timeoutMs} ms`, 'TimeoutError'));
  }

  succeed(response: HttpResponse): void {
    if (this.settled) return;
    this.finish();
    this.resolve(response);
  }

  /** Settles with `err`; a connection still busy with this exchange is closed (its answer is abandoned). */
  fail(err: unknown): void {
    if (this.settled) return;
    this.finish();
    const conn = this.conn;
    if (conn && conn.exchange === this) conn.destroy();
    else this.pool.dequeue(this);
    this.reject(err);
  }

  private finish(): void {
    this.settled = true;
    this.pool.pending.delete(this);
    this.options.signal.removeEventListener('abort', this.onAbort);
  }
}

class Connection {
  exchange: Exchange | undefined;
  /** Has completed at least one response (the retry rule only applies to reused sockets). */
  reused = false;
  private parser = new ResponseParser();
  private error: Error | undefined;
  private connected = false;

  constructor(
    readonly socket: TLSSocket,
    private readonly pool: HttpsPool,
  ) {
    socket.on('secureConnect', () => {
      this.connected = true;
      socket.setNoDelay(true);
      socket.setKeepAlive(true, 30_000);
      if (this.exchange) this.write();
    });
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err: Error) => {
      this.error ??= err;
    });
    socket.on('close', () => this.onClose());
    socket.on('timeout', () => {
      // Inactivity: close an idle socket, or one still draining an answer nobody waits for. An exchange
      // in progress has its own deadline.
      if (!this.exchange || this.exchange.settled) this.destroy();
    });
  }

  get alive(): boolean {
    return !this.socket.destroyed && this.socket.writable && this.socket.readable;
  }

  assign(exchange: Exchange): void {
    this.exchange = exchange;
    exchange.conn = this;
    this.parser = new ResponseParser();
    if (this.connected) this.write();
  }

  destroy(): void {
    this.socket.destroy();
  }

  private write(): void {
    this.socket.write(this.exchange!.bytes);
  }

  private onData(chunk: Buffer): void {
    const exchange = this.exchange;
    if (!exchange) {
      this.destroy(); // bytes nobody asked for: the connection's framing can no longer be trusted
      return;
    }
    const parser = this.parser;
    const hadHead = parser.head !== undefined;
    try {
      parser.push(chunk);
    } catch (err) {
      if (exchange.settled) this.destroy();
      else exchange.fail(err);
      return;
    }
    const head = parser.head;
    if (!head) return;
    const { options } = exchange;
    if (!hadHead) {
      if (head.contentLength !== undefined && head.contentLength > options.maxBodyBytes) {
        exchange.fail(new ResponseTooLargeError(options.maxBodyBytes, head.contentLength));
        return;
      }
      if (!options.accept(head.status)) {
        // Answer now; read the (small) body on so the socket stays usable, as undici's dump() does.
        parser.keepBody = false;
        exchange.succeed({ status: head.status, headers: head.headers, body: EMPTY });
      }
    }
    if (parser.keepBody) {
      if (parser.bodyBytes > options.maxBodyBytes) {
        exchange.fail(new ResponseTooLargeError(options.maxBodyBytes, undefined));
        return;
      }
    } else if (parser.bodyBytes > MAX_DISCARD_BYTES) {
      this.destroy();
      return;
    }
    if (parser.done) this.complete(exchange);
  }

  private complete(exchange: Exchange): void {
    const parser = this.parser;
    const head = parser.head!;
    this.exchange = undefined;
    exchange.conn = undefined;
    const body = parser.keepBody ? parser.body() : EMPTY;
    if (head.keepAlive && parser.trailing === 0 && this.alive) {
      this.reused = true;
      this.pool.release(this);
    } else {
      this.destroy();
    }
    exchange.succeed({ status: head.status, headers: head.headers, body });
  }

  private onClose(): void {
    const exchange = this.exchange;
    this.exchange = undefined;
    if (exchange && !exchange.settled && this.error === undefined && this.parser.end()) {
      this.exchange = exchange;
      this.complete(exchange);
    } else if (exchange && !exchange.settled) {
      exchange.conn = undefined;
      if (this.reused && !this.parser.received && !exchange.retried) {
        exchange.retried = true;
        this.pool.forget(this, exchange);
        return;
      }
      exchange.fail(
        this.error ?? codedError('ERR_CONNECTION_CLOSED', 'the connection closed before the response was complete'),
      );
    }
    this.pool.forget(this);
  }
}

export class HttpsPool {
  /** Exchanges not yet settled, for the deadline sweep. */
  readonly pending = new Set<Exchange>();
  private sweeper: NodeJS.Timeout | undefined;
  private readonly connections = new Set<Connection>();
  private readonly idle: Connection[] = [];
  private readonly queue: Exchange[] = [];
  private closing = false;
  private closed: (() => void) | undefined;
  private drained: Promise<void> | undefined;
  private readonly connectOptions: tls.ConnectionOptions;

  constructor(private readonly options: HttpsPoolOptions) {
    this.connectOptions = {
      host: options.host,
      port: options.port,
      // SNI carries host names only; an IP is checked against the certificate's IP SANs by host.
      ...(net.isIP(options.host) ? {} : { servername: options.host }),
      ...(options.ca !== undefined ? { ca: options.ca } : {}),
      ...(options.cert !== undefined ? { cert: options.cert } : {}),
      ...(options.key !== undefined ? { key: options.key } : {}),
      rejectUnauthorized: true,
    };
  }

  /** Sends one request (pre-built bytes) and resolves with its answer. */
  request(bytes: Buffer, options: ExchangeOptions): Promise<HttpResponse> {
    if (this.closing) return Promise.reject(codedError('ERR_POOL_CLOSED', 'the client is closed'));
    if (options.signal.aborted) return Promise.reject(abortError());
    return new Promise((resolve, reject) => {
      const exchange = new Exchange(bytes, options, resolve, reject, this);
      this.pending.add(exchange);
      this.sweeper ??= setInterval(() => this.sweep(), SWEEP_MS).unref();
      this.dispatch(exchange);
    });
  }

  /** Fails the exchanges past their deadline; stops ticking once nothing is pending. */
  private sweep(): void {
    const now = performance.now();
    for (const exchange of this.pending) if (exchange.deadline <= now) exchange.timedOut();
    if (this.pending.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  /** Runs `exchange` on an idle socket (the most recently used first), a new one, or queues it. */
  dispatch(exchange: Exchange): void {
    for (let conn = this.idle.pop(); conn; conn = this.idle.pop()) {
      if (conn.alive) return conn.assign(exchange);
      conn.destroy();
    }
    if (this.connections.size < this.options.maxConnections) return this.dial(exchange);
    if (this.queue.length >= this.options.maxQueued) {
      exchange.fail(codedError('ERR_POOL_FULL', `${this.queue.length} call(s) already wait for a connection`));
      return;
    }
    this.queue.push(exchange);
  }

  /** Takes back a socket after a complete response. */
  release(conn: Connection): void {
    const next = this.queue.shift();
    if (next) return conn.assign(next);
    if (this.closing) return conn.destroy();
    this.idle.push(conn);
  }

  dequeue(exchange: Exchange): void {
    const at = this.queue.indexOf(exchange);
    if (at >= 0) this.queue.splice(at, 1);
  }

  /** A socket has closed; its slot goes to `retry` (on a fresh connection) or the first queued request. */
  forget(conn: Connection, retry?: Exchange): void {
    if (!this.connections.delete(conn)) return;
    const at = this.idle.indexOf(conn);
    if (at >= 0) this.idle.splice(at, 1);
    const next = retry ?? (this.connections.size < this.options.maxConnections ? this.queue.shift() : undefined);
    if (next) this.dial(next);
    else if (this.closing && this.connections.size === 0) this.closed?.();
  }

  /** Stops taking requests, lets those in flight or queued finish, and closes every socket. */
  close(): Promise<void> {
    if (!this.closing) {
      this.closing = true;
      this.drained = new Promise((resolve) => {
        this.closed = resolve;
      });
      for (const conn of this.idle.splice(0)) conn.destroy();
      if (this.pending.size === 0) {
        clearInterval(this.sweeper);
        this.sweeper = undefined;
      }
      if (this.connections.size === 0) this.closed?.();
    }
    return this.drained ?? Promise.resolve();
  }

  private dial(exchange: Exchange): void {
    const socket = tls.connect(this.connectOptions);
    socket.setTimeout(this.options.idleTimeoutMs);
    const conn = new Connection(socket, this);
    this.connections.add(conn);
    conn.assign(exchange);
  }
}
