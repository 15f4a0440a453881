/** The process logger: pino, JSON lines, admission payloads redacted unless debug (they may hold Secrets). */
import pino, { type Logger } from 'pino';
import type { LogConfig } from './config/types.js';

export type GatewayLogger = Logger;

/** How long a log line may wait in the buffer. */
const FLUSH_EVERY_MS = 100;

/**
 * Standard output, written in batches of up to 8 KiB (or every 100 ms): one write per review line cost
 * more CPU than the rest of an empty chain's review. Call `logger.flush()` before exiting.
 */
export function bufferedStdout(): pino.DestinationStream {
  const stream = pino.destination({ dest: 1, sync: false, minLength: 8192 });
  setInterval(() => stream.flush(), FLUSH_EVERY_MS).unref();
  return stream;
}

/** ISO time, formatted once per millisecond however many lines share it. */
function isoTimeCached(): () => string {
  let lastMs = 0;
  let last = '';
  return () => {
    const now = Date.now();
    if (now !== lastMs) {
      lastMs = now;
      last = `,"time":"${new Date(now).toISOString()}"`;
    }
    return last;
  };
}

export function createLogger(
  level: LogConfig['level'],
  destination: pino.DestinationStream = bufferedStdout(),
): GatewayLogger {
  return pino(
    {
      level,
      base: { service: 'admission-gateway' },
      timestamp: isoTimeCached(),
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: ['object', 'oldObject', 'request.object', 'request.oldObject'], censor: '[redacted]' },
    },
    destination,
  );
}
