/**
 * How a request body's arrival is judged while it is read or dropped: the pace it must keep (408 once behind), and
 * a client that closed its connection before the last byte (400).
 */
import { ReviewDecodeError } from '../admission/review-decode-error.js';
import type { ConnectionBounds } from '../config/types.js';

/**
 * How fast a body must arrive: within bodyTimeoutSeconds of the start of reading it, plus one second for every
 * minBodyBytesPerSecond bytes received.
 */
export type BodyTiming = Pick<ConnectionBounds, 'bodyTimeoutSeconds' | 'minBodyBytesPerSecond'>;

/**
 * What to answer for a request whose body failed to arrive with `err`: a client that closed its connection before
 * the last byte gets a 400 saying so (nobody reads it, but the log and the metrics tell it from the gateway's own
 * failure), anything else is passed on.
 */
export function bodyFailure(err: Error, received: number, declared: number | undefined): Error {
  if ((err as NodeJS.ErrnoException).code !== 'ECONNRESET') return err;
  return new ReviewDecodeError(
    `the client closed the connection after ${received} of ${declared ?? 'an undeclared number of'} body bytes`,
    400,
  );
}

/**
 * Watches that a body keeps up the pace `timing` asks from `started` on, `received()` bytes of it arrived so far,
 * and calls `onLate` with the 408 to answer once it falls behind. One timer, moved on only when it fires: no work
 * per chunk. Returns what stops the watch.
 */
export function watchPace(
  timing: BodyTiming,
  declared: number | undefined,
  started: number,
  received: () => number,
  onLate: (err: ReviewDecodeError) => void,
): () => void {
  let timer: NodeJS.Timeout | undefined;
  const schedule = (ms: number) => {
    timer = setTimeout(() => {
      const left =
        (timing.bodyTimeoutSeconds + received() / timing.minBodyBytesPerSecond) * 1000 - (performance.now() - started);
      if (left > 0) return schedule(left);
      onLate(
        new ReviewDecodeError(
          `request body arrived too slowly: ${received()} of ${declared ?? 'an undeclared number of'} bytes in ` +
            `${timing.bodyTimeoutSeconds} s plus one per ${timing.minBodyBytesPerSecond} bytes ` +
            '(server.bodyTimeoutSeconds, server.minBodyBytesPerSecond)',
          408,
        ),
      );
    }, ms);
    timer.unref();
  };
  schedule(timing.bodyTimeoutSeconds * 1000);
  return () => clearTimeout(timer);
}
