/**
 * Where an object differs from what a case expects of it, field by field (JSON pointers), for `patched`. As a
 * `subset`, only what is expected is compared: a map's other keys are left alone, a list has the expected
 * length and each item is compared as a subset in turn; as a `whole`, every field is. Scalars compare by
 * value. The walk is linear in the objects' size, and nests no deeper than an object the webhook accepts.
 */
import { MAX_NESTING_DEPTH } from '../base/limits.js';
import type { MatchMode } from './suite.js';

/** A field that differs; `undefined` stands for a field that is absent. */
export interface Difference {
  readonly path: string;
  readonly expected: unknown;
  readonly actual: unknown;
}

const isMap = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const segment = (key: string | number): string => `/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;

/** Every difference between `expected` and `actual` as `mode` compares them, in document order. */
export function objectDifferences(expected: unknown, actual: unknown, mode: MatchMode): Difference[] {
  const found: Difference[] = [];
  const walk = (e: unknown, a: unknown, path: string, depth: number): void => {
    if (depth > MAX_NESTING_DEPTH) {
      found.push({
        path,
        expected: `(nested deeper than ${MAX_NESTING_DEPTH} levels)`,
        actual: a === undefined ? a : '(not compared)',
      });
      return;
    }
    if (isMap(e) && isMap(a)) {
      for (const key of Object.keys(e)) walk(e[key], a[key], `${path}${segment(key)}`, depth + 1);
      if (mode === 'whole') {
        for (const key of Object.keys(a))
          if (!Object.hasOwn(e, key))
            found.push({ path: `${path}${segment(key)}`, expected: undefined, actual: a[key] });
      }
      return;
    }
    if (Array.isArray(e) && Array.isArray(a) && e.length === a.length) {
      e.forEach((item, i) => walk(item, a[i], `${path}${segment(i)}`, depth + 1));
      return;
    }
    if (e === a) return;
    found.push({ path: path || '/', expected: e, actual: a });
  };
  walk(expected, actual, '', 0);
  return found;
}
