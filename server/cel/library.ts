/**
 * What a library of CEL functions declares to the environment (environment.ts registers them), and the helpers
 * their implementations share.
 */
import type { Override } from './instrument.js';

// The engine calls a handler with the receiver (if any) first, then the arguments, each typed as declared.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Handler = (...args: any[]) => unknown;

export interface Library {
  /** Engine signatures (`string.find(string): string`, `ip(string): net.IP`) and their implementations. */
  readonly functions: ReadonlyArray<readonly [signature: string, handler: Handler]>;
  /**
   * Types the functions take or return: a CEL type name, the class of its values and, when given, the only fields
   * an expression may read of them (else their own properties).
   */
  readonly types?: ReadonlyArray<
    readonly [name: string, ctor: abstract new (...args: never[]) => unknown, fields?: Readonly<Record<string, string>>]
  >;
  /** Namespaces such as `lists` in `lists.range(3)`: a constant of a type declared in `types`. */
  readonly constants?: ReadonlyArray<readonly [name: string, type: string, value: unknown]>;
  /** Operators on those types (`net.IP == net.IP`). */
  readonly operators?: ReadonlyArray<readonly [signature: string, handler: Handler]>;
  /** The engine's own functions this library implements instead (instrument.ts, `Overrides`). */
  readonly overrides?: ReadonlyArray<readonly [key: string, override: Override]>;
}

/** An error a function reports at evaluation; `code` is stable (no_such_overload, invalid_argument, ...). */
export class CelEvalError extends Error {
  override readonly name = 'CelEvalError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function requireString(value: unknown, what: string): string {
  if (typeof value !== 'string') throw new CelEvalError('no_such_overload', `${what} must be a string`);
  return value;
}

export function requireList(value: unknown, what: string): readonly unknown[] {
  if (!Array.isArray(value)) throw new CelEvalError('no_such_overload', `${what} must be a list`);
  return value as readonly unknown[];
}

/** Whether `parse` succeeds: the `isX(s)` functions of the libraries whose `x(s)` refuses what is not one. */
export function parses(parse: () => unknown): boolean {
  try {
    parse();
    return true;
  } catch (err) {
    if (err instanceof CelEvalError) return false;
    throw err;
  }
}

/** A JavaScript number of an int argument, when it is small enough to index with; an error otherwise. */
export function smallInt(value: bigint, what: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER))
    throw new CelEvalError('invalid_argument', `${what} is out of range`);
  return Number(value);
}
