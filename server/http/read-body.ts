/**
 * Reads a request body up to `limit` bytes, weighing it against the server's byte budget as its bytes arrive.
 * A declared Content-Length over the limit is refused before reading anything, and so is one the budget could
 * not hold now or ever (BudgetExceededError); the declared length is never held, only what has arrived, so a
 * client that declares a large body and sends it slowly holds almost nothing. A body that arrives too slowly
 * (BodyTiming) is refused with 408 and its connection closed. A body refused for now (429: the budget is full) is
 * read to its end and dropped before the answer, since the client sends it again; refused-body.ts decides what
 * becomes of the rest of any other.
 */
import type { IncomingMessage } from 'node:http';
import { ReviewDecodeError } from '../admission/review-decode-error.js';
import { bodyFailure, watchPace, type BodyTiming } from './body-arrival.js';
import { WEIGHT_PER_BODY_BYTE, type ByteLease } from './byte-budget.js';
import { refuseRest, sentAgain } from './refused-body.js';

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
  let atHeaders: Error | undefined;
  if (declared !== undefined && declared > limit) atHeaders = tooLarge();
  else if (declared !== undefined) {
    try {
      lease.expect(declared * WEIGHT_PER_BODY_BYTE);
    } catch (err) {
      atHeaders = err as Error;
    }
  }
  // Refused for now, it is read to its end like a body refused on the way (below); refused for good, not.
  if (atHeaders && !sentAgain(atHeaders)) {
    refuseRest(req, declared, 0);
    return Promise.reject(atHeaders);
  }

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    /** Bytes arrived: held until a refusal, counted after it. */
    let size = 0;
    /**
     * A refusal the client sends again (429), once made: the rest is read and dropped, and this is answered after
     * the last byte. A client that sends a body again from the reader it rewound (client-go before Kubernetes 1.26,
     * the apiserver's webhook client) would otherwise go on reading that reader for the first request after the
     * rewind, and send the review again with only its tail, or nothing (docs/decisions.md, "Request bodies: the
     * gateway's own reader, not a body-parser middleware").
     */
    let refusal = atHeaders;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (refusal) return;
      if (size > limit) return refuse(tooLarge());
      try {
        // Until its last piece a body is still arriving: it may not take the share kept for small reviews.
        lease.take(chunk.length * WEIGHT_PER_BODY_BYTE, size !== declared);
      } catch (err) {
        return refuse(err as Error);
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      if (refusal) return reject(refusal);
      const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      // The pieces may go before the string is made of their copy.
      chunks.length = 0;
      resolve(whole);
    };
    const onError = (err: Error) => {
      letGo();
      stop();
      reject(bodyFailure(err, size, declared));
    };
    const stopPace = watchPace(timing, declared, performance.now(), () => size, refuse);
    // What was read is dropped, and its bytes (all the lease holds yet) given back at once, not when the answer
    // has been written: large bodies arriving together would otherwise shed each other until none is left.
    function letGo() {
      chunks.length = 0;
      lease.release();
    }
    function refuse(err: Error) {
      letGo();
      if (declared !== undefined && sentAgain(err)) {
        refusal = err;
        return;
      }
      stop();
      refuseRest(req, declared, size);
      reject(err);
    }
    function stop() {
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
