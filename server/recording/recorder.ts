/**
 * Writes sampled reviews to the recording (config `record:`) without slowing any: a review is sampled first
 * (most cost nothing more), then redacted and serialised, and its line queued; one writer appends queued lines
 * in batches. The queue is bounded in bytes and the file in size: a line that does not fit is dropped and
 * counted (`admission_gateway_recorded_reviews_total{result}`), never waited for. At `maxFileBytes` the
 * recording stops (it is not rotated): a recording is a sample to replay, and its beginning is as good as any.
 * The file is opened at start (openRecording): a path that cannot be appended to stops the start, as any
 * other file of the config does. One that later cannot be written is closed and opened again by a later
 * review, after a wait that doubles with each failure (RETRY_MIN_MS to RETRY_MAX_MS); meanwhile reviews are
 * dropped as `error` and `admission_gateway_recording_failing` is 1. Readiness is left alone: a sample for
 * replay is not worth taking the webhook out of service.
 */
import { open, type FileHandle } from 'node:fs/promises';
import type { Logger } from '../base/log.js';
import { ConfigError, errorMessage } from '../base/errors.js';
import type { ReviewedRequest } from '../dispatch/reviewer.js';
import { locateConfigError } from '../config/field-positions.js';
import type { GatewayConfig, RecordConfig } from '../config/types.js';
import type { Metrics } from '../metrics/metrics.js';
import { MAX_LINE_BYTES, recordedReviewOf } from './recorded-review.js';
import { compileRedaction, type Redaction } from './redact.js';

/** Bytes of lines waiting for the writer at most; past it, reviews are dropped as `queue_full`. */
export const MAX_QUEUED_BYTES = 32 * 1024 * 1024;
/** The wait after a first failure to write before the file is opened again, and the longest wait. */
export const RETRY_MIN_MS = 1000;
export const RETRY_MAX_MS = 60_000;

export type RecordResult = 'written' | 'queue_full' | 'file_full' | 'too_large' | 'error';

export interface RecorderDeps {
  readonly metrics: Metrics;
  readonly log: Logger;
  /** [0, 1); Math.random unless a test fixes it. */
  readonly random?: () => number;
  readonly maxQueuedBytes?: number;
  /** What is redacted; compiled from `record.redact` unless given. */
  readonly redaction?: Redaction;
  /** Milliseconds, for the wait before a retry; performance.now unless a test fixes it. */
  readonly now?: () => number;
}

export class Recorder {
  private readonly redaction: Redaction;
  private readonly routes: ReadonlySet<string>;
  private readonly random: () => number;
  private readonly maxQueuedBytes: number;
  private queue: string[] = [];
  private queuedBytes = 0;
  /** Bytes in the file; undefined until it is opened. */
  private size: number | undefined;
  private file: Promise<FileHandle> | undefined;
  private writing: Promise<void> | undefined;
  /** The file could not be opened or written: no review is queued before `retryAt`. */
  private failing = false;
  private retryAt = 0;
  private retryMs = RETRY_MIN_MS;
  private readonly now: () => number;
  /** A line did not fit: the recording has stopped. */
  private full = false;

  constructor(
    private readonly config: RecordConfig,
    private readonly deps: RecorderDeps,
  ) {
    this.redaction = deps.redaction ?? compileRedaction(config.redact);
    this.routes = new Set(config.routes);
    this.random = deps.random ?? Math.random;
    this.maxQueuedBytes = deps.maxQueuedBytes ?? MAX_QUEUED_BYTES;
    this.now = deps.now ?? (() => performance.now());
  }

  /** Whether the config records anything at all. */
  static enabled(config: RecordConfig): boolean {
    return config.sampleRate > 0 && config.path !== '';
  }

  /** `onReviewed`'s listener: the reviews not sampled cost nothing (their trace is never built); never waits for the disk. */
  offer(reviewed: ReviewedRequest): void {
    if (!this.samples(reviewed.traceInput.route)) return;
    this.append(reviewed.request.uid, () => JSON.stringify(recordedReviewOf(reviewed, this.redaction)));
  }

  /** Whether a review of `route` answered now is to be recorded (drawn once per review). */
  samples(route: string): boolean {
    return this.random() < this.config.sampleRate && this.routes.has(route);
  }

  /**
   * Appends a sampled review's line, made by `serialise` (a RecordedReview as JSON; a worker of the large-review
   * lane makes it there, and this throws what it could not).
   */
  append(uid: string, serialise: () => string): void {
    // Waiting to open the file again: not even serialised.
    if (this.failing && this.now() < this.retryAt) return this.count('error');
    let line: string;
    try {
      line = `${serialise()}\n`;
    } catch (err) {
      this.count('error');
      this.deps.log.warn({ err: errorMessage(err), uid }, 'recording: review not serialisable');
      return;
    }
    const bytes = Buffer.byteLength(line);
    if (bytes > MAX_LINE_BYTES) return this.count('too_large');
    if (this.queuedBytes + bytes > this.maxQueuedBytes) return this.count('queue_full');
    if (this.full || (this.size !== undefined && this.size + this.queuedBytes + bytes > this.config.maxFileBytes)) {
      this.full = true;
      return this.count('file_full');
    }
    this.queue.push(line);
    this.queuedBytes += bytes;
    this.writing ??= this.drain();
  }

  /** Opens the file now rather than at the first sampled review; throws why it cannot be appended to. */
  async open(): Promise<void> {
    const file = (this.file ??= this.openFile());
    try {
      await file;
    } catch (err) {
      if (this.file === file) this.file = undefined;
      throw err;
    }
  }

  /** Resolves once what is queued is written (or lost). */
  async idle(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** Writes what is queued, then closes the file. */
  async close(): Promise<void> {
    await this.idle();
    if (this.file) await (await this.file.catch(() => undefined))?.close();
  }

  private count(result: RecordResult, n = 1): void {
    this.deps.metrics.recordedReviews.inc({ result }, n);
  }

  private async drain(): Promise<void> {
    let writing = 0;
    try {
      const file = await (this.file ??= this.openFile());
      while (this.queue.length > 0) {
        // Lines queued before the file's size was known: those past the bound are dropped, and the rest after.
        const lines = this.queue;
        this.queue = [];
        this.queuedBytes = 0;
        const kept: Buffer[] = [];
        let bytes = 0;
        for (const line of lines) {
          const buffer = Buffer.from(line);
          if (this.full || this.size! + bytes + buffer.length > this.config.maxFileBytes) {
            this.full = true;
            continue;
          }
          kept.push(buffer);
          bytes += buffer.length;
        }
        if (kept.length < lines.length) this.count('file_full', lines.length - kept.length);
        if (kept.length === 0) continue;
        writing = kept.length;
        await writeAll(file, Buffer.concat(kept));
        writing = 0;
        this.size! += bytes;
        this.count('written', kept.length);
        if (this.failing) this.recovered();
      }
    } catch (err) {
      this.failed(err, writing + this.queue.length);
    } finally {
      this.writing = undefined;
    }
  }

  /** Drops what was being written and what is queued, closes the file, and waits before opening it again. */
  private failed(err: unknown, lost: number): void {
    this.count('error', lost);
    this.queue = [];
    this.queuedBytes = 0;
    const file = this.file;
    this.file = undefined;
    this.size = undefined;
    void file?.then((f) => f.close()).catch(() => undefined);
    this.retryAt = this.now() + this.retryMs;
    if (!this.failing) {
      this.failing = true;
      this.deps.metrics.recordingFailing.set(1);
    }
    this.deps.log.error(
      { err: errorMessage(err), path: this.config.path, retryInMs: this.retryMs },
      'recording failing: cannot write; reviews are dropped until it can',
    );
    this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
  }

  private recovered(): void {
    this.failing = false;
    this.retryMs = RETRY_MIN_MS;
    this.deps.metrics.recordingFailing.set(0);
    this.deps.log.info({ path: this.config.path }, 'recording written again');
  }

  private async openFile(): Promise<FileHandle> {
    const file = await open(this.config.path, 'a+', 0o600);
    try {
      let { size } = await file.stat();
      // A write that failed may have left part of a line: the next line starts on a line of its own.
      const last = Buffer.alloc(1);
      if (size > 0 && (await file.read(last, 0, 1, size - 1)).bytesRead === 1 && last[0] !== 0x0a) {
        await writeAll(file, Buffer.from('\n'));
        size++;
      }
      this.size = size;
    } catch (err) {
      await file.close().catch(() => undefined);
      throw err;
    }
    this.deps.log.info(
      { path: this.config.path, sampleRate: this.config.sampleRate, maxFileBytes: this.config.maxFileBytes },
      'recording sampled reviews',
    );
    return file;
  }
}

/**
 * Opens the recording at start: a `record.path` that cannot be appended to (a missing folder, no permission, a
 * directory) is a config error naming the field and its line (exit 2), not a recording silently off until a
 * restart.
 */
export async function openRecording(
  recorder: Recorder,
  config: Pick<GatewayConfig, 'file' | 'locateField' | 'record'>,
): Promise<void> {
  try {
    await recorder.open();
  } catch (err) {
    const refused = new ConfigError(
      config.file,
      'record.path',
      `cannot append to the recording "${config.record.path}": ${withoutPath(errorMessage(err))}`,
    );
    throw locateConfigError(refused, config.file, config.locateField);
  }
}

/** `ENOENT: no such file or directory` of `ENOENT: no such file or directory, open '/x'`: the path is said once. */
const withoutPath = (message: string): string => message.replace(/, \w+ '.*'$/s, '');

/** Writes all of `buffer`: one write may take only part of it. */
async function writeAll(file: FileHandle, buffer: Buffer): Promise<void> {
  for (let at = 0; at < buffer.length;) at += (await file.write(buffer, at)).bytesWritten;
}
