/**
 * Reads a recording line by line without trusting it: a line longer than MAX_LINE_BYTES, or more than
 * MAX_RECORDED_REVIEWS lines, is an error naming the line, found before the line is held whole; blank lines
 * are skipped.
 */
import { createReadStream } from 'node:fs';
import { MAX_LINE_BYTES, RecordingLineError, parseRecordedReview, type RecordedReview } from './recorded-review.js';

/** Reviews one replay reads at most. */
export const MAX_RECORDED_REVIEWS = 100_000;

/** A recording that cannot be read as one: the message names the file and, when it is one line's fault, the line. */
export class RecordingFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RecordingFileError';
  }
}

export interface RecordingLine {
  /** 1-based, as an editor shows it. */
  readonly line: number;
  readonly text: string;
}

export interface RecordingLimits {
  readonly maxLineBytes?: number;
  readonly maxReviews?: number;
}

/** The non-blank lines of the file, in order. */
export async function* recordingLines(file: string, limits: RecordingLimits = {}): AsyncGenerator<RecordingLine> {
  const maxLineBytes = limits.maxLineBytes ?? MAX_LINE_BYTES;
  const maxReviews = limits.maxReviews ?? MAX_RECORDED_REVIEWS;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let line = 0;
  let reviews = 0;
  const finish = (): RecordingLine | undefined => {
    line++;
    const text = Buffer.concat(pending).toString('utf8');
    pending = [];
    pendingBytes = 0;
    if (text.trim() === '') return undefined;
    if (++reviews > maxReviews) {
      throw new RecordingFileError(`${file}: line ${line}: more than ${maxReviews} recorded reviews`);
    }
    return { line, text };
  };
  try {
    for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
      for (let start = 0; ;) {
        const end = chunk.indexOf(10, start);
        const piece = end === -1 ? chunk.subarray(start) : chunk.subarray(start, end);
        if (pendingBytes + piece.length > maxLineBytes) {
          throw new RecordingFileError(`${file}: line ${line + 1}: longer than ${maxLineBytes} bytes`);
        }
        pending.push(piece);
        pendingBytes += piece.length;
        if (end === -1) break;
        const found = finish();
        if (found) yield found;
        start = end + 1;
      }
    }
  } catch (err) {
    if (err instanceof RecordingFileError) throw err;
    throw new RecordingFileError(`cannot read ${file}: ${(err as Error).message}`);
  }
  if (pendingBytes > 0) {
    const found = finish();
    if (found) yield found;
  }
}

/** A recorded review and its line in the recording. */
export interface RecordedLine {
  readonly review: RecordedReview;
  /** 1-based, as an editor shows it. */
  readonly line: number;
}

/** The recorded reviews of the file, in order; a line that is not one is an error naming the file and the line. */
export async function* recordedReviews(file: string, routes: readonly string[]): AsyncGenerator<RecordedLine> {
  for await (const { line, text } of recordingLines(file)) {
    let review: RecordedReview;
    try {
      review = parseRecordedReview(text, routes);
    } catch (err) {
      if (err instanceof RecordingLineError) throw new RecordingFileError(`${file}: line ${line}: ${err.message}`);
      throw err;
    }
    yield { review, line };
  }
}
