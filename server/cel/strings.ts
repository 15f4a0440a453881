/**
 * The strings extension the apiserver has (cel-go ext.Strings version 2) where the engine lacks it: replace,
 * charAt, format and strings.quote. The engine has the rest (indexOf, lastIndexOf, lowerAscii, upperAscii,
 * split, substring, trim, join). Indexes count code points, as CEL's do.
 */
import { charge, traversal } from './cost.js';
import { formatString } from './string-format.js';
import type { Library } from './library.js';
import { CelEvalError } from './library.js';

/** Go's strings.Replace: at most `n` replacements (all when negative); an empty `old` matches between runes. */
function replace(s: string, old: string, by: string, n: bigint): string {
  if (n === 0n) return s;
  const limit = n < 0n ? Infinity : Number(n);
  if (old === '') {
    const runes = Array.from(s);
    const count = Math.min(limit, runes.length + 1);
    charge(traversal(s.length + count * by.length));
    let out = '';
    for (let i = 0; i < runes.length; i++) out += (i < count ? by : '') + runes[i];
    return count > runes.length ? out + by : out;
  }
  const parts = s.split(old);
  const count = Math.min(limit, parts.length - 1);
  // The result's length is known before it is built: a short `old` and a long `by` must not make a huge string
  // that nobody paid for.
  charge(traversal(s.length + count * Math.max(0, by.length - old.length)));
  if (count === parts.length - 1) return parts.join(by);
  return parts.slice(0, count + 1).join(by) + old + parts.slice(count + 1).join(old);
}

function charAt(s: string, i: bigint): string {
  const runes = Array.from(s);
  if (i < 0n || i > BigInt(runes.length)) throw new CelEvalError('index_out_of_bounds', `index out of range: ${i}`);
  return runes[Number(i)] ?? '';
}

const QUOTE_ESCAPES: Readonly<Record<string, string>> = {
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
  '\\': '\\\\',
  '"': '\\"',
};

/** A CEL string literal for `s`, in double quotes. */
function quote(s: string): string {
  let out = '"';
  for (const ch of s) out += QUOTE_ESCAPES[ch] ?? (ch.length === 1 && /[\uD800-\uDFFF]/.test(ch) ? '\uFFFD' : ch);
  return out + '"';
}

/** The `strings` in `strings.quote(s)`. */
export class StringsNamespace {}

export const stringsLibrary: Library = {
  types: [['StringsNamespace', StringsNamespace]],
  constants: [['strings', 'StringsNamespace', new StringsNamespace()]],
  functions: [
    ['string.replace(string, string): string', (s: string, o: string, b: string) => replace(s, o, b, -1n)],
    [
      'string.replace(string, string, int): string',
      (s: string, o: string, b: string, n: bigint) => replace(s, o, b, n),
    ],
    ['string.charAt(int): string', (s: string, i: bigint) => charAt(s, i)],
    ['string.format(list<dyn>): string', (s: string, args: unknown[]) => formatString(s, args)],
    ['StringsNamespace.quote(string): string', (_ns: unknown, s: string) => quote(s)],
  ],
};
