/**
 * An ApplyConfiguration mutation's result merged into the object as the apiserver merges it (structured merge,
 * as server-side apply): maps and structs field by field, lists that merge by key item by item (a container by
 * its name, an env var by its name), set lists by adding what is missing; a scalar replaces. As the apiserver,
 * an apply configuration that sets an atomic list, map or struct is refused: it would remove whatever it does not
 * repeat. A `null` field removes the field. The merge is given as the JSON Patch operations that make it, so
 * that it joins the chain's patch like any step's changes.
 */
import { isDeepStrictEqual } from 'node:util';
import type { JsonPatchOperation } from '../admission/types.js';
import { escapeKey } from '../cel/jsonpatch.js';
import type { ListMerge, MergeSchema } from './merge-schema.js';

/** The merge cannot be made: the mutation fails (its failurePolicy applies). */
export class ApplyConfigurationError extends Error {
  override readonly name = 'ApplyConfigurationError';
}

/** Atomic places named in the error at most. */
const MAX_NAMED = 5;

type Json = Record<string, unknown>;

const isMap = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Where a walk is: the JSON pointer, the schema's field path (no list indexes) and the path the user reads. */
interface Place {
  readonly pointer: string;
  readonly field: string;
  readonly shown: string;
}

const fieldOf = (at: Place, key: string): Place => ({
  pointer: `${at.pointer}/${escapeKey(key)}`,
  field: at.field === '' ? key : `${at.field}.${key}`,
  shown: `${at.shown}.${key}`,
});

const itemOf = (at: Place, index: number | '-'): Place => ({
  pointer: `${at.pointer}/${index}`,
  field: at.field,
  shown: `${at.shown}[${index}]`,
});

/** The atomic lists, maps and structs `config` sets, as the apiserver names them (`.spec.containers[0].args`). */
function atomics(value: unknown, at: Place, schema: MergeSchema, found: string[]): void {
  if (found.length > MAX_NAMED) return;
  if (Array.isArray(value)) {
    if (schema.listAt(at.field) === undefined) {
      found.push(at.shown);
      return;
    }
    value.forEach((item, i) => atomics(item, itemOf(at, i), schema, found));
  } else if (isMap(value)) {
    if (at.field !== '' && schema.atomicAt(at.field)) {
      found.push(at.shown);
      return;
    }
    for (const key of Object.keys(value)) atomics(value[key], fieldOf(at, key), schema, found);
  }
}

/** `value` without its null fields: what a new subtree of the apply configuration sets. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (!isMap(value)) return value;
  const out: Json = {};
  for (const key of Object.keys(value)) {
    if (value[key] === null) continue;
    if (key === '__proto__') Object.defineProperty(out, key, { value: withoutNulls(value[key]), enumerable: true });
    else out[key] = withoutNulls(value[key]);
  }
  return out;
}

/** The key of a keyed list's item, as text (one value per key field, defaults filled in). */
function keyOf(item: unknown, list: Extract<ListMerge, { type: 'map' }>, at: Place): string {
  if (!isMap(item))
    throw new ApplyConfigurationError(`${at.shown}: expected an object in a list keyed by ${list.keys.join(', ')}`);
  return JSON.stringify(list.keys.map((k) => item[k] ?? list.defaults?.[k] ?? null));
}

class Merge {
  readonly ops: JsonPatchOperation[] = [];

  constructor(private readonly schema: MergeSchema) {}

  /** Sets `value` at `at`, where `current` is (undefined: nothing). */
  private set(at: Place, current: unknown, value: unknown): void {
    const op = current === undefined ? 'add' : 'replace';
    this.ops.push({ op, path: at.pointer, value: withoutNulls(value) });
  }

  value(current: unknown, config: unknown, at: Place): void {
    if (isMap(config)) {
      if (!isMap(current)) return this.set(at, current, config);
      for (const key of Object.keys(config)) {
        const child = fieldOf(at, key);
        const next = config[key];
        const has = Object.hasOwn(current, key);
        if (next === null) {
          if (has) this.ops.push({ op: 'remove', path: child.pointer });
        } else if (!has) this.set(child, undefined, next);
        else this.value(current[key], next, child);
      }
    } else if (Array.isArray(config)) {
      const list = this.schema.listAt(at.field);
      if (!Array.isArray(current) || list === undefined) return this.set(at, current, config);
      if (list.type === 'set') this.union(current, config, at);
      else this.keyed(current, config, list, at);
    } else if (!isDeepStrictEqual(current, config)) this.set(at, current, config);
  }

  private union(current: readonly unknown[], config: readonly unknown[], at: Place): void {
    const present = new Set(current.map((item) => JSON.stringify(item)));
    for (const item of config) {
      const text = JSON.stringify(item);
      if (present.has(text)) continue;
      present.add(text);
      this.ops.push({ op: 'add', path: itemOf(at, '-').pointer, value: item });
    }
  }

  private keyed(
    current: readonly unknown[],
    config: readonly unknown[],
    list: Extract<ListMerge, { type: 'map' }>,
    at: Place,
  ): void {
    const index = new Map<string, number>();
    current.forEach((item, i) => {
      if (!isMap(item)) return;
      const key = keyOf(item, list, at);
      if (!index.has(key)) index.set(key, i);
    });
    const seen = new Set<string>();
    config.forEach((item, i) => {
      const key = keyOf(item, list, itemOf(at, i));
      if (seen.has(key)) throw new ApplyConfigurationError(`${at.shown}: two items have the key ${key}`);
      seen.add(key);
      const found = index.get(key);
      if (found === undefined) this.ops.push({ op: 'add', path: itemOf(at, '-').pointer, value: withoutNulls(item) });
      else this.value(current[found], item, itemOf(at, found));
    });
  }
}

/**
 * The operations that merge `config` (an `Object{…}` as JSON) into `object`, or ApplyConfigurationError when the
 * apiserver would refuse it.
 */
export function applyConfigurationPatch(object: Json, config: unknown, schema: MergeSchema): JsonPatchOperation[] {
  if (!isMap(config)) throw new ApplyConfigurationError('expected an Object{…} as the result');
  const root: Place = { pointer: '', field: '', shown: '' };
  const found: string[] = [];
  atomics(config, root, schema, found);
  if (found.length > 0) {
    const more = found.length > MAX_NAMED ? ', …' : '';
    throw new ApplyConfigurationError(
      `may not mutate atomic arrays, maps or structs: ${found.slice(0, MAX_NAMED).join(', ')}${more}`,
    );
  }
  const merge = new Merge(schema);
  merge.value(object, config, root);
  return merge.ops;
}
