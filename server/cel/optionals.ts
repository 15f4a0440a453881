/**
 * The optional-type functions the apiserver has beyond the engine's `?.`, `[?]`, `hasValue`, `value`, `or`,
 * `orValue`, `optional.of` and `optional.none`: `optional.ofNonZeroValue`, and `==` between optionals.
 */
import { Optional } from '@marcbachmann/cel-js';
import { celEquals } from './equality.js';
import type { Library } from './library.js';

/** CEL's zero values: 0, 0.0, '', false, null, empty bytes, list and map. */
function isZero(v: unknown): boolean {
  if (v === null || v === false || v === 0n || v === 0 || v === '') return true;
  if (Array.isArray(v) || v instanceof Uint8Array) return v.length === 0;
  if (v instanceof Map) return v.size === 0;
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) return Object.keys(v).length === 0;
  return false;
}

export const optionalsLibrary: Library = {
  functions: [
    [
      'OptionalNamespace.ofNonZeroValue(dyn): optional<dyn>',
      (_ns: unknown, v: unknown) => (isZero(v) ? Optional.none() : Optional.of(v)),
    ],
  ],
  operators: [['optional<dyn> == optional<dyn>', (a: unknown, b: unknown) => celEquals(a, b)]],
};
