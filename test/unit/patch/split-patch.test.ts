/**
 * Whether a writer's operations lie in one place only it wrote (split-patch.ts, `inOnePlaceOf`): everything written
 * at or below their common place must be that writer's, however deep and wherever among siblings another's is.
 */
import assert from 'node:assert/strict';
import { inOnePlaceOf } from '../../../server/patch/split-patch.js';
import { WrittenPaths, type WrittenNode } from '../../../server/patch/written-paths.js';

/** The node at `path` (slash-separated keys), made and marked as written by `writer` when given. */
function at(paths: WrittenPaths, path: string, writer?: string): WrittenNode {
  let node = paths.tree;
  for (const key of path.split('/')) node = node.child(key);
  if (writer !== undefined) node.mark(writer);
  return node;
}

describe('inOnePlaceOf', () => {
  it("finds another writer's place anywhere below the common place: deep, after siblings, below a written place", () => {
    const paths = new WrittenPaths();
    const y = at(paths, 'c/a/x/y', 'A');
    const z = at(paths, 'c/a/z', 'B');
    const d = at(paths, 'c/d', 'A');
    const w = at(paths, 'c/e/f/g/w', 'A');
    assert.equal(inOnePlaceOf('A', [y, d]), false, "B's c/a/z is a sibling below c");
    assert.equal(inOnePlaceOf('A', [y, w]), false);
    assert.equal(inOnePlaceOf('A', [d, w]), false, 'c is the common place, and B wrote below it');
    assert.equal(inOnePlaceOf('A', [y, y]), true);
    assert.equal(inOnePlaceOf('B', [z]), true);
    assert.equal(inOnePlaceOf('A', [w]), true);

    const p = at(paths, 'q/p', 'A');
    const r = at(paths, 'q/r', 'A');
    assert.equal(inOnePlaceOf('A', [p, r]), true, 'q has only places of A');
    at(paths, 'q/p/below', 'B');
    assert.equal(inOnePlaceOf('A', [p]), false, 'B wrote below the place A wrote');
    assert.equal(inOnePlaceOf('A', [p, r]), false);
  });
});
