/**
 * Reads a request body up to `limit` bytes, weighing it against the server's byte budget as its bytes arrive.
 * A declared Content-Length over the limit is refused before reading anything, and so is one the budget could
 * not hold now or ever (BudgetExceededError); the declared length is never held, only what has arrived, so a
 * client that declares a large body and sends it slowly holds almost nothing. A body that arrives too slowly
 * (BodyTiming) is refused with 408 and its connection closed. Of a refused body's rest at most 256 KiB is read;
 * a longer rest is left unread and the connection closed gracefully after the answer (endAfterRefusal).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ReviewDecodeError } from '../admission/review-decode-error.js';
import type { ConnectionBounds } from '../config/types.js';
import { WEIGHT_PER_BODY_BYTE, type ByteLease } from './byte-budget.js';

/**
 * How fast a body must arrive: within bodyTimeoutSeconds of the start of reading it, plus one second for every
 * minBodyBytesPerSecond bytes received.
 */
export type BodyTiming = Pick<ConnectionBounds, 'bodyTimeoutSeconds' | 'minBodyBytesPerSecond'>;

/**
 * The most of a refused body's rest that is read and thrown away to keep its connection, as Go's HTTP server
 * (the apiserver's) does. A longer rest, or one of unknown length, is left unread: a review shed for memory
 * costs no more than its headers, however large its body.
 */
const MAX_DISCARDED_BYTES = 256 * 1024;

/**
 * How long the connection of a request left unread stays half-closed after its answer before it is closed.
 * Closing at once, with bytes unread, resets the connection, and the reset can reach the client before the
 * answer has been read (the apiserver would then see an error, not a 429 to retry).
 */
const UNREAD_LINGER_MS = 500;

const leftUnread = new WeakSet<IncomingMessage>();

/**
 * Whether the answer to a request refused with `status` closes its connection: after an oversized body (413),
 * or one arriving too slowly (408), the connection is not worth keeping.
 */
function closesConnection(status: number): boolean {
  return status === 413 || status === 408;
}

/**
 * How the connection of a request refused with `status` ends. The answer says `Connection: close` after 413 and
 * 408, and after any refusal whose body was left unread: a client must not send another request behind the bytes
 * it could not send. That connection is ended once the answer is written and closed a moment later.
 */
export function endAfterRefusal(req: IncomingMessage, res: ServerResponse, status: number): void {
  const unread = leftUnread.has(req);
  if (unread || closesConnection(status)) res.setHeader('Connection', 'close');
  if (!unread) return;
  const { socket } = req;
  res.once('finish', () => {
    // Node has ended the socket and would destroy it as soon as that end is written (`destroySoon`, for an answer
    // that closes the connection): with bytes unread, that resets the connection under the answer.
    // eslint-disable-next-line @typescript-eslint/unbound-method -- only compared with the listener, never called
    socket.removeListener('finish', socket.destroy);
    socket.end();
    setTimeout(() => socket.destroy(), UNREAD_LINGER_MS).unref();
  });
}

/**
 * What becomes of the rest of a refused body, `received` bytes of it read: a short rest is discarded, not
 * buffered (memory stays bounded, and the connection is kept); a long one, or one of unknown length, is not read
 * at all (endAfterRefusal closes its connection).
 */
function refuseRest(req: IncomingMessage, declared: number | undefined, received: number): void {
  if (declared !== undefined && declared - received <= MAX_DISCARDED_BYTES) {
    req.resume();
    return;
  }
  // Unread, the body fills its stream's buffer and Node stops reading the socket. Node would read and drop the
  // rest itself once the answer is written, unless the request has been read from: reading 0 bytes counts.
  req.pause();
  req.read(0);
  leftUnread.add(req);
}

export async function readBody(
  req: IncomingMessage,
  limit: number,
  lease: ByteLease,
  timing: BodyTiming,
): Promise<string> {
  return (await readBodyBytes(req, limit, lease, timing)).toString('utf8');
}

/** The body's bytes, read as readBody reads them (a large one in a buffer of its own, which may be transferred). */
export function readBodyBytes(
  req: IncomingMessage,
  limit: number,
  lease: ByteLease,
  timing: BodyTiming,
): Promise<Buffer> {
  const tooLarge = () =>
    new ReviewDecodeError(`request body exceeds the ${limit} byte limit (server.maxRequestBytes)`, 413);
  const header = req.headers['content-length'];
  const declared = header === undefined ? undefined : Number(header);
  if (declared !== undefined && declared > limit) {
    refuseRest(req, declared, 0);
    return Promise.reject(tooLarge());
  }
  if (declared !== undefined) {
    try {
      lease.expect(declared * WEIGHT_PER_BODY_BYTE);
    } catch (err) {
      refuseRest(req, declared, 0);
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const started = performance.now();
    const allowedMs = () =>
      (timing.bodyTimeoutSeconds + size / timing.minBodyBytesPerSecond) * 1000 - (performance.now() - started);
    // One timer for the whole body, moved on only when it fires: no work per chunk.
    let timer: NodeJS.Timeout | undefined;
    const watchPace = (ms: number) => {
      timer = setTimeout(() => {
        const left = allowedMs();
        if (left > 0) return watchPace(left);
        refuse(
          new ReviewDecodeError(
            `request body arrived too slowly: ${size} of ${declared ?? 'an undeclared number of'} bytes in ` +
              `${timing.bodyTimeoutSeconds} s plus one per ${timing.minBodyBytesPerSecond} bytes ` +
              '(server.bodyTimeoutSeconds, server.minBodyBytesPerSecond)',
            408,
          ),
        );
      }, ms);
      timer.unref();
    };
    const refuse = (err: Error) => {
      fail(err);
      refuseRest(req, declared, size);
    };
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > limit) return refuse(tooLarge());
      try {
        // Until its last piece a body is still arriving: it may not take the share kept for small reviews.
        lease.take(chunk.length * WEIGHT_PER_BODY_BYTE, size + chunk.length !== declared);
      } catch (err) {
        return refuse(err as Error);
      }
      chunks.push(chunk);
      size += chunk.length;
    };
    const onEnd = () => {
      cleanup();
      const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      // The pieces may go before the string is made of their copy.
      chunks.length = 0;
      resolve(whole);
    };
    // What was read is dropped, and its bytes (all the lease holds yet) given back at once, not when the answer
    // has been written: large bodies arriving together would otherwise shed each other until none is left.
    const fail = (err: Error) => {
      cleanup();
      chunks.length = 0;
      lease.release();
      reject(err);
    };
    const onError = fail;
    function cleanup() {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    }
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    watchPace(timing.bodyTimeoutSeconds * 1000);
  });
}
