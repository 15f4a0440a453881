/**
 * Equality and ordering of CEL values, for the library functions that compare elements (indexOf, distinct,
 * sort, sets.*): numbers compare across int and double as CEL's heterogeneous equality does; lists and maps
 * element by element; a library type by its own `equals`.
 */
import { Optional } from '@marcbachmann/cel-js';
import { CelEvalError } from './library.js';

/** A library value type (IP, CIDR, Quantity, Semver) that knows when it equals another. */
export interface Comparable {
  equals(other: unknown): boolean;
}

const isComparable = (v: object): v is Comparable => typeof (v as Partial<Comparable>).equals === 'function';

export function celEquals(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a === 'bigint' && typeof b === 'number') return Number(a) === b;
  if (typeof a === 'number' && typeof b === 'bigint') return a === Number(b);
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((v, i) => celEquals(v, b[i]));
  if (a instanceof Uint8Array) return b instanceof Uint8Array && a.length === b.length && a.every((v, i) => v === b[i]);
  if (a instanceof Optional)
    return b instanceof Optional && a.hasValue() === b.hasValue() && (!a.hasValue() || celEquals(a.value(), b.value()));
  if (isComparable(a)) return a.equals(b);
  if (Object.getPrototypeOf(a) === Object.prototype && Object.getPrototypeOf(b) === Object.prototype) {
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    return keys.every(
      (k) => Object.hasOwn(b, k) && celEquals((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
    );
  }
  return false;
}

/** -1, 0 or 1; numbers across int and double, strings, bools, bytes. Anything else cannot be ordered. */
export function celCompare(a: unknown, b: unknown): number {
  if ((typeof a === 'bigint' || typeof a === 'number') && (typeof b === 'bigint' || typeof b === 'number')) {
    if (typeof a === typeof b) return a < b ? -1 : a > b ? 1 : 0;
    const x = Number(a);
    const y = Number(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'boolean' && typeof b === 'boolean') return a === b ? 0 : a ? 1 : -1;
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b);
  throw new CelEvalError('no_such_overload', `cannot compare ${typeName(a)} with ${typeName(b)}`);
}

export function typeName(v: unknown): string {
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'number') return 'double';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'list';
  if (v instanceof Uint8Array) return 'bytes';
  if (typeof v === 'object') return Object.getPrototypeOf(v) === Object.prototype ? 'map' : v.constructor.name;
  return typeof v === 'boolean' ? 'bool' : typeof v;
}
