/**
 * The values an expression sees and gives back. An object arrives as parsed JSON, where every number is a double;
 * the apiserver hands CEL an integral JSON number as an int (int64), so `replicas / 2` divides integers and
 * `runAsUser == 0` compares ints. `toCel` makes that copy once per value (a review's object, oldObject, request),
 * and `toJson` turns a result back into JSON.
 */
import { Optional } from '@marcbachmann/cel-js';

/** Deeper than this an object is refused (CelValueError): no Kubernetes object nests anywhere near it. */
export const MAX_VALUE_DEPTH = 1000;

/** A value that cannot be handed to an expression, or taken out of one as JSON. */
export class CelValueError extends Error {
  override readonly name = 'CelValueError';
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Parsed JSON → the value an expression reads: integral numbers become ints (BigInt). Only the lists and maps
 * that hold a number (at any depth) are copied; the rest is shared with `value`, which is never changed.
 */
export function toCel(value: unknown): unknown {
  return convert(value, 0);
}

function convert(value: unknown, depth: number): unknown {
  if (typeof value === 'number') return Number.isInteger(value) ? integer(value) : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_VALUE_DEPTH) throw new CelValueError(`the value nests deeper than ${MAX_VALUE_DEPTH} levels`);
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      const c = convert(v, depth + 1);
      if (c !== v) (out ??= value.slice())[i] = c;
    }
    return out ?? value;
  }
  let out: Record<string, unknown> | undefined;
  const source = value as Record<string, unknown>;
  for (const key in source) {
    const v = source[key];
    const c = convert(v, depth + 1);
    if (c === v) continue;
    out ??= copyOf(source);
    // An own "__proto__" key (JSON.parse makes one) must stay a key, not set the copy's prototype.
    if (key === '__proto__') Object.defineProperty(out, key, { value: c, enumerable: true, writable: true });
    else out[key] = c;
  }
  return out ?? value;
}

/** A shallow copy; spreading defines an own "__proto__" key as a key, as it must. */
const copyOf = (source: Record<string, unknown>): Record<string, unknown> => ({ ...source });

/** Small ints as BigInt, made once: ports, user ids and replica counts are most of an object's numbers. */
const SMALL_INTS: readonly bigint[] = Array.from({ length: 1 << 14 }, (_, i) => BigInt(i));

function integer(n: number): unknown {
  if (n >= 0 && n < SMALL_INTS.length) return SMALL_INTS[n];
  // Outside int64 the apiserver's decoder keeps a double too.
  const big = BigInt(n);
  return big < INT64_MIN || big > INT64_MAX ? n : big;
}

/**
 * An expression's result → JSON: ints become numbers (strings past 2^53, which JSON cannot carry exactly), an
 * optional its value (or null), bytes base64, anything else CEL has that JSON has not (types, durations) its text.
 */
export function toJson(value: unknown): unknown {
  return jsonOf(value, 0);
}

function jsonOf(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case 'bigint':
      return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(value)
        : value.toString();
    case 'number':
      if (!Number.isFinite(value)) throw new CelValueError(`${value} has no JSON form`);
      return value;
    case 'string':
    case 'boolean':
      return value;
    case 'undefined':
      return null;
    case 'object':
      break;
    default:
      return String(value);
  }
  if (value === null) return null;
  if (depth >= MAX_VALUE_DEPTH) throw new CelValueError(`the value nests deeper than ${MAX_VALUE_DEPTH} levels`);
  if (value instanceof Optional) return value.hasValue() ? jsonOf(value.value(), depth + 1) : null;
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) return value.map((v: unknown) => jsonOf(v, depth + 1));
  if (value instanceof Map) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of value as Map<unknown, unknown>) setKey(out, String(k), jsonOf(v, depth + 1));
    return out;
  }
  if (value instanceof Date) return value.toISOString();
  if (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) setKey(out, key, jsonOf((value as Record<string, unknown>)[key], depth + 1));
    return out;
  }
  // A library value (an IP, a CIDR) stands for its text.
  const text = (value as { toString: (this: unknown) => string }).toString;
  if (text !== Object.prototype.toString) return text.call(value);
  throw new CelValueError(`a ${value.constructor.name} has no JSON form`);
}

function setKey(out: Record<string, unknown>, key: string, v: unknown): void {
  if (key === '__proto__') Object.defineProperty(out, key, { value: v, enumerable: true, writable: true });
  else out[key] = v;
}
