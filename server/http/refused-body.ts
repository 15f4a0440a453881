/**
 * What becomes of a refused request body's rest and of its connection. A body refused for now (429: the budget is
 * full) is sent again by its client, so read-body.ts reads it to its end before the answer (sentAgain). Of any
 * other refused body's rest at most 256 KiB is read; a longer rest is left unread and the connection closed
 * gracefully after the answer (endAfterRefusal).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BudgetExceededError } from './byte-budget.js';

/**
 * The most of a refused body's rest that is read and thrown away to keep its connection, as Go's HTTP server
 * (the apiserver's) does, when the client will not send it again. A longer rest, or one of unknown length, is
 * left unread: a body refused for good costs no more than its headers, however large it is.
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
 * Whether a refusal is one the client sends again: 429, a memory budget full for now. Its body's rest is read
 * before the answer goes out (read-body.ts), never left unread.
 */
export function sentAgain(err: Error): boolean {
  return err instanceof BudgetExceededError && !err.never;
}

/**
 * What becomes of the rest of a refused body, `received` bytes of it read, when the client will not send it
 * again: a short rest is discarded, not buffered (memory stays bounded, and the connection is kept); a long one,
 * or one of unknown length, is not read at all (endAfterRefusal closes its connection).
 */
export function refuseRest(req: IncomingMessage, declared: number | undefined, received: number): void {
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
