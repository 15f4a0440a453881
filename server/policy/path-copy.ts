/**
 * A copy of an object that a JSON patch may be applied to without changing the original: only the maps and lists
 * on the way to what the operations change are copied (shallowly, as the mutate phase's working copy copies what
 * steps reach), the rest is shared. Copying the whole object for every mutation would cost as much as the object
 * is large; this costs as much as the paths are wide.
 */
import type { JsonPatchOperation, KubeObject } from '../admission/types.js';
import { WorkingCopy } from '../patch/working-copy.js';
import { unescapeSegment } from '../patch/written-paths.js';

/** `root` with the containers holding each operation's `path` and `from` copied. */
export function copyAlong(root: KubeObject, ops: readonly JsonPatchOperation[]): KubeObject {
  const copy = new WorkingCopy(root);
  for (const op of ops) {
    for (const pointer of 'from' in op ? [op.path, op.from] : [op.path]) {
      if (typeof pointer !== 'string') continue;
      const parents = pointer.split('/').slice(1, -1);
      let node: Record<string, unknown> = copy.root;
      for (const segment of parents) {
        // An inherited member is not the object's (and a patch through one is refused when it is applied).
        const key = unescapeSegment(segment);
        if (!Object.hasOwn(node, key)) break;
        const child = node[key];
        if (typeof child !== 'object' || child === null) break;
        node = copy.own(node, key, child as Record<string, unknown>) as Record<string, unknown>;
      }
    }
  }
  return copy.root;
}
