/**
 * Writes sampled reviews to the recording (config `record:`) without slowing any: a review is sampled first
 * (most cost nothing more), then redacted and serialised, and its line queued; one writer appends queued lines
 * in batches. The queue is bounded in bytes and the file in size: a line that does not fit is dropped and
 * counted (`admission_gateway_recorded_reviews_total{result}`), never waited for. At `maxFileBytes` the
 * recording stops (it is not rotated): a recording is a sample to replay, and its beginning is as good as any.
 */
import { open, type FileHandle } from 'node:fs/promises';
import type { Logger } from '../base/log.js';
import { errorMessage } from '../base/errors.js';
import type { ReviewedRequest } from '../chain/reviewer.js';
import type { RecordConfig } from '../config/types.js';
import type { Metrics } from '../metrics/metrics.js';
import { MAX_LINE_BYTES, recordedReviewOf } from './recorded-review.js';
import { compileRedaction, type Redaction } from './redact.js';

/** Bytes of lines waiting for the writer at most; past it, reviews are dropped as `queue_full`. */
export const MAX_QUEUED_BYTES = 32 * 1024 * 1024;

export type RecordResult = 'written' | 'queue_full' | 'file_full' | 'too_large' | 'error';

export interface RecorderDeps {
  readonly metrics: Metrics;
  readonly log: Logger;
  /** [0, 1); Math.random unless a test fixes it. */
  readonly random?: () => number;
  readonly maxQueuedBytes?: number;
  /** What is redacted; compiled from `record.redact` unless given. */
  readonly redaction?: Redaction;
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
  private failed = false;
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
  }

  /** Whether the config records anything at all. */
  static enabled(config: RecordConfig): boolean {
    return config.sampleRate > 0 && config.path !== '';
  }

  /** `onReviewed`'s listener: the reviews not sampled cost nothing (their trace is never built); never waits for the disk. */
  offer(reviewed: ReviewedRequest): void {
    if (this.random() >= this.config.sampleRate || !this.routes.has(reviewed.traceInput.route)) return;
    let line: string;
    try {
      line = `${JSON.stringify(recordedReviewOf(reviewed, this.redaction))}\n`;
    } catch (err) {
      this.count('error');
      this.deps.log.warn({ err: errorMessage(err), uid: reviewed.request.uid }, 'recording: review not serialisable');
      return;
    }
    const bytes = Buffer.byteLength(line);
    if (bytes > MAX_LINE_BYTES) return this.count('too_large');
    if (this.failed) return this.count('error');
    if (this.queuedBytes + bytes > this.maxQueuedBytes) return this.count('queue_full');
    if (this.full || (this.size !== undefined && this.size + this.queuedBytes + bytes > this.config.maxFileBytes)) {
      this.full = true;
      return this.count('file_full');
    }
    this.queue.push(line);
    this.queuedBytes += bytes;
    this.writing ??= this.drain();
  }

  /** Writes what is queued, then closes the file. */
  async close(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.file) await (await this.file.catch(() => undefined))?.close();
  }

  private count(result: RecordResult, n = 1): void {
    this.deps.metrics.recordedReviews.inc({ result }, n);
  }

  private async drain(): Promise<void> {
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
        await file.write(Buffer.concat(kept));
        this.size! += bytes;
        this.count('written', kept.length);
      }
    } catch (err) {
      this.failed = true;
      this.count('error', this.queue.length + 1);
      this.queue = [];
      this.deps.log.error({ err: errorMessage(err), path: this.config.path }, 'recording stopped: cannot write');
    } finally {
      this.writing = undefined;
    }
  }

  private async openFile(): Promise<FileHandle> {
    const file = await open(this.config.path, 'a', 0o600);
    this.size = (await file.stat()).size;
    this.deps.log.info(
      { path: this.config.path, sampleRate: this.config.sampleRate, maxFileBytes: this.config.maxFileBytes },
      'recording sampled reviews',
    );
    return file;
  }
}
