/**
 * Deep copy of a JSON value (what JSON.parse produces). About six times faster than structuredClone for a
 * typical object, which matters: the mutate phase copies the object under review once per request.
 */
export function cloneJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const out: unknown[] = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = cloneJson<unknown>(value[i]);
    return out as T;
  }
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const item = cloneJson((value as Record<string, unknown>)[key]);
    // JSON.parse makes "__proto__" an own data property; plain assignment would set the prototype instead.
    if (key === '__proto__')
      Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true });
    else out[key] = item;
  }
  return out as T;
}
