/**
 * What a test file expects of a text (a denial's message, a warning, an audit annotation's value): the text
 * contains a substring, or, written `/…/` with optional flags, matches a regular expression. A test file is
 * the team's own, run in its CI, so its expressions are JavaScript's; only `i`, `m`, `s` and `u` are taken
 * (`g` and `y` would make a test depend on the one before).
 */

/** A substring or a regular expression, as written. */
export interface TextPattern {
  /** As written in the test file. */
  readonly source: string;
  test(text: string): boolean;
  /** `contain "…"` or `match /…/`, for a failure's message. */
  readonly describe: string;
}

/** What makes a string a regular expression: `/`, at least one character, `/`, flags. */
const REGEX_LITERAL = /^\/(.+)\/([a-z]*)$/s;
const FLAGS = /^[imsu]*$/;

/** A pattern that cannot be compiled: the message says why. */
export class TextPatternError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TextPatternError';
  }
}

export function textPattern(source: string): TextPattern {
  const literal = REGEX_LITERAL.exec(source);
  if (!literal) {
    return { source, test: (text) => text.includes(source), describe: `contain ${JSON.stringify(source)}` };
  }
  const [, body = '', flags = ''] = literal;
  if (!FLAGS.test(flags)) throw new TextPatternError(`regular expression flags may be i, m, s and u, got "${flags}"`);
  let expression: RegExp;
  try {
    expression = new RegExp(body, flags);
  } catch (err) {
    throw new TextPatternError(`not a regular expression: ${(err as Error).message}`);
  }
  return { source, test: (text) => expression.test(text), describe: `match ${source}` };
}

const SPECIAL = /[\\^$.*+?()[\]{}|/]/g;

/**
 * How to write `text` so that it reads back as a pattern matching it: itself, unless it would read as a
 * regular expression, then an anchored one matching exactly it.
 */
export function literalPattern(text: string): string {
  return REGEX_LITERAL.test(text) ? `/^${text.replace(SPECIAL, '\\$&')}$/` : text;
}
