/**
 * Regular expressions that come from configuration (plugin settings, and later policies). They run on re2js, a
 * port of RE2 that matches in time linear in the input, never on V8's backtracking RegExp: whoever creates an
 * object chooses the string a pattern is matched against, and against a backtracking engine a pattern such as
 * `(a+)+` and a 40-character label stall the whole process. What RE2 cannot run in linear time (lookaround,
 * backreferences) it refuses to compile, so such a pattern is refused when the configuration is loaded.
 * Why re2js, measured against the alternatives: docs/decisions.md.
 */
import { RE2JS, RE2JSException } from 're2js';

export interface Pattern {
  /** As written, for messages. */
  readonly source: string;
  /** Whether the whole of `value` matches (not a part of it). */
  matches(value: string): boolean;
}

/** A pattern that is not valid RE2 syntax; the message says why, in RE2's words. */
export class PatternError extends Error {
  override readonly name = 'PatternError';
  constructor(
    readonly source: string,
    reason: string,
  ) {
    super(
      `invalid regular expression "${source}": ${reason} ` +
        '(patterns are RE2 syntax, matched in linear time: no lookaround, no backreferences)',
    );
  }
}

/** Compiles `source` (RE2 syntax); throws PatternError when RE2 cannot run it. */
export function compilePattern(source: string): Pattern {
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(source);
  } catch (err) {
    if (!(err instanceof RE2JSException)) throw err;
    throw new PatternError(source, err.message.replace(/^error parsing regexp: /, ''));
  }
  return Object.freeze({ source, matches: (value: string) => compiled.matches(value) });
}
