/**
 * A copy of an object that a JSON patch may be applied to without changing the original: only the maps and lists
 * on the way to what the operations change are copied (shallowly), the rest is shared. Copying the whole object for
 * every mutation would cost as much as the object is large; this costs as much as the paths are wide.
 */
import type { JsonPatchOperation, KubeObject } from '../admission/types.js';

/** Segments a patch may not go through (apply.ts refuses them); the copy stops there too. */
const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);

const unescape = (segment: string): string =>
  segment.includes('~') ? segment.replace(/~1/g, '/').replace(/~0/g, '~') : segment;

/** `root` with the containers holding each operation's `path` and `from` copied. */
export function copyAlong(root: KubeObject, ops: readonly JsonPatchOperation[]): KubeObject {
  const out: KubeObject = { ...root };
  const copied = new Set<object>([out]);
  for (const op of ops) {
    for (const pointer of 'from' in op ? [op.path, op.from] : [op.path]) {
      if (typeof pointer !== 'string') continue;
      const parents = pointer.split('/').slice(1, -1);
      let node: Record<string, unknown> = out;
      for (const segment of parents) {
        const key = unescape(segment);
        if (FORBIDDEN.has(key) || !Object.hasOwn(node, key)) break;
        const child = node[key];
        if (typeof child !== 'object' || child === null) break;
        let copy = child as Record<string, unknown>;
        if (!copied.has(child)) {
          copy = (Array.isArray(child) ? child.slice() : { ...child }) as Record<string, unknown>;
          copied.add(copy);
          node[key] = copy;
        }
        node = copy;
      }
    }
  }
  return out;
}
