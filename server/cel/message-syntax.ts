/**
 * CEL's message construction, `Type{field: value, …}`, which the engine cannot parse: the apiserver's mutating
 * policies build their results with it (`JSONPatch{op: "add", path: "/x", value: 1}`,
 * `Object{spec: Object.spec{replicas: 3}}`). Before compiling, a tokenizer finds each construction and writes it as
 * the map literal it evaluates to (`{"op": dyn("add"), …}`: each value `dyn`, as a message's fields may have
 * different types and a literal map's may not). Every offset of the rewritten text maps back to the user's text,
 * so that an error points where the user wrote it (docs/decisions.md, "Message construction in CEL: rewritten to
 * map literals before compiling").
 */

import { OPTIONAL_FIELDS } from './optional-fields.js';

/** Which constructions an expression may write. */
export type MessageTypes = 'jsonPatch' | 'applyConfiguration';

/** JSONPatch's fields, as the apiserver declares the type. */
const JSONPATCH_FIELDS: ReadonlySet<string> = new Set(['op', 'path', 'from', 'value']);

export interface Rewritten {
  readonly ok: true;
  /** The text the engine compiles. */
  readonly text: string;
  /** The offset in the user's text of an offset in `text`. */
  readonly originOf: (offset: number) => number;
}

export interface RewriteError {
  readonly ok: false;
  readonly message: string;
  /** In the user's text. */
  readonly offset: number;
}

interface Token {
  readonly kind: 'ident' | 'punct' | 'other';
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

const IDENT_START = /[A-Za-z_]/;
const IDENT_PART = /[A-Za-z0-9_]/;
const STRING_PREFIX = /^[rRbB]{1,2}$/;
const NUMBER = /(?:0[xX][0-9a-fA-F]+|[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)[uU]?/y;

/** The end of the string literal whose quote is at `at` (an unterminated one ends the text). */
function stringEnd(text: string, at: number, raw: boolean): number {
  const quote = text[at]!;
  const triple = text.startsWith(quote.repeat(3), at);
  const close = triple ? quote.repeat(3) : quote;
  let i = at + close.length;
  while (i < text.length) {
    if (!raw && text[i] === '\\') i += 2;
    else if (text.startsWith(close, i)) return i + close.length;
    else if (!triple && text[i] === '\n') return i;
    else i++;
  }
  return text.length;
}

/** CEL's tokens, enough to tell identifiers and brackets from what is inside strings and comments. */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') {
      i++;
    } else if (ch === '/' && text[i + 1] === '/') {
      const newline = text.indexOf('\n', i);
      i = newline === -1 ? text.length : newline;
    } else if (ch === '"' || ch === "'") {
      const end = stringEnd(text, i, false);
      tokens.push({ kind: 'other', text: text.slice(i, end), start: i, end });
      i = end;
    } else if (IDENT_START.test(ch)) {
      let end = i + 1;
      while (end < text.length && IDENT_PART.test(text[end]!)) end++;
      const word = text.slice(i, end);
      if (STRING_PREFIX.test(word) && (text[end] === '"' || text[end] === "'")) {
        const close = stringEnd(text, end, /[rR]/.test(word));
        tokens.push({ kind: 'other', text: text.slice(i, close), start: i, end: close });
        i = close;
      } else {
        tokens.push({ kind: 'ident', text: word, start: i, end });
        i = end;
      }
    } else if (ch >= '0' && ch <= '9') {
      NUMBER.lastIndex = i;
      const end = NUMBER.test(text) ? NUMBER.lastIndex : i + 1;
      tokens.push({ kind: 'other', text: text.slice(i, end), start: i, end });
      i = end;
    } else {
      tokens.push({ kind: 'punct', text: ch, start: i, end: i + 1 });
      i++;
    }
  }
  return tokens;
}

/** The rewritten text, built piece by piece, with where each piece came from. */
class Output {
  text = '';
  /** Where each piece starts in `text` and in the user's text; an inserted piece maps to one offset. */
  private readonly pieces: Array<{ out: number; from: number; copied: boolean }> = [];

  constructor(private readonly source: string) {}

  copy(from: number, to: number): void {
    if (to <= from) return;
    this.pieces.push({ out: this.text.length, from, copied: true });
    this.text += this.source.slice(from, to);
  }

  insert(text: string, at: number): void {
    this.pieces.push({ out: this.text.length, from: at, copied: false });
    this.text += text;
  }

  originOf(offset: number): number {
    let lo = 0;
    let hi = this.pieces.length - 1;
    if (hi < 0) return offset;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.pieces[mid]!.out <= offset) lo = mid;
      else hi = mid - 1;
    }
    const piece = this.pieces[lo]!;
    return piece.copied ? piece.from + Math.max(0, offset - piece.out) : piece.from;
  }
}

interface MessageFrame {
  readonly kind: 'message';
  readonly type: string;
  readonly fields: Set<string>;
  /** It has an optional field (`?name: value`): the map literal is handed to OPTIONAL_FIELDS. */
  readonly optional: boolean;
  /** The field whose value is being read, or undefined between fields. */
  field: string | undefined;
}

interface BracketFrame {
  readonly kind: 'bracket';
  readonly open: string;
  /** A list literal that is a field's whole value: the type its constructed items must have. */
  readonly itemType: string | undefined;
}

type Frame = MessageFrame | BracketFrame;

const CLOSING: Readonly<Record<string, string>> = { ')': '(', ']': '[', '}': '{' };

class RewriteFailure extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/** The qualified name `a.b.c` starting at token `i` when a `{` follows it: the index of that `{`. */
function constructionAt(tokens: readonly Token[], i: number): number | undefined {
  if (tokens[i]?.kind !== 'ident' || tokens[i - 1]?.text === '.') return undefined;
  let j = i;
  while (tokens[j + 1]?.text === '.' && tokens[j + 2]?.kind === 'ident') j += 2;
  return tokens[j + 1]?.text === '{' && tokens[j + 1]?.kind === 'punct' ? j + 1 : undefined;
}

function checkType(type: string, allowed: MessageTypes, expected: string | undefined, at: number): void {
  const known = type === 'Object' || type.startsWith('Object.') || (type === 'JSONPatch' && allowed === 'jsonPatch');
  if (!known) {
    const which = allowed === 'jsonPatch' ? 'JSONPatch or Object…' : 'Object or Object.<field>…';
    throw new RewriteFailure(`unknown type "${type}" in a construction: expected ${which}`, at);
  }
  // As the apiserver's check of type names against field paths (`Object.spec{selector: Object.spec.wrong{}}`).
  if (expected !== undefined && type !== expected)
    throw new RewriteFailure(`type mismatch: "${type}" set as a field of type "${expected}"`, at);
}

/**
 * The `{` of each construction that has an optional field (`Object{?name: value}`): one pass over the tokens,
 * keeping which open bracket is a construction's.
 */
function withOptionalFields(tokens: readonly Token[]): Set<number> {
  const found = new Set<number>();
  const open: Array<number | undefined> = [];
  for (let i = 0; i < tokens.length; i++) {
    const brace = constructionAt(tokens, i);
    if (brace !== undefined) {
      open.push(brace);
      i = brace;
      continue;
    }
    const t = tokens[i]!;
    if (t.kind !== 'punct') continue;
    if (t.text === '(' || t.text === '[' || t.text === '{') open.push(undefined);
    else if (CLOSING[t.text] !== undefined) open.pop();
    else if (
      t.text === '?' &&
      open.at(-1) !== undefined &&
      (tokens[i - 1]?.text === '{' || tokens[i - 1]?.text === ',')
    )
      found.add(open.at(-1)!);
  }
  return found;
}

/**
 * `expression` with its message constructions written as map literals, or why it cannot be. Text without any
 * construction comes back unchanged.
 */
export function rewriteMessages(expression: string, allowed: MessageTypes): Rewritten | RewriteError {
  const tokens = tokenize(expression);
  if (!tokens.some((t, i) => constructionAt(tokens, i) !== undefined))
    return { ok: true, text: expression, originOf: (offset) => offset };
  const optional = withOptionalFields(tokens);
  const out = new Output(expression);
  const stack: Frame[] = [];
  let cursor = 0;
  /** The type a construction must have when it is the next token (a field's value, a list item of one). */
  let expected: string | undefined;
  try {
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i]!;
      const expectedHere = expected;
      expected = undefined;
      const top = stack.at(-1);
      const brace = constructionAt(tokens, i);
      if (brace !== undefined) {
        const type = tokens
          .slice(i, brace)
          .map((x) => x.text)
          .join('');
        checkType(type, allowed, expectedHere, t.start);
        out.copy(cursor, t.start);
        const hasOptional = optional.has(brace);
        out.insert(hasOptional ? `${OPTIONAL_FIELDS}({` : '{', t.start);
        cursor = tokens[brace]!.end;
        stack.push({ kind: 'message', type, fields: new Set(), field: undefined, optional: hasOptional });
        i = brace;
        continue;
      }
      if (top?.kind === 'message' && top.field === undefined && t.text !== '}') {
        // `?name: value`: the field is set only when the optional value has one.
        const isOptional = t.text === '?' && top.type !== 'JSONPatch';
        const name = isOptional ? tokens[i + 1] : t;
        if (name?.kind !== 'ident' || tokens[isOptional ? i + 2 : i + 1]?.text !== ':')
          throw new RewriteFailure(`expected a field name and ":" in ${top.type}{…}`, t.start);
        if (top.type === 'JSONPatch' && !JSONPATCH_FIELDS.has(name.text))
          throw new RewriteFailure(`JSONPatch has no field "${name.text}" (op, path, from, value)`, t.start);
        if (top.fields.has(name.text)) throw new RewriteFailure(`field "${name.text}" is set twice`, t.start);
        top.fields.add(name.text);
        top.field = name.text;
        out.copy(cursor, t.start);
        out.insert(`${JSON.stringify(`${isOptional ? '?' : ''}${name.text}`)}: dyn(`, t.start);
        i += isOptional ? 2 : 1;
        cursor = tokens[i]!.end;
        expected = top.type === 'JSONPatch' ? undefined : `${top.type}.${name.text}`;
        continue;
      }
      if (t.kind !== 'punct') continue;
      if (t.text === '(' || t.text === '[' || t.text === '{') {
        const itemType = t.text === '[' ? expectedHere : undefined;
        stack.push({ kind: 'bracket', open: t.text, itemType });
        if (itemType !== undefined) expected = itemType;
      } else if (t.text === ',' && top?.kind === 'bracket' && top.itemType !== undefined) {
        expected = top.itemType;
      } else if ((t.text === ',' || t.text === '}') && top?.kind === 'message') {
        out.copy(cursor, t.start);
        if (top.field !== undefined) out.insert(')', t.start);
        cursor = t.start;
        top.field = undefined;
        if (t.text === '}') {
          stack.pop();
          if (top.optional) {
            out.copy(cursor, t.end);
            out.insert(')', t.start);
            cursor = t.end;
          }
        }
      } else if (CLOSING[t.text] !== undefined && top?.kind === 'bracket' && top.open === CLOSING[t.text]) {
        stack.pop();
      }
    }
  } catch (err) {
    if (err instanceof RewriteFailure) return { ok: false, message: err.message, offset: err.offset };
    throw err;
  }
  out.copy(cursor, expression.length);
  return { ok: true, text: out.text, originOf: (offset) => out.originOf(offset) };
}
