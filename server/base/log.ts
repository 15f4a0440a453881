/**
 * The Logger every module (and a plugin, as `ctx.log`) logs through, and the process logger behind it: pino,
 * JSON lines, admission payloads redacted unless debug (they may hold Secrets).
 */
import pino from 'pino';

/**
 * What every module logs through, and what a plugin gets as `ctx.log`: the part of pino's logger the
 * gateway uses, so that a test can pass a plain object.
 */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** A Logger that binds fields to child loggers (the review path binds the uid, then the step). */
export interface BindableLogger extends Logger {
  child(bindings: object): BindableLogger;
  isLevelEnabled?(level: string): boolean;
  /**
   * Logs `fields` at info as `info` would, for fields that are plain JSON data (no errors, nothing a serialiser
   * or redaction applies to), serialised in one `JSON.stringify`. The process logger has it (createLogger); the
   * review path uses it for its one line a review when there, `info` otherwise.
   */
  infoData?(fields: object, msg: string): void;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** How long a log line may wait in the batch. */
const FLUSH_EVERY_MS = 100;
/** Characters collected before a batch is handed to the file stream. */
const BATCH_CHARS = 8192;

type FileStream = ReturnType<typeof pino.destination>;

/**
 * Log lines joined into one string per BATCH_CHARS before they reach sonic-boom, whose write() measures the
 * byte length of its whole pending buffer on every call; this costs a push per line and one join per batch
 * (docs/decisions.md, "Log lines are written in batches").
 */
export class LineBatch implements pino.DestinationStream {
  private lines: string[] = [];
  private chars = 0;

  constructor(private readonly target: FileStream) {}

  write(line: string): void {
    this.lines.push(line);
    this.chars += line.length;
    if (this.chars >= BATCH_CHARS) this.release();
  }

  /** Hands the batch to the file stream, which writes it asynchronously. */
  release(): void {
    if (this.chars === 0) return;
    const data = this.lines.join('');
    this.lines = [];
    this.chars = 0;
    this.target.write(data);
  }

  flush(cb?: (err?: Error) => void): void {
    this.release();
    this.target.flush(cb);
  }

  flushSync(): void {
    this.release();
    this.target.flushSync();
  }
}

/**
 * Standard output, written in batches of up to 8 KiB (or every 100 ms) rather than one write per line
 * (docs/decisions.md, "Log lines are written in batches"). Call `logger.flush()` before exiting; an exit
 * without it still writes what is batched.
 */
export function bufferedStdout(): pino.DestinationStream {
  const batch = new LineBatch(pino.destination({ dest: 1, sync: false }));
  setInterval(() => batch.release(), FLUSH_EVERY_MS).unref();
  process.once('exit', () => {
    try {
      batch.flushSync();
    } catch {
      // Nothing more can be done for the log at exit; the exit code must stay the gateway's own.
    }
  });
  return batch;
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

/**
 * The process logger: JSON lines with the level's name, an ISO time and `service` (the gateway, or a provider
 * served by the SDK, which logs in the same format).
 */
export function createLogger(
  level: LogLevel,
  destination: pino.DestinationStream = bufferedStdout(),
  service = 'admission-gateway',
): pino.Logger & Required<Pick<BindableLogger, 'infoData'>> {
  const logger = pino(
    {
      level,
      base: { service },
      timestamp: isoTimeCached(),
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: ['object', 'oldObject', 'request.object', 'request.oldObject'], censor: '[redacted]' },
    },
    destination,
  );
  // A child logger is made from its parent with Object.create, so children have it too, with their bindings.
  return Object.assign(logger, { infoData });
}

const { chindingsSym, lsCacheSym, needsMetadataGsym, streamSym, timeSym } = pino.symbols;
/** pino's number for `info`. */
const INFO = 30;

/**
 * The line pino writes for `info(fields, msg)` with createLogger's options (level label, time, service and the
 * child's bindings, then the fields and the message), made from one `JSON.stringify` of the fields. pino's own
 * serialiser escapes each key and short string character by character in JavaScript, a large part of an ordinary
 * review's CPU (docs/decisions.md, "The review line is serialised in one call"). It reads the logger's state
 * through `pino.symbols`, which pino exposes for such integrations.
 */
function infoData(this: pino.Logger, fields: object, msg: string): void {
  if (!this.isLevelEnabled('info')) return;
  const state = this as unknown as Record<symbol, unknown>;
  const stream = state[streamSym] as pino.DestinationStream & Record<symbol, unknown>;
  // A multistream wants each line's level and object beside it: pino's own path gives them.
  if (stream[needsMetadataGsym] === true) return this.info(fields, msg);
  let json: string;
  try {
    json = JSON.stringify(fields);
  } catch {
    // Not plain data after all (a cycle, a BigInt): pino's serialiser copes with what it can.
    return this.info(fields, msg);
  }
  const head = (state[lsCacheSym] as Record<number, string>)[INFO]! + (state[timeSym] as () => string)();
  const data = json.length > 2 ? `,${json.slice(1, -1)}` : '';
  stream.write(`${head}${state[chindingsSym] as string}${data},"msg":${JSON.stringify(msg)}}\n`);
}
