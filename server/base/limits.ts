/**
 * Bounds on what the gateway accepts and echoes. Anyone who may create an object controls most of what a
 * review carries, and a remote provider may be compromised, so every length, count and depth the gateway
 * takes from either is bounded here, and nothing they send is repeated at full length into an answer or a
 * log line. The README's "Limits" section lists them for operators.
 */

/**
 * Deepest nesting of arrays and objects accepted in a review or a provider's answer. JSON.parse copes with
 * any depth, but JSON.stringify, structured clones and the patch library recurse, and overflow the stack a
 * few thousand levels down; no Kubernetes object comes near this.
 */
export const MAX_NESTING_DEPTH = 1000;

/** Longest piece of client- or provider-supplied text quoted in an error message or a log field. */
export const MAX_ECHO_CHARS = 256;

/** Longest message a single step's denial may carry into the answer (the rest is cut, and says so). */
export const MAX_MESSAGE_CHARS = 4096;

/**
 * Array elements a step's JSON patch may shift in all (an insertion or removal moves every element after
 * it): a patch of many insertions at the front of a long list would otherwise cost its length times theirs.
 */
export const MAX_PATCH_SHIFTS = 16 * 1024 * 1024;

/** Bytes (as JSON) a step's JSON patch may duplicate with `copy` operations, which could otherwise double the object each time. */
export const MAX_PATCH_COPY_BYTES = 1024 * 1024;

/** Largest certificate, key or CA file read (a CA bundle of every public root is a fraction of it). */
export const MAX_TLS_FILE_BYTES = 1024 * 1024;

/** Largest configuration file read. */
export const MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024;

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]+/g;
// eslint-disable-next-line no-control-regex
const HAS_CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * `text` cut to at most `max` UTF-16 units plus a note of how much was cut, never splitting a surrogate
 * pair.
 */
export function clip(text: string, max = MAX_ECHO_CHARS): string {
  if (text.length <= max) return text;
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  // A copy, not a slice: V8 keeps the whole of a string alive behind any slice of it, and what is clipped is
  // often kept (a log field, a trace) while the original is megabytes.
  return Buffer.from(`${text.slice(0, end)}… (${text.length - end} more characters)`, 'utf16le').toString('utf16le');
}

// eslint-disable-next-line no-control-regex
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * One line of text for a terminal: control characters (terminal escapes, line breaks) and bidirectional
 * overrides written as `\uXXXX` escapes, so that untrusted text can neither drive the terminal nor forge lines.
 */
export function escapeControl(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Control characters (terminal escapes, line breaks) replaced by a space, runs of spaces folded. */
export function stripControl(text: string): string {
  // Most text needs nothing done (a step's warning on every review): one scan, no new strings.
  if (!HAS_CONTROL.test(text) && !text.includes('  ') && text.trim().length === text.length) return text;
  return text.replace(CONTROL, ' ').replace(/ {2,}/g, ' ').trim();
}

/**
 * An untrusted value as a short phrase for a message: strings quoted and clipped, scalars as they are, and
 * containers described rather than serialised (serialising one could cost anything, or overflow the stack).
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(clip(value));
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return `an array of ${value.length} items`;
  return `a ${typeof value}`;
}

/**
 * How many objects and arrays a JSON document holds at most: its opening brackets, those inside strings
 * included (a bound is all that is needed, and searching for them is much cheaper than a scan).
 */
export function countContainers(text: string): number {
  let n = 0;
  for (let i = text.indexOf('{'); i >= 0; i = text.indexOf('{', i + 1)) n++;
  for (let i = text.indexOf('['); i >= 0; i = text.indexOf('[', i + 1)) n++;
  return n;
}

/**
 * Whether `text`, a JSON document, nests arrays and objects deeper than `max`: a scan of its brackets
 * outside strings, so the check costs one pass and never recursion.
 */
export function nestsDeeperThan(text: string, max = MAX_NESTING_DEPTH): boolean {
  // A document shorter than two brackets per level cannot reach the limit.
  if (text.length <= 2 * max) return false;
  let depth = 0;
  // The scan looks at every character outside strings; a document with fewer brackets than the limit cannot
  // reach it, and their count costs a search.
  if (countContainers(text) <= max) return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // Skip the string: to the next quote not escaped by an odd run of backslashes.
      for (;;) {
        i = text.indexOf('"', i + 1);
        if (i < 0) return false;
        let backslashes = 0;
        while (text.charCodeAt(i - 1 - backslashes) === 0x5c /* \ */) backslashes++;
        if (backslashes % 2 === 0) break;
      }
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      depth--;
    }
  }
  return false;
}
