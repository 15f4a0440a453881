/** Small helpers for JSON values whose shape a plugin cannot trust (a custom resource, a malformed field). */

/** A JSON object (never an array or null). */
export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * `map[key]` when it is the map's own entry, else undefined. A plain read would find what every object
 * inherits: `labels['constructor']` is a function even when no such label is set. Cheaper than
 * `Object.hasOwn` on `ctx.object`, a view that records writes (docs/decisions.md, "The working copy is copied
 * as it is read, and each step's writes are tracked"): a JSON value is never a function, so a function found
 * is inherited, and `__proto__` is the one inherited object.
 */
export function own<V>(map: Readonly<Record<string, V>> | null | undefined, key: string): V | undefined {
  if (map === undefined || map === null) return undefined;
  const value = map[key];
  if (value === undefined || typeof value === 'function') return undefined;
  return key === '__proto__' && !Object.hasOwn(map, key) ? undefined : value;
}
