/**
 * An incremental HTTP/1.1 response parser for the provider client: the status line and header fields,
 * then a body framed by Content-Length, chunked transfer coding, or the end of the connection (RFC 9112
 * §6.3). Bytes may arrive split anywhere. Pure framing: no I/O, no size policy — the caller reads
 * `bodyBytes` after each push and decides (the provider client's 20 MiB cap).
 */

/** A response that does not follow HTTP/1.1 framing; the connection cannot be used any further. */
export class HttpProtocolError extends Error {
  override readonly name = 'HttpProtocolError';
  readonly code = 'ERR_HTTP_PROTOCOL';
}

export interface ResponseHead {
  readonly status: number;
  /** Field names lower-cased; repeated fields joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  /** The declared Content-Length (absent when chunked or delimited by the close). */
  readonly contentLength: number | undefined;
  /** The connection may carry another request after this response. */
  readonly keepAlive: boolean;
}

/** Longest head (status line + fields) accepted; Go and Node use similar limits (1 MiB / 16 KiB). */
const MAX_HEAD_BYTES = 64 * 1024;
/** Longest chunk-size line or trailer line. */
const MAX_LINE_BYTES = 4096;

const HEAD = 0;
const LENGTH = 1;
const CHUNK_SIZE = 2;
const CHUNK_DATA = 3;
const CHUNK_END = 4;
const TRAILERS = 5;
const UNTIL_CLOSE = 6;
const DONE = 7;

const STATUS_CODE = /^\d{3}$/;
const CLOSE = /(?:^|,)\s*close\s*(?:,|$)/i;
const KEEP_ALIVE = /(?:^|,)\s*keep-alive\s*(?:,|$)/i;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const CHUNK_SIZE_FIELD = /^[0-9A-Fa-f]{1,12}$/;
const DIGITS = /^\d{1,15}$/;

export class ResponseParser {
  head: ResponseHead | undefined;
  /** Body bytes seen so far (kept or not). */
  bodyBytes = 0;
  /** Bytes received after the end of the response: the connection must not be reused. */
  trailing = 0;
  /** Any byte of a response received (the retry rule looks at this). */
  received = false;
  /** Set to false to count the body without keeping it (an answer the caller will not read). */
  keepBody = true;
  private state = HEAD;
  private remaining = 0;
  private pending: Buffer | undefined;
  private readonly parts: Buffer[] = [];

  get done(): boolean {
    return this.state === DONE;
  }

  /** The body received so far (all of it once `done`). */
  body(): Buffer {
    return this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.keepBody ? this.bodyBytes : 0);
  }

  /** Feeds the next bytes from the connection. Throws HttpProtocolError on a malformed response. */
  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.received = true;
    let buf = chunk;
    if (this.pending) {
      buf = Buffer.concat([this.pending, chunk]);
      this.pending = undefined;
    }
    let at = 0;
    while (at < buf.length) {
      switch (this.state) {
        case HEAD: {
          const end = buf.indexOf('\r\n\r\n', at, 'latin1');
          if (end < 0) {
            if (buf.length - at > MAX_HEAD_BYTES)
              throw new HttpProtocolError(`response head over ${MAX_HEAD_BYTES} bytes`);
            this.pending = buf.subarray(at);
            return;
          }
          if (end - at > MAX_HEAD_BYTES) throw new HttpProtocolError(`response head over ${MAX_HEAD_BYTES} bytes`);
          this.readHead(buf.toString('latin1', at, end));
          at = end + 4;
          break;
        }
        case LENGTH:
        case CHUNK_DATA: {
          const take = Math.min(this.remaining, buf.length - at);
          this.addBody(buf.subarray(at, at + take));
          at += take;
          this.remaining -= take;
          if (this.remaining === 0) this.state = this.state === LENGTH ? DONE : CHUNK_END;
          break;
        }
        case CHUNK_SIZE: {
          const end = this.lineEnd(buf, at);
          if (end < 0) return;
          const line = buf.toString('latin1', at, end);
          const semicolon = line.indexOf(';');
          const field = (semicolon < 0 ? line : line.slice(0, semicolon)).trimEnd();
          if (!CHUNK_SIZE_FIELD.test(field)) throw new HttpProtocolError(`invalid chunk size ${JSON.stringify(line)}`);
          const size = parseInt(field, 16);
          at = end + 2;
          if (size === 0) this.state = TRAILERS;
          else {
            this.remaining = size;
            this.state = CHUNK_DATA;
          }
          break;
        }
        case CHUNK_END: {
          if (buf.length - at < 2) {
            this.pending = buf.subarray(at);
            return;
          }
          if (buf[at] !== 0x0d || buf[at + 1] !== 0x0a) throw new HttpProtocolError('chunk data not followed by CRLF');
          at += 2;
          this.state = CHUNK_SIZE;
          break;
        }
        case TRAILERS: {
          const end = this.lineEnd(buf, at);
          if (end < 0) return;
          // Trailer fields are allowed and ignored; an empty line ends the message.
          this.state = end === at ? DONE : TRAILERS;
          at = end + 2;
          break;
        }
        case UNTIL_CLOSE:
          this.addBody(at === 0 ? buf : buf.subarray(at));
          at = buf.length;
          break;
        default:
          this.trailing += buf.length - at;
          return;
      }
    }
  }

  /** The connection ended. Returns true when that completes the response (a body delimited by the close). */
  end(): boolean {
    if (this.state !== UNTIL_CLOSE) return false;
    this.state = DONE;
    return true;
  }

  private lineEnd(buf: Buffer, at: number): number {
    const end = buf.indexOf('\r\n', at, 'latin1');
    if (end < 0) {
      if (buf.length - at > MAX_LINE_BYTES) throw new HttpProtocolError(`chunk line over ${MAX_LINE_BYTES} bytes`);
      this.pending = buf.subarray(at);
      return -1;
    }
    if (end - at > MAX_LINE_BYTES) throw new HttpProtocolError(`chunk line over ${MAX_LINE_BYTES} bytes`);
    return end;
  }

  private addBody(piece: Buffer): void {
    if (piece.length === 0) return;
    this.bodyBytes += piece.length;
    if (this.keepBody) this.parts.push(piece);
  }

  private readHead(text: string): void {
    // Status line: HTTP/1.0 or HTTP/1.1, a space, three digits, then a space (and a reason) or the end.
    const lineEnd = text.indexOf('\r\n');
    const statusEnd = lineEnd < 0 ? text.length : lineEnd;
    const minor = text.charCodeAt(7);
    const status = Number(text.slice(9, 12));
    if (
      !text.startsWith('HTTP/1.') ||
      (minor !== 0x30 && minor !== 0x31) ||
      text.charCodeAt(8) !== 0x20 ||
      !STATUS_CODE.test(text.slice(9, 12)) ||
      (statusEnd > 12 && text.charCodeAt(12) !== 0x20) ||
      statusEnd < 12
    ) {
      throw new HttpProtocolError(`invalid status line ${JSON.stringify(text.slice(0, Math.min(statusEnd, 80)))}`);
    }
    const headers: Record<string, string> = {};
    let at = statusEnd + 2;
    while (at < text.length) {
      const end = text.indexOf('\r\n', at);
      const line = end < 0 ? text.slice(at) : text.slice(at, end);
      at = end < 0 ? text.length : end + 2;
      const colon = line.indexOf(':');
      const name = colon > 0 ? line.slice(0, colon) : '';
      // No whitespace before the colon, no obsolete line folding (RFC 9112 §5.1, §5.2).
      if (!TOKEN.test(name)) throw new HttpProtocolError(`invalid header line ${JSON.stringify(line.slice(0, 80))}`);
      const key = name.toLowerCase();
      const value = line.slice(colon + 1).trim();
      const previous = headers[key];
      headers[key] = previous === undefined ? value : `${previous}, ${value}`;
    }
    if (status >= 100 && status < 200) {
      // An interim answer (100 Continue, 103 Early Hints): the real one follows. 101 would switch protocols.
      if (status === 101) throw new HttpProtocolError('unexpected 101 Switching Protocols');
      return;
    }
    const connection = headers.connection;
    let keepAlive =
      connection === undefined
        ? minor === 0x31
        : minor === 0x31
          ? !CLOSE.test(connection)
          : KEEP_ALIVE.test(connection);
    let contentLength: number | undefined;
    const te = headers['transfer-encoding'];
    if (status === 204 || status === 304) {
      this.state = DONE;
    } else if (te !== undefined) {
      const codings = te.toLowerCase().split(',');
      if (codings[codings.length - 1]!.trim() === 'chunked') this.state = CHUNK_SIZE;
      else {
        this.state = UNTIL_CLOSE;
        keepAlive = false;
      }
      // Content-Length beside Transfer-Encoding is ignored, and the connection is not reused (RFC 9112 §6.3).
      if (headers['content-length'] !== undefined) keepAlive = false;
    } else if (headers['content-length'] !== undefined) {
      const declared = headers['content-length'];
      // A repeated field (joined "5, 5") is accepted only when every value is the same (RFC 9110 §8.6).
      const values = DIGITS.test(declared) ? [declared] : declared.split(',').map((v) => v.trim());
      if (!values.every((v) => DIGITS.test(v) && v === values[0])) {
        throw new HttpProtocolError(`invalid Content-Length ${JSON.stringify(declared)}`);
      }
      contentLength = Number(values[0]);
      this.remaining = contentLength;
      this.state = contentLength === 0 ? DONE : LENGTH;
    } else {
      this.state = UNTIL_CLOSE;
      keepAlive = false;
    }
    this.head = { status, headers, contentLength, keepAlive };
  }
}
