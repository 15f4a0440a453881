/**
 * An HTTP/1.1 keep-alive client over TLS that behaves like kube-apiserver's webhook client (Go net/http
 * Transport, as used by client-go's rest client) and reports exactly what happened to every request:
 *
 *   answered  a complete response arrived (status, headers, Content-Length body)
 *   refused   the connection could not be made (refused, or reset during the TLS handshake): not one byte
 *             of the request was written. The apiserver's client sees a dial error, and Go's Transport
 *             retries a POST on a reused connection only in this "nothing written" case.
 *   lost      the request was written and the connection ended before a complete response. The apiserver
 *             does not retry this for a POST (client-go retries only GETs; Go retries a non-idempotent
 *             request only when nothing was written): the webhook call fails and failurePolicy decides.
 *
 * Like Go's Transport, a connection is reused after a response unless the response said
 * `Connection: close`, and an idle connection the server closes is dropped from the pool, not reused.
 * Raw sockets instead of undici because only they tell "nothing written" from "written, then cut".
 */
import tls from 'node:tls';

export type Outcome =
  | {
      readonly kind: 'answered';
      readonly status: number;
      readonly headers: Readonly<Record<string, string>>;
      readonly body: string;
    }
  | { readonly kind: 'refused'; readonly error: string }
  | { readonly kind: 'lost'; readonly error: string };

export interface ConnectOptions {
  readonly host: string;
  readonly port: number;
  /** PEM of the CA the server's certificate must chain to. */
  readonly ca: string | Buffer;
}

function errorCode(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code ?? e.message;
}

const HEADER_END = '\r\n\r\n';

/** One pooled connection: one request at a time, as HTTP/1.1 without pipelining. */
export class KeepAliveConnection {
  /**
   * How the connection ended while idle: `end` is a clean close by the server (FIN), anything else the
   * error code (e.g. ECONNRESET). Undefined while open, or when it ended otherwise.
   */
  idleClose: string | undefined;
  closed = false;
  private busy: ((outcome: Outcome) => void) | undefined;
  private buffer = Buffer.alloc(0);

  private constructor(private readonly socket: tls.TLSSocket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.parse();
    });
    socket.on('end', () => this.ended('end'));
    socket.on('error', (err) => this.ended(errorCode(err)));
    socket.on('close', () => this.ended('close'));
  }

  /** Opens a connection; a failure is a `refused` outcome (nothing was written). */
  static connect(options: ConnectOptions): Promise<KeepAliveConnection | Extract<Outcome, { kind: 'refused' }>> {
    return new Promise((resolve) => {
      const socket = tls.connect({ host: options.host, port: options.port, ca: options.ca });
      const fail = (err: Error) => resolve({ kind: 'refused', error: errorCode(err) });
      socket.once('error', fail);
      socket.once('close', () => fail(new Error('closed during the TLS handshake')));
      socket.once('secureConnect', () => {
        socket.off('error', fail);
        socket.removeAllListeners('close');
        resolve(new KeepAliveConnection(socket));
      });
    });
  }

  /** Writes one request and waits for its response or the connection's end. */
  request(method: string, path: string, body: string): Promise<Outcome> {
    if (this.closed) throw new Error('the connection is closed; open another');
    if (this.busy) throw new Error('one request at a time');
    const payload = Buffer.from(body);
    return new Promise((resolve) => {
      this.busy = resolve;
      this.socket.write(
        `${method} ${path} HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n` +
          `Accept: application/json\r\nContent-Length: ${payload.length}\r\n\r\n`,
      );
      this.socket.write(payload);
    });
  }

  /** Closes the connection from the client side (after a `Connection: close` answer). */
  close(): void {
    this.closed = true;
    this.socket.end();
  }

  private ended(how: string): void {
    if (this.closed && !this.busy) return;
    this.closed = true;
    const waiting = this.busy;
    this.busy = undefined;
    if (waiting) waiting({ kind: 'lost', error: how });
    else this.idleClose ??= how;
    this.socket.destroy();
  }

  private parse(): void {
    if (!this.busy) return;
    const end = this.buffer.indexOf(HEADER_END);
    if (end < 0) return;
    const [statusLine = '', ...lines] = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? NaN);
    if (!Number.isInteger(length)) throw new Error(`expected a Content-Length answer, got ${statusLine}`);
    const bodyStart = end + HEADER_END.length;
    if (this.buffer.length < bodyStart + length) return;
    const body = this.buffer.subarray(bodyStart, bodyStart + length).toString('utf8');
    this.buffer = this.buffer.subarray(bodyStart + length);
    const waiting = this.busy;
    this.busy = undefined;
    waiting({ kind: 'answered', status: Number(statusLine.split(' ')[1]), headers, body });
  }
}
