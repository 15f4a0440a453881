/**
 * The log of a worker of the large-review lane: its lines go to the main thread as records, which logs them
 * with its own logger, so that they come out where and as every other line does.
 */
import type { BindableLogger, Logger, LogLevel } from '../base/log.js';

type Level = 'debug' | 'info' | 'warn' | 'error';

/** One line: its level, its fields (the bindings of the logger it was written with included), its message. */
export interface LogRecord {
  readonly level: Level;
  readonly fields: object;
  readonly msg?: string;
}

const RANK: Readonly<Record<LogLevel, number>> = { debug: 0, info: 1, warn: 2, error: 3, silent: 4 };

/** A logger whose lines at `level` and above are handed to `send`. */
export function forwardingLogger(level: LogLevel, send: (record: LogRecord) => void, bindings = {}): BindableLogger {
  const line =
    (at: Level) =>
    (obj: object, msg?: string): void => {
      if (RANK[at] < RANK[level]) return;
      send({ level: at, fields: { ...bindings, ...obj }, ...(msg === undefined ? {} : { msg }) });
    };
  return {
    debug: line('debug'),
    info: line('info'),
    warn: line('warn'),
    error: line('error'),
    child: (more: object) => forwardingLogger(level, send, { ...bindings, ...more }),
    isLevelEnabled: (at: string) => (RANK[at as LogLevel] ?? RANK.silent) >= RANK[level],
  };
}

/** Writes a forwarded line with the main thread's logger. */
export function logRecord(log: Logger, record: LogRecord): void {
  const { level, fields, msg } = record;
  if (level === 'debug') log.debug(fields, msg);
  else if (level === 'info') log.info(fields, msg);
  else if (level === 'warn') log.warn(fields, msg);
  else if (level === 'error') log.error(fields, msg);
}
