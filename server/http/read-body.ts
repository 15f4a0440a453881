/**
 * Reads a request body up to `limit` bytes, weighing it against the server's byte budget as its bytes arrive.
 * A declared Content-Length over the limit is refused before reading anything, and so is one the budget could
 * not hold now or ever (BudgetExceededError); the declared length is never held, only what has arrived, so a
 * client that declares a large body and sends it slowly holds almost nothing. A body that arrives too slowly
 * (BodyTiming) is refused with 408 and its connection closed. refused-body.ts decides what becomes of a refused
 * body's rest.
 */
import type { IncomingMessage } from 'node:http';
import { ReviewDecodeError } from '../admission/review-decode-error.js';
import { bodyFailure, watchPace, type BodyTiming } from './body-arrival.js';
import { WEIGHT_PER_BODY_BYTE, type ByteLease } from './byte-budget.js';
import { refuseBody } from './refused-body.js';

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
  const started = performance.now();
  const refused = (err: unknown, received: number) => refuseBody(req, declared, received, timing, started, err);
  if (declared !== undefined && declared > limit) {
    return refused(tooLarge(), 0);
  }
  if (declared !== undefined) {
    try {
      lease.expect(declared * WEIGHT_PER_BODY_BYTE);
    } catch (err) {
      return refused(err, 0);
    }
  }

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // What was read is dropped, and its bytes (all the lease holds yet) given back at once, not when the answer
    // has been written: large bodies arriving together would otherwise shed each other until none is left.
    const refuse = (err: Error, received: number) => {
      cleanup();
      chunks.length = 0;
      lease.release();
      refused(err, received).then(resolve, reject);
    };
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > limit) {
        return refuse(tooLarge(), size + chunk.length);
      }
      try {
        // Until its last piece a body is still arriving: it may not take the share kept for small reviews.
        lease.take(chunk.length * WEIGHT_PER_BODY_BYTE, size + chunk.length !== declared);
      } catch (err) {
        return refuse(err as Error, size + chunk.length);
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
    const onError = (err: Error) => {
      cleanup();
      chunks.length = 0;
      lease.release();
      reject(bodyFailure(err, size, declared));
    };
    const stopPace = watchPace(
      timing,
      declared,
      started,
      () => size,
      (late) => refuse(late, size),
    );
    function cleanup() {
      stopPace();
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    }
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}
