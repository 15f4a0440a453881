/**
 * Regular expressions in CEL (`matches`, and the apiserver's `find` and `findAll`) on RE2, in time linear in the
 * input (re2js, as every pattern from configuration: server/base/pattern.ts and docs/decisions.md). The
 * engine's own `matches` would use JavaScript's backtracking RegExp, which a hostile string can stall.
 */
import { RE2JS, RE2JSException } from 're2js';
import type { Library } from './library.js';
import { CelEvalError, requireString } from './library.js';

/** Compiled patterns kept, most recently used last; patterns are usually constants, so few are ever live. */
const CACHE_SIZE = 256;
const cache = new Map<string, RE2JS>();

/** A pattern that RE2 cannot compile, with RE2's reason. */
export class RegexError extends Error {
  override readonly name = 'RegexError';
}

/** Compiles `pattern` or throws RegexError. */
export function compileRegex(pattern: string): RE2JS {
  const known = cache.get(pattern);
  if (known !== undefined) {
    cache.delete(pattern);
    cache.set(pattern, known);
    return known;
  }
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern);
  } catch (err) {
    if (!(err instanceof RE2JSException)) throw err;
    throw new RegexError(
      `invalid regular expression "${pattern}": ${err.message.replace(/^error parsing regexp: /, '')}`,
    );
  }
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  cache.set(pattern, re);
  return re;
}

function regexOf(pattern: unknown): RE2JS {
  try {
    return compileRegex(requireString(pattern, 'the pattern'));
  } catch (err) {
    if (err instanceof RegexError) throw new CelEvalError('invalid_argument', err.message);
    throw err;
  }
}

/** Whether any part of `text` matches (CEL's `matches` is a search, not a whole-string match). */
export function regexMatches(text: unknown, pattern: unknown): boolean {
  return regexOf(pattern).test(requireString(text, 'matches() receiver'));
}

/** The first match, or '' when there is none. */
function find(text: string, pattern: unknown): string {
  const m = regexOf(pattern).matcher(text);
  return m.find() ? (m.group() ?? '') : '';
}

/**
 * Successive non-overlapping matches, at most `limit` (all when negative, none when 0), an empty match next to
 * the previous match left out (Go's `FindAllString`, which the apiserver calls).
 */
function findAll(text: string, pattern: unknown, limit: bigint): string[] {
  const found: string[] = [];
  if (limit === 0n) return found;
  const m = regexOf(pattern).matcher(text);
  let from = 0;
  let previousEnd = -1;
  while (from <= text.length && (limit < 0n || BigInt(found.length) < limit)) {
    if (!m.find(from)) break;
    const start = m.start();
    const end = m.end();
    if (end === start) {
      if (start !== previousEnd) found.push('');
      const cp = text.codePointAt(start);
      from = start + (cp !== undefined && cp > 0xffff ? 2 : 1);
    } else {
      found.push(m.group() ?? '');
      from = end;
    }
    previousEnd = end;
  }
  return found;
}

export const regexLibrary: Library = {
  functions: [
    ['string.find(string): string', (s: string, p: string) => find(s, p)],
    ['string.findAll(string): list<string>', (s: string, p: string) => findAll(s, p, -1n)],
    ['string.findAll(string, int): list<string>', (s: string, p: string, n: bigint) => findAll(s, p, n)],
  ],
  overrides: [
    ['.matches/1', ([s, p]) => regexMatches(s, p)],
    ['matches/2', ([s, p]) => regexMatches(s, p)],
  ],
};
