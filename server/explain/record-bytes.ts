/**
 * Strings and numbers written as bytes and read back exactly: the encoding of a kept trace (packed-trace.ts).
 * A count is a LEB128 varint; any other number its eight IEEE bytes; a string its length and its UTF-16 code units,
 * one byte each when every unit fits in one (nearly always), else two. Code units rather than UTF-8 so that any
 * string, a lone surrogate included, reads back as it was. A short string is written by a loop over it, a long
 * one by one call out of JavaScript, whichever is cheaper (docs/decisions.md, "Decision traces: what a trace keeps
 * is bounded, the buffer has a byte ceiling, lookups are indexed").
 */

/** What the writer holds at first; it doubles when a record needs more. */
const INITIAL_BYTES = 4096;
/** Under this length a string's head is one byte. */
const SHORT = 64;
/** From this length a string is written by Buffer#write rather than a loop. */
const LONG = 96;
/** A code unit that does not fit in one byte. */
const WIDE = /[\u0100-\uffff]/;

export class RecordWriter {
  /** The record written so far: `bytes[0, length)`. */
  bytes = Buffer.allocUnsafeSlow(INITIAL_BYTES);
  length = 0;
  private view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);

  /** Starts a new record over the last. */
  reset(): void {
    this.length = 0;
  }

  /** A whole number from 0 to 2^32 − 1: a length, a count, a set of flags. */
  count(n: number): void {
    this.room(5);
    const bytes = this.bytes;
    let at = this.length;
    while (n > 0x7f) {
      bytes[at++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    bytes[at++] = n;
    this.length = at;
  }

  number(x: number): void {
    this.room(8);
    this.view.setFloat64(this.length, x, true);
    this.length += 8;
  }

  /** Writes again, at `at`, a count of one byte written there before: a part known only once the rest is. */
  recount(at: number, n: number): void {
    if (n > 0x7f || this.bytes[at]! > 0x7f) throw new Error(`a count of one byte at ${at} cannot become ${n}`);
    this.bytes[at] = n;
  }

  /** Writes again, at `at`, a number written there before. */
  renumber(at: number, x: number): void {
    this.view.setFloat64(at, x, true);
  }

  string(s: string): void {
    const n = s.length;
    if (n >= SHORT) return this.longer(s);
    // Its head (twice its length, plus one when two-byte) is under 128: one byte.
    this.room(1 + 2 * n);
    const bytes = this.bytes;
    const start = this.length;
    let at = start + 1;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c > 0xff) return this.wide(s, start, 1);
      bytes[at++] = c;
    }
    bytes[start] = 2 * n;
    this.length = at;
  }

  /** A string whose head takes more than one byte: by the loop under LONG units, by Buffer#write from there. */
  private longer(s: string): void {
    const n = s.length;
    // Twice the length plus one (a string of two-byte units) takes as many varint bytes as twice the length.
    const head = varintBytes(2 * n);
    this.room(head + 2 * n);
    const bytes = this.bytes;
    const start = this.length;
    if (n >= LONG) {
      if (WIDE.test(s)) return this.wide(s, start, head);
      this.head(start, 2 * n);
      this.length = start + head + bytes.write(s, start + head, n, 'latin1');
      return;
    }
    let at = start + head;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c > 0xff) return this.wide(s, start, head);
      bytes[at++] = c;
    }
    this.head(start, 2 * n);
    this.length = at;
  }

  /** `s` again, from `start`, two bytes a unit. */
  private wide(s: string, start: number, head: number): void {
    const bytes = this.bytes;
    let at = start + head;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      bytes[at++] = c & 0xff;
      bytes[at++] = c >>> 8;
    }
    this.head(start, 2 * s.length + 1);
    this.length = at;
  }

  private head(at: number, n: number): void {
    const bytes = this.bytes;
    while (n > 0x7f) {
      bytes[at++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    bytes[at] = n;
  }

  private room(n: number): void {
    if (this.length + n <= this.bytes.length) return;
    const bigger = Buffer.allocUnsafeSlow(Math.max(2 * this.bytes.length, this.length + n));
    this.bytes.copy(bigger, 0, 0, this.length);
    this.bytes = bigger;
    this.view = new DataView(bigger.buffer, bigger.byteOffset, bigger.byteLength);
  }
}

function varintBytes(n: number): number {
  let bytes = 1;
  while (n > 0x7f) {
    bytes++;
    n = Math.floor(n / 128);
  }
  return bytes;
}

/** Reads a record a RecordWriter wrote, in the order it was written. */
export class RecordReader {
  private readonly view: DataView;

  constructor(
    private readonly bytes: Buffer,
    private at: number,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  count(): number {
    const bytes = this.bytes;
    let n = 0;
    let scale = 1;
    // A count the writer wrote takes at most five bytes; anything else is a record misread, said at once.
    for (let i = 0; i < 5 && this.at < bytes.length; i++) {
      const b = bytes[this.at++]!;
      n += (b & 0x7f) * scale;
      if (b < 0x80) return n;
      scale *= 128;
    }
    throw new Error(`a trace record misread: no count ends before byte ${this.at}`);
  }

  number(): number {
    const x = this.view.getFloat64(this.at, true);
    this.at += 8;
    return x;
  }

  string(): string {
    const head = this.count();
    const wide = head % 2 === 1;
    const end = this.at + (wide ? head - 1 : head / 2);
    const s = this.bytes.toString(wide ? 'utf16le' : 'latin1', this.at, end);
    this.at = end;
    return s;
  }
}
