/**
 * Fields that hold CEL, and the named lists they sit in (a policy's body, an entry's matchConditions): each
 * expression compiled when the configuration loads, so that a mistake is refused then, naming the field and,
 * through the loader, the file and line; its message says where in the expression.
 */
import { compile, type CelProgram, type CompileOptions } from '../cel/index.js';
import type { Reader } from './reader.js';

/** The list at `path`, of at most `max` items. */
export function boundedList(r: Reader, value: unknown, path: string, max: number): unknown[] {
  const list = r.list(value, path) ?? [];
  if (list.length > max) r.fail(path, `expected at most ${max} items, got ${list.length}`);
  return list;
}

/** Compiles `expression` or fails at its field, saying where in it the problem is. */
export function program(r: Reader, value: unknown, path: string, options: CompileOptions): CelProgram {
  const expression = r.requiredString(value, path);
  const result = compile(expression, options);
  if (result.ok) return result.program;
  const { position, message } = result.error;
  const where = expression.includes('\n')
    ? `line ${position.line}, column ${position.column}`
    : `column ${position.column}`;
  return r.fail(path, `${message} (at ${where} of the expression)`);
}

/** Refuses a name already used in the list. */
export function uniqueName(r: Reader, seen: Set<string>, name: string, path: string): void {
  if (seen.has(name)) r.fail(path, `the name "${name}" is already used in this list`);
  seen.add(name);
}
