/**
 * The apiserver's list functions: its own library (isSorted, sum, min, max, indexOf, lastIndexOf) and cel-go's
 * lists extension at the version it uses from Kubernetes 1.34 (slice, flatten, distinct, reverse, sort,
 * lists.range; sortBy is a macro this engine cannot take: unavailable.ts).
 */
import { charge, traversal } from './cost.js';
import { celCompare, celEquals, typeName } from './equality.js';
import type { Library } from './library.js';
import { CelEvalError, smallInt } from './library.js';

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

function sum(list: readonly unknown[]): unknown {
  if (list.length === 0) return 0n;
  if (list.every((v) => typeof v === 'bigint')) {
    let total = 0n;
    for (const v of list as bigint[]) {
      total += v;
      if (total > INT64_MAX || total < INT64_MIN) throw new CelEvalError('numeric_overflow', 'sum() overflows int');
    }
    return total;
  }
  if (list.every((v) => typeof v === 'number')) return (list as number[]).reduce((a, b) => a + b, 0);
  throw new CelEvalError('no_such_overload', 'sum() needs a list of ints or of doubles');
}

function extreme(list: readonly unknown[], name: string, sign: 1 | -1): unknown {
  if (list.length === 0) throw new CelEvalError('invalid_argument', `${name}() called on an empty list`);
  let best = list[0];
  for (let i = 1; i < list.length; i++) if (celCompare(list[i], best) * sign > 0) best = list[i];
  return best;
}

function isSorted(list: readonly unknown[]): boolean {
  for (let i = 1; i < list.length; i++) if (celCompare(list[i - 1], list[i]) > 0) return false;
  return true;
}

function indexOf(list: readonly unknown[], value: unknown, last: boolean): bigint {
  if (last) {
    for (let i = list.length - 1; i >= 0; i--) if (celEquals(list[i], value)) return BigInt(i);
  } else for (let i = 0; i < list.length; i++) if (celEquals(list[i], value)) return BigInt(i);
  return -1n;
}

function slice(list: readonly unknown[], start: bigint, end: bigint): unknown[] {
  if (start < 0n || end < 0n)
    throw new CelEvalError('invalid_argument', `cannot slice(${start}, ${end}), negative indexes not supported`);
  if (start > end)
    throw new CelEvalError(
      'invalid_argument',
      `cannot slice(${start}, ${end}), start index must be less than or equal to end index`,
    );
  if (end > BigInt(list.length))
    throw new CelEvalError('invalid_argument', `cannot slice(${start}, ${end}), list is length ${list.length}`);
  return list.slice(Number(start), Number(end));
}

function flatten(list: readonly unknown[], depth: bigint): unknown[] {
  if (depth < 0n) throw new CelEvalError('invalid_argument', 'level must be non-negative');
  const out: unknown[] = [];
  const levels = smallInt(depth, 'the depth');
  const walk = (items: readonly unknown[], level: number): void => {
    for (const v of items) {
      if (Array.isArray(v) && level < levels) {
        charge(traversal(v.length));
        walk(v as unknown[], level + 1);
      } else out.push(v);
    }
  };
  walk(list, 0);
  return out;
}

/** A key that equal scalars share (1 and 1.0 included), or undefined for a list, map or library value. */
function scalarKey(v: unknown): string | undefined {
  switch (typeof v) {
    case 'bigint':
      return `n${v}`;
    case 'number':
      return Number.isInteger(v) ? `n${BigInt(v)}` : `d${v}`;
    case 'string':
      return `s${v}`;
    case 'boolean':
      return `b${v}`;
    default:
      return v === null ? 'null' : undefined;
  }
}

function distinct(list: readonly unknown[]): unknown[] {
  const out: unknown[] = [];
  const seen = new Set<string>();
  const others: unknown[] = [];
  for (const v of list) {
    const key = scalarKey(v);
    if (key !== undefined) {
      if (!seen.has(key)) {
        seen.add(key);
        out.push(v);
      }
    } else {
      // Lists and maps are compared one by one with those kept so far: that walk is paid for here.
      charge(others.length);
      if (!others.some((o) => celEquals(o, v))) {
        others.push(v);
        out.push(v);
      }
    }
  }
  return out;
}

function sort(list: readonly unknown[]): unknown[] {
  if (list.length > 1) {
    const kind = typeName(list[0]);
    if (!list.every((v) => typeName(v) === kind || (typeof v === 'bigint') === (typeof list[0] === 'bigint')))
      throw new CelEvalError('no_such_overload', 'sort() needs a list of one comparable type');
    charge(Math.ceil(list.length * Math.log2(list.length)));
  }
  return [...list].sort(celCompare);
}

function range(n: bigint): bigint[] {
  if (n < 0n) throw new CelEvalError('invalid_argument', 'lists.range() needs a non-negative count');
  // Paid for before the list is made, so a huge count is refused without allocating it.
  charge(Number(n > 10n ** 15n ? 10n ** 15n : n));
  return Array.from({ length: Number(n) }, (_, i) => BigInt(i));
}

/** The `lists` in `lists.range(n)`. */
export class ListsNamespace {}

export const listsLibrary: Library = {
  types: [['ListsNamespace', ListsNamespace]],
  constants: [['lists', 'ListsNamespace', new ListsNamespace()]],
  functions: [
    ['list<dyn>.isSorted(): bool', (l: unknown[]) => isSorted(l)],
    ['list<dyn>.sum(): dyn', (l: unknown[]) => sum(l)],
    ['list<dyn>.min(): dyn', (l: unknown[]) => extreme(l, 'min', -1)],
    ['list<dyn>.max(): dyn', (l: unknown[]) => extreme(l, 'max', 1)],
    ['list<dyn>.indexOf(dyn): int', (l: unknown[], v: unknown) => indexOf(l, v, false)],
    ['list<dyn>.lastIndexOf(dyn): int', (l: unknown[], v: unknown) => indexOf(l, v, true)],
    ['list<A>.slice(int, int): list<A>', (l: unknown[], s: bigint, e: bigint) => slice(l, s, e)],
    ['list<dyn>.flatten(): list<dyn>', (l: unknown[]) => flatten(l, 1n)],
    ['list<dyn>.flatten(int): list<dyn>', (l: unknown[], d: bigint) => flatten(l, d)],
    ['list<A>.distinct(): list<A>', (l: unknown[]) => distinct(l)],
    ['list<A>.reverse(): list<A>', (l: unknown[]) => [...l].reverse()],
    ['list<A>.sort(): list<A>', (l: unknown[]) => sort(l)],
    ['ListsNamespace.range(int): list<int>', (_ns: unknown, n: bigint) => range(n)],
  ],
};
