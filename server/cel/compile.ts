/**
 * compile(): an expression, parsed and type-checked once, ready to evaluate (evaluate.ts) any number of times;
 * or the reason it cannot be, with the position inside the expression, so that the configuration loader can
 * add the file, line and field. Nothing an expression can name fails only at review time for want of it: an
 * unknown variable, field of `variables`, function or overload, a function the apiserver has and this gateway
 * has not, and a regular expression literal RE2 cannot compile are all refused here.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { type Declaration, DECLARATIONS, MAX_EXPRESSION_LENGTH, OVERRIDES, environmentFor } from './environment.js';
import { instrument } from './instrument.js';
import { type Position, positionAt } from './position.js';
import { RegexError, compileRegex } from './regex.js';
import { missingFunction, missingVariable } from './unavailable.js';
import { type MessageTypes, rewriteMessages } from './message-syntax.js';

export interface CompileOptions {
  /** The top-level variables the expression may read (default: all of them). */
  readonly declarations?: readonly Declaration[];
  /** The names under `variables` (a policy's); undefined: no `variables` at all (a matchCondition). */
  readonly variables?: readonly string[];
  /** The type the result must have (`dyn`, which is only known at review time, is let through). */
  readonly resultType?: 'bool' | 'string';
  /** The message constructions the expression may write (a mutation's `JSONPatch{…}`, `Object{…}`). */
  readonly messages?: MessageTypes;
}

/** A compiled expression. Only evaluate() runs it. */
export interface CelProgram {
  readonly expression: string;
  /** The result's type as the checker sees it: `bool`, `string`, `dyn`, `list<string>`, ... */
  readonly resultType: string;
  /** The names under `variables` it reads itself (not those its variables read), in order of first use. */
  readonly variablesRead: readonly string[];
  /** It names `namespaceObject`, which the review then looks up (a namespace is only read when something reads it). */
  readonly readsNamespaceObject: boolean;
  /** The engine's callable (evaluate.ts calls it inside a cost meter). */
  readonly run: (activation: Readonly<Record<string, unknown>>) => unknown;
  /** Where an offset of the compiled text is in `expression`, when they differ (message-syntax.ts). */
  readonly originOf?: (offset: number) => number;
}

export interface CompileError {
  /** parse_error, type_error, unavailable_function, invalid_regex, too_long, wrong_result_type, ... */
  readonly code: string;
  /** One line, without the expression itself. */
  readonly message: string;
  readonly position: Position;
}

export type CompileResult = { ok: true; program: CelProgram } | { ok: false; error: CompileError };

type Parsed = ReturnType<Environment['parse']>;

interface EngineError {
  readonly name?: unknown;
  readonly code?: unknown;
  readonly message?: unknown;
  readonly summary?: unknown;
  readonly range?: { readonly start: number };
}

function failure(expression: string, code: string, message: string, offset: number): CompileResult {
  return { ok: false, error: { code, message, position: positionAt(expression, offset) } };
}

/** The engine's error as ours: its one-line summary and where it points. */
function fromEngine(
  expression: string,
  err: unknown,
  fallbackCode: string,
  originOf: (offset: number) => number,
): CompileResult {
  if (typeof err !== 'object' || err === null) throw err;
  const e = err as EngineError;
  const code = typeof e.name === 'string' && e.name === 'ParseError' ? 'parse_error' : fallbackCode;
  const text = typeof e.summary === 'string' ? e.summary : typeof e.message === 'string' ? e.message : 'unknown error';
  return failure(expression, code, text.split('\n')[0] ?? text, originOf(e.range?.start ?? 0));
}

interface SyntaxNode {
  readonly op: string;
  readonly args: unknown;
  readonly start: number;
}

/** The nodes of a parsed (not yet checked) tree, in source order enough for "the first problem". */
function* syntaxNodes(root: unknown): Generator<SyntaxNode> {
  const stack: unknown[] = [root];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const x = stack.pop();
    if (x === null || typeof x !== 'object' || seen.has(x)) continue;
    seen.add(x);
    if (Array.isArray(x)) stack.push(...(x as unknown[]).slice().reverse());
    else if (typeof (x as { op?: unknown }).op === 'string' && 'meta' in x) {
      const node = x as SyntaxNode & { meta: { alternate?: unknown; macro?: unknown } };
      yield node;
      stack.push(node.meta.macro, node.meta.alternate, node.args);
    } else if (Object.getPrototypeOf(x) === Object.prototype)
      stack.push(...Object.values(x as Record<string, unknown>));
  }
}

/** The apiserver's checks the engine does not make: functions and variables we lack, regex literals. */
function precheck(expression: string, root: unknown, originOf: (offset: number) => number): CompileResult | undefined {
  for (const node of syntaxNodes(root)) {
    if (node.op === 'id' && typeof node.args === 'string') {
      const missing = missingVariable(node.args);
      if (missing) return failure(expression, 'unavailable_variable', missing, originOf(node.start));
    }
    if (node.op !== 'call' && node.op !== 'rcall') continue;
    const name = (node.args as unknown[])[0] as string;
    const args = (node.op === 'call' ? (node.args as unknown[])[1] : (node.args as unknown[])[2]) as SyntaxNode[];
    const missing = missingFunction(name, args.length);
    if (missing) return failure(expression, 'unavailable_function', missing, originOf(node.start));
    if (name === 'matches' || name === 'find' || name === 'findAll') {
      const pattern = node.op === 'call' ? args[1] : args[0];
      if (pattern?.op === 'value' && typeof pattern.args === 'string') {
        try {
          compileRegex(pattern.args);
        } catch (err) {
          if (!(err instanceof RegexError)) throw err;
          return failure(expression, 'invalid_regex', err.message, originOf(pattern.start));
        }
      }
    }
  }
  return undefined;
}

/** The fields of `variables` the tree selects (`variables.x`, `variables.?x`). */
function variablesReadBy(root: unknown): string[] {
  const names = new Set<string>();
  for (const node of syntaxNodes(root)) {
    if (node.op !== '.' && node.op !== '.?') continue;
    const [target, field] = node.args as [SyntaxNode, unknown];
    if (target.op === 'id' && target.args === 'variables' && typeof field === 'string') names.add(field);
  }
  return [...names];
}

/** Whether the tree names the top-level variable `name`. */
function readsIdentifier(root: unknown, name: string): boolean {
  for (const node of syntaxNodes(root)) if (node.op === 'id' && node.args === name) return true;
  return false;
}

export function compile(expression: string, options: CompileOptions = {}): CompileResult {
  if (expression.length > MAX_EXPRESSION_LENGTH)
    return failure(expression, 'too_long', `the expression is longer than ${MAX_EXPRESSION_LENGTH} characters`, 0);
  let source = expression;
  let originOf = (offset: number): number => offset;
  if (options.messages !== undefined) {
    const rewritten = rewriteMessages(expression, options.messages);
    if (!rewritten.ok) return failure(expression, 'parse_error', rewritten.message, rewritten.offset);
    source = rewritten.text;
    originOf = rewritten.originOf;
  }
  const env = environmentFor(options.declarations ?? DECLARATIONS, options.variables);
  let parsed: Parsed;
  try {
    parsed = env.parse(source);
  } catch (err) {
    return fromEngine(expression, err, 'parse_error', originOf);
  }
  const pre = precheck(expression, parsed.ast, originOf);
  if (pre) return pre;
  const checked = parsed.check();
  if (!checked.valid) return fromEngine(expression, checked.error, 'type_error', originOf);
  const resultType = checked.type ?? 'dyn';
  if (options.resultType !== undefined && resultType !== options.resultType && resultType !== 'dyn')
    return failure(
      expression,
      'wrong_result_type',
      `the expression gives ${resultType}, where ${options.resultType} is expected`,
      0,
    );
  const variablesRead = options.variables === undefined ? [] : variablesReadBy(parsed.ast);
  const readsNamespaceObject = readsIdentifier(parsed.ast, 'namespaceObject');
  instrument(parsed.ast, OVERRIDES);
  return {
    ok: true,
    program: Object.freeze({
      expression,
      resultType,
      variablesRead,
      readsNamespaceObject,
      run: (activation: Readonly<Record<string, unknown>>): unknown => parsed(activation),
      ...(source !== expression ? { originOf } : {}),
    }),
  };
}
