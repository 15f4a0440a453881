/** cel-go's sets extension, which the apiserver has from Kubernetes 1.29: lists compared as sets. */
import { charge, traversal } from './cost.js';
import { celEquals } from './equality.js';
import type { Library } from './library.js';

const has = (list: readonly unknown[], v: unknown): boolean => list.some((x) => celEquals(x, v));

/** Each element of one list may be compared with each of the other: paid for before it starts. */
function pairs(a: readonly unknown[], b: readonly unknown[]): void {
  charge(traversal(a.length * b.length));
}

/** The `sets` in `sets.contains(a, b)`. */
export class SetsNamespace {}

export const setsLibrary: Library = {
  types: [['SetsNamespace', SetsNamespace]],
  constants: [['sets', 'SetsNamespace', new SetsNamespace()]],
  functions: [
    // Every element of b is in a.
    [
      'SetsNamespace.contains(list<dyn>, list<dyn>): bool',
      (_: unknown, a: unknown[], b: unknown[]) => (pairs(a, b), b.every((v) => has(a, v))),
    ],
    // Each contains the other (duplicates and order do not matter).
    [
      'SetsNamespace.equivalent(list<dyn>, list<dyn>): bool',
      (_: unknown, a: unknown[], b: unknown[]) => (pairs(a, b), b.every((v) => has(a, v)) && a.every((v) => has(b, v))),
    ],
    // At least one element in common.
    [
      'SetsNamespace.intersects(list<dyn>, list<dyn>): bool',
      (_: unknown, a: unknown[], b: unknown[]) => (pairs(a, b), b.some((v) => has(a, v))),
    ],
  ],
};
