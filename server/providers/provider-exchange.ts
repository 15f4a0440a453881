/**
 * One request to a provider through its undici Pool, as a dispatch handler: the answer's status and, for
 * a 200, its body, read into memory no further than `maxBodyBytes` (a declared Content-Length over it
 * fails before any of the body is read). Any other status is answered at its head; its body is read on
 * and dropped, so that the keep-alive connection stays usable, unless it is large. The call's signal
 * settles the call at once, whether the request is still waiting for a connection or already written.
 *
 * Retry rule (Go's net/http Transport: a reused connection that broke before any response byte, with a
 * replayable body): a request is sent again once, on a fresh connection, only when it failed on a REUSED
 * keep-alive socket before any byte of the response arrived — the provider closed the idle connection
 * while the request was on its way. Anything else (a fresh socket, a partial answer, a timeout, an abort)
 * is reported as it is. undici itself does not retry a POST (it re-sends only requests it had not begun),
 * and by reading an idle socket once more before reusing it, it already avoids most of these races; the
 * rule covers the close that arrives while the request is in flight.
 */
import type { Dispatcher } from 'undici';
import type { ConnectionAware, ProviderConnection, ProviderDispatchOptions } from './provider-connection.js';

export interface ExchangeResult {
  readonly status: number;
  /** The Location header of the answer, if any (a redirect is reported, never followed). */
  readonly location: string | undefined;
  /** The body of a 200; empty for any other status. */
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

/** The call's signal aborted: the provider client reports it as reason `timeout`. */
export function abortedError(): Error {
  const err = new Error('the call was aborted') as Error & { code: string };
  err.name = 'AbortError';
  err.code = 'ABORT_ERR';
  return err;
}

/** Bytes of an unwanted answer's body read to keep its connection; beyond that the connection is closed. */
const MAX_DISCARD_BYTES = 64 * 1024;

/** How a socket closed under a request shows: undici's "other side closed", or the socket's own error. */
const CLOSED_CODES = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE', 'ECONNABORTED']);

const EMPTY = Buffer.alloc(0);

type Headers = Record<string, string | string[] | undefined>;

export interface ExchangeCallbacks {
  readonly resolve: (result: ExchangeResult) => void;
  readonly reject: (err: unknown) => void;
  /** undici is done with the request (answered, failed or aborted): its slot is free. */
  readonly finished: () => void;
}

export class ProviderExchange implements Dispatcher.DispatchHandler, ConnectionAware {
  private connection: ProviderConnection | undefined;
  private controller: Dispatcher.DispatchController | undefined;
  /** The caller has its answer or error; what undici still delivers is read on or dropped. */
  private settled = false;
  /** The request is to be abandoned as soon as undici hands it over. */
  private abandon: Error | undefined;
  private reused = false;
  private answering = false;
  private retried = false;
  private done = false;
  private status = 0;
  private chunks: Buffer[] = [];
  private bytes = 0;
  private readonly options: ProviderDispatchOptions;
  private readonly onAbort = () => this.stop(abortedError());

  constructor(
    request: Dispatcher.DispatchOptions,
    private readonly signal: AbortSignal,
    private readonly maxBodyBytes: number,
    private readonly callbacks: ExchangeCallbacks,
  ) {
    this.options = { ...request, exchange: this };
    signal.addEventListener('abort', this.onAbort);
  }

  start(pool: Dispatcher): void {
    pool.dispatch(this.options, this);
  }

  assigned(connection: ProviderConnection): void {
    this.connection = connection;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abandon) return controller.abort(this.abandon);
    this.reused = this.connection?.countWrite() ?? false;
  }

  /** The first byte of an answer arrived (undici's hook before the head is parsed). */
  onResponseStarted(): void {
    this.answering = true;
  }

  onResponseStart(controller: Dispatcher.DispatchController, status: number, headers: Headers): void {
    if (status < 200) return; // an interim answer (103 Early Hints): the real one follows
    this.status = status;
    const declared = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
    if (status !== 200) {
      const location = headers.location;
      this.settle({ status, location: location === undefined ? undefined : String(location), body: EMPTY });
      if (declared !== undefined && declared > MAX_DISCARD_BYTES)
        controller.abort(new ResponseTooLargeError(MAX_DISCARD_BYTES, declared));
      return;
    }
    if (declared !== undefined && declared > this.maxBodyBytes) {
      this.stop(new ResponseTooLargeError(this.maxBodyBytes, declared));
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.bytes += chunk.length;
    if (this.status !== 200) {
      if (this.bytes > MAX_DISCARD_BYTES) controller.abort(new ResponseTooLargeError(MAX_DISCARD_BYTES, undefined));
      return;
    }
    if (this.bytes > this.maxBodyBytes) return this.stop(new ResponseTooLargeError(this.maxBodyBytes, undefined));
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    const { chunks } = this;
    const body = chunks.length === 1 ? chunks[0]! : chunks.length === 0 ? EMPTY : Buffer.concat(chunks, this.bytes);
    this.settle({ status: this.status, location: undefined, body });
    this.finish();
  }

  /** `controller` is absent when the request failed before a connection took it. */
  onResponseError(_controller: Dispatcher.DispatchController | undefined, err: Error): void {
    const connection = this.retryOn(err);
    if (connection) {
      this.retried = true;
      this.reused = this.answering = false;
      this.controller = undefined;
      // Synchronously, while undici is still closing the connection's socket: the connection then dials a
      // new one for this request before the Pool can hand it anything else.
      connection.dispatch(this.options, this);
      return;
    }
    this.fail(err);
    this.finish();
  }

  /** The connection to send the request again on, when the retry rule applies to `err`. */
  private retryOn(err: Error): ProviderConnection | undefined {
    if (this.retried || this.settled || this.abandon || !this.reused || this.answering) return undefined;
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' && CLOSED_CODES.has(code) ? this.connection : undefined;
  }

  /** Fails the call with `err` and abandons the request (now, or as soon as a connection takes it). */
  private stop(err: Error): void {
    if (this.settled) return;
    this.fail(err);
    this.abandon = err;
    this.controller?.abort(err);
  }

  private settle(result: ExchangeResult): void {
    if (this.settled) return;
    this.settled = true;
    this.chunks = [];
    this.callbacks.resolve(result);
  }

  private fail(err: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.chunks = [];
    this.callbacks.reject(err);
  }

  /** Once only: a second release would let one more call than the bound through. */
  private finish(): void {
    if (this.done) return;
    this.done = true;
    this.signal.removeEventListener('abort', this.onAbort);
    this.callbacks.finished();
  }
}
