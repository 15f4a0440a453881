/**
 * A CEL value as a short text for a person reading a decision trace: at most `maxChars` characters (and a note of
 * what was left out), however large or deep the value. It walks only as far as it writes, so a list of 40,000
 * containers costs what its first few do; strings are cut before they are escaped.
 */
import { Optional } from '@marcbachmann/cel-js';

/** Characters a preview has at most, unless the caller says otherwise. */
export const MAX_PREVIEW_CHARS = 256;

class Writer {
  text = '';
  constructor(private readonly max: number) {}

  get full(): boolean {
    return this.text.length >= this.max;
  }

  put(s: string): void {
    this.text += s;
  }

  string(s: string): void {
    const room = Math.max(this.max - this.text.length, 0);
    // JSON.stringify escapes control characters and quotes: what the trace shows is one line, read as written.
    this.text += room >= s.length ? JSON.stringify(s) : `${JSON.stringify(s.slice(0, room))}…`;
  }
}

function write(w: Writer, value: unknown): void {
  if (w.full) return w.put('…');
  switch (typeof value) {
    case 'string':
      return w.string(value);
    case 'bigint':
    case 'number':
    case 'boolean':
      return w.put(String(value));
    case 'undefined':
      return w.put('null');
    case 'object':
      break;
    default:
      return w.put(`<${typeof value}>`);
  }
  if (value === null) return w.put('null');
  if (value instanceof Optional) {
    if (!value.hasValue()) return w.put('optional.none()');
    w.put('optional.of(');
    write(w, value.value());
    return w.put(')');
  }
  if (value instanceof Uint8Array) return w.put(`<${value.length} bytes>`);
  if (Array.isArray(value)) return writeList(w, value as readonly unknown[]);
  if (value instanceof Map) return writeEntries(w, (value as Map<unknown, unknown>).entries(), value.size);
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) return writeEntries(w, entriesOf(value), undefined);
  // A library value (an IP, a quantity, a URL) reads as its text, which came from a string of the request.
  const text = (value as { toString: (this: unknown) => string }).toString;
  if (text !== Object.prototype.toString) return w.string(String(text.call(value)));
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return w.put(`<${typeof name === 'string' ? name : 'object'}>`);
}

function writeList(w: Writer, list: readonly unknown[]): void {
  w.put('[');
  let i = 0;
  for (; i < list.length && !w.full; i++) {
    if (i > 0) w.put(', ');
    write(w, list[i]);
  }
  if (i < list.length) w.put(`${i > 0 ? ', ' : ''}… ${list.length - i} more`);
  w.put(']');
}

/** A plain object's own keys, one at a time (a for-in over an object of 40,000 keys stops when the text is full). */
function* entriesOf(object: object): Generator<[string, unknown]> {
  for (const key in object) if (Object.hasOwn(object, key)) yield [key, (object as Record<string, unknown>)[key]];
}

function writeEntries(w: Writer, entries: Iterator<[unknown, unknown]>, size: number | undefined): void {
  w.put('{');
  let n = 0;
  for (let next = entries.next(); !next.done; next = entries.next()) {
    if (w.full) {
      w.put(`${n > 0 ? ', ' : ''}…${size === undefined ? '' : ` ${size - n} more`}`);
      break;
    }
    if (n++ > 0) w.put(', ');
    const [key, v] = next.value;
    write(w, key);
    w.put(': ');
    write(w, v);
  }
  w.put('}');
}

/** `value` as text of about `maxChars` characters at most (a few more for the closing brackets and notes). */
export function previewValue(value: unknown, maxChars = MAX_PREVIEW_CHARS): string {
  const w = new Writer(maxChars);
  write(w, value);
  // Each level still open when the text filled up adds its bracket and note: a deep value ends here.
  return w.text.length > maxChars + 64 ? `${w.text.slice(0, maxChars)}…` : w.text;
}
