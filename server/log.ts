/** The process logger: pino, JSON lines, admission payloads redacted unless debug (they may hold Secrets). */
import pino, { type Logger } from 'pino';
import type { LogConfig } from './config/types.js';

export type GatewayLogger = Logger;

export function createLogger(
  level: LogConfig['level'],
  destination: pino.DestinationStream = pino.destination({ dest: 1, sync: false }),
): GatewayLogger {
  return pino(
    {
      level,
      base: { service: 'admission-gateway' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: ['object', 'oldObject', 'request.object', 'request.oldObject'], censor: '[redacted]' },
    },
    destination,
  );
}
