/**
 * Strings held one byte a character. V8 keeps a string two bytes a character when it was cut from a text that has
 * any character past U+00FF, whatever its own characters: every string the YAML parser gives for a configuration
 * whose comments have an em dash is such a string. A step's name from it makes each warning, log line and kept
 * trace of that step two-byte too (twice their memory, and the slow path where they are encoded as UTF-8).
 * Decoding the Latin-1 bytes of such a string again gives it in one byte a character.
 */
const PAST_LATIN1 = /[\u0100-\uffff]/;

/** `s`, one byte a character when all of its characters fit in one. */
export function oneByte(s: string): string {
  return PAST_LATIN1.test(s) ? s : Buffer.from(s, 'latin1').toString('latin1');
}

/** Plain data (what a YAML or JSON document gives) with its strings and keys made `oneByte`. */
export function oneByteStrings(value: unknown): unknown {
  if (typeof value === 'string') return oneByte(value);
  if (Array.isArray(value)) return value.map(oneByteStrings);
  if (typeof value !== 'object' || value === null) return value;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  // fromEntries defines each key (an own "__proto__" stays a key).
  return Object.fromEntries(Object.entries(value).map(([key, v]) => [oneByte(key), oneByteStrings(v)]));
}
