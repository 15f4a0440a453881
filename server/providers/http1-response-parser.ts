/**
 * An incremental HTTP/1.1 response parser for the provider client: the status line and header fields,
 * then a body framed by Content-Length, chunked transfer coding, or the end of the connection (RFC 9112
 * §6.3). Bytes may arrive split anywhere. Pure framing: no I/O, no size policy — the caller reads
 * `bodyBytes` after each push and decides (the provider client's 20 MiB cap).
 *
 * A provider may be compromised, so however it splits its bytes the work and memory stay linear in them:
 * only new bytes are searched, an unfinished head or line is held in one growing buffer, the body in another.
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

const CRLF = Buffer.from('\r\n', 'latin1');
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
const EMPTY = Buffer.alloc(0);

/**
 * A new buffer of at least `need` bytes holding the first `used` bytes of `old`. Twice `need` (but no more
 * than `cap`) so that growing by small pieces copies each byte a bounded number of times. Zero-filled: the
 * body is handed out as a view on it.
 */
function grow(old: Buffer, used: number, need: number, cap: number): Buffer {
  const grown = Buffer.alloc(Math.max(need, Math.min(2 * need, cap)));
  old.copy(grown, 0, 0, used);
  return grown;
}

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
  /** Bytes still to come: of the body (LENGTH), of the chunk (CHUNK_DATA), of the CRLF after it (CHUNK_END). */
  private remaining = 0;
  /** The start of an unfinished head or line, kept across pushes: the first `heldBytes` bytes. */
  private held: Buffer = EMPTY;
  private heldBytes = 0;
  /** The head or line `scan` found last. */
  private line = '';
  private trailerBytes = 0;
  /** The kept body: the first `keptBytes` bytes. */
  private store: Buffer = EMPTY;
  private keptBytes = 0;

  get done(): boolean {
    return this.state === DONE;
  }

  /** The body received so far (all of it once `done`). */
  body(): Buffer {
    return this.keepBody ? this.store.subarray(0, this.keptBytes) : EMPTY;
  }

  /** Feeds the next bytes from the connection. Throws HttpProtocolError on a malformed response. */
  push(buf: Buffer): void {
    if (buf.length === 0) return;
    this.received = true;
    let at = 0;
    while (at < buf.length) {
      switch (this.state) {
        case HEAD: {
          const next = this.scan(buf, at, HEAD_END, MAX_HEAD_BYTES, 'response head');
          if (next < 0) return;
          this.readHead(this.line);
          at = next;
          break;
        }
        case LENGTH:
        case CHUNK_DATA: {
          const take = Math.min(this.remaining, buf.length - at);
          this.remaining -= take;
          this.addBody(buf, at, at + take);
          at += take;
          if (this.remaining > 0) break;
          if (this.state === LENGTH) this.state = DONE;
          else {
            this.state = CHUNK_END;
            this.remaining = 2;
          }
          break;
        }
        case CHUNK_SIZE: {
          const next = this.scan(buf, at, CRLF, MAX_LINE_BYTES, 'chunk line');
          if (next < 0) return;
          const line = this.line;
          const semicolon = line.indexOf(';');
          const field = (semicolon < 0 ? line : line.slice(0, semicolon)).trimEnd();
          if (!CHUNK_SIZE_FIELD.test(field)) throw new HttpProtocolError(`invalid chunk size ${JSON.stringify(line)}`);
          const size = parseInt(field, 16);
          at = next;
          if (size === 0) this.state = TRAILERS;
          else {
            this.remaining = size;
            this.state = CHUNK_DATA;
          }
          break;
        }
        case CHUNK_END: {
          // A byte at a time, as a push may split the CRLF.
          if (buf[at] !== (this.remaining === 2 ? 0x0d : 0x0a)) {
            throw new HttpProtocolError('chunk data not followed by CRLF');
          }
          at++;
          if (--this.remaining === 0) this.state = CHUNK_SIZE;
          break;
        }
        case TRAILERS: {
          const next = this.scan(buf, at, CRLF, MAX_LINE_BYTES, 'chunk line');
          if (next < 0) return;
          at = next;
          // Trailer fields are allowed and ignored; an empty line ends the message. The section is bounded
          // like a head, so an endless run of fields is an error rather than endless work.
          if (this.line === '') {
            this.state = DONE;
            break;
          }
          this.trailerBytes += this.line.length + 2;
          if (this.trailerBytes > MAX_HEAD_BYTES) {
            throw new HttpProtocolError(`trailer section over ${MAX_HEAD_BYTES} bytes`);
          }
          break;
        }
        case UNTIL_CLOSE:
          this.addBody(buf, at, buf.length);
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

  /**
   * Finds the `term` ending a head or line that may have begun in earlier pushes, searching only bytes not
   * searched before, so that the work stays linear in the bytes however a peer splits them.
   * Returns the offset in `buf` just past `term`, with the head or line in `this.line`; or -1 when `buf`
   * ends first, its bytes held for the next push.
   */
  private scan(buf: Buffer, at: number, term: Buffer, max: number, what: string): number {
    const held = this.heldBytes;
    const straddling = this.straddling(buf, at, term);
    // The length of the line, held bytes first.
    let length = held - straddling;
    if (straddling === 0) {
      const found = buf.indexOf(term, at);
      if (found < 0) {
        const need = held + buf.length - at;
        // Up to term.length - 1 of the last bytes may begin `term`; the rest certainly belongs to the line.
        if (need - (term.length - 1) > max) throw new HttpProtocolError(`${what} over ${max} bytes`);
        if (need > this.held.length) this.held = grow(this.held, held, need, max + term.length - 1);
        buf.copy(this.held, held, at);
        this.heldBytes = need;
        return -1;
      }
      length = held + found - at;
    }
    if (length > max) throw new HttpProtocolError(`${what} over ${max} bytes`);
    this.line =
      length <= held
        ? this.held.toString('latin1', 0, length)
        : this.held.toString('latin1', 0, held) + buf.toString('latin1', at, at + length - held);
    this.heldBytes = 0;
    return at + length - held + term.length;
  }

  /** How many bytes of a `term` that `buf` completes from `at` end the held bytes (0: none). */
  private straddling(buf: Buffer, at: number, term: Buffer): number {
    const held = this.heldBytes;
    // The most held bytes first: that `term` begins earliest.
    for (let k = Math.min(term.length - 1, held); k > 0; k--) {
      const rest = term.length - k;
      if (
        buf.length - at >= rest &&
        buf.compare(term, k, term.length, at, at + rest) === 0 &&
        this.held.compare(term, 0, k, held - k, held) === 0
      ) {
        return k;
      }
    }
    return 0;
  }

  private addBody(buf: Buffer, start: number, end: number): void {
    if (end === start) return;
    this.bodyBytes += end - start;
    if (!this.keepBody) return;
    const kept = this.keptBytes;
    const need = kept + end - start;
    if (kept === 0) {
      // Most answers arrive in one piece: keep it by reference (a next piece copies it into a buffer of ours).
      this.store = start === 0 && end === buf.length ? buf : buf.subarray(start, end);
    } else {
      // One growing buffer, not one object per piece. A declared Content-Length only stops the doubling at
      // the final size: it is not trusted to allocate ahead, as the caller applies its cap to bodyBytes.
      if (need > this.store.length) {
        this.store = grow(this.store, kept, need, this.state === LENGTH ? need + this.remaining : Infinity);
      }
      buf.copy(this.store, kept, start, end);
    }
    this.keptBytes = need;
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
