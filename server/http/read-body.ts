/**
 * Reads a request body up to `limit` bytes. A declared Content-Length over the limit is refused before
 * reading anything; a chunked body is refused as soon as it crosses the limit.
 */
import type { IncomingMessage } from 'node:http';
import { ReviewDecodeError } from '../errors.js';

export function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const tooLarge = () =>
    new ReviewDecodeError(`request body exceeds the ${limit} byte limit (server.maxRequestBytes)`, 413);
  // The rest of an oversized body is discarded, not buffered: memory stays bounded, and the client can
  // finish sending and read the 413 instead of seeing its upload reset.
  const discardRest = () => req.resume();
  const declared = Number(req.headers['content-length']);
  if (declared > limit) {
    discardRest();
    return Promise.reject(tooLarge());
  }

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        chunks.length = 0;
        discardRest();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8'));
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
