/**
 * Reads a request body up to `limit` bytes, weighing it against the server's byte budget. A declared
 * Content-Length over the limit is refused before reading anything, and one the budget cannot hold is
 * refused (BudgetExceededError) before reading anything; a chunked body as soon as it crosses either.
 */
import type { IncomingMessage } from 'node:http';
import { ReviewDecodeError } from '../admission/review-decode-error.js';
import { WEIGHT_PER_BODY_BYTE, type ByteLease } from './byte-budget.js';

export function readBody(req: IncomingMessage, limit: number, lease: ByteLease): Promise<string> {
  const tooLarge = () =>
    new ReviewDecodeError(`request body exceeds the ${limit} byte limit (server.maxRequestBytes)`, 413);
  // The rest of a refused body is discarded, not buffered: memory stays bounded, and the client can finish
  // sending and read the answer instead of seeing its upload reset.
  const discardRest = () => req.resume();
  const header = req.headers['content-length'];
  const declared = header === undefined ? undefined : Number(header);
  if (declared !== undefined && declared > limit) {
    discardRest();
    return Promise.reject(tooLarge());
  }
  if (declared !== undefined) {
    try {
      lease.take(declared * WEIGHT_PER_BODY_BYTE);
    } catch (err) {
      discardRest();
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  return new Promise((resolve, reject) => {
    // With a declared length the body is copied into one buffer as it arrives (no list of pieces and no
    // second copy to join them); a chunked body is collected and joined.
    const whole = declared !== undefined ? Buffer.allocUnsafe(declared) : undefined;
    const chunks: Buffer[] = [];
    let size = 0;
    const refuse = (err: Error) => {
      cleanup();
      chunks.length = 0;
      discardRest();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > limit) return refuse(tooLarge());
      if (whole) {
        // The HTTP parser never delivers more than the declared length.
        chunk.copy(whole, size);
      } else {
        try {
          lease.take(chunk.length * WEIGHT_PER_BODY_BYTE);
        } catch (err) {
          return refuse(err as Error);
        }
        chunks.push(chunk);
      }
      size += chunk.length;
    };
    const onEnd = () => {
      cleanup();
      if (whole) resolve(whole.toString('utf8', 0, size));
      else resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8'));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    function cleanup() {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    }
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}
