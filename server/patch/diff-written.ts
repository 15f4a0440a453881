/**
 * The review's one patch when only what the steps wrote can differ from the request object: the same
 * result as a full diff (apply.ts diffPatch), at the cost of the written parts instead of the whole object.
 * It walks the tree of written places and both documents together.
 */
import type { JsonPatchOperation } from '../admission/types.js';
import { diffPatch } from './apply.js';
import { WrittenPaths, escapeSegment, type WrittenNode } from './written-paths.js';

const ABSENT = Symbol('absent');

function isContainer(value: unknown): value is Record<string, unknown> | unknown[] {
  return typeof value === 'object' && value !== null;
}

/** `value[key]` when `value` is a container that has it, else ABSENT. */
function member(value: unknown, key: string): unknown {
  return isContainer(value) && Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : ABSENT;
}

/** The operations turning `before` into `after` at `pointer` (either may be ABSENT). */
function diffAt(pointer: string, before: unknown, after: unknown, ops: JsonPatchOperation[]): void {
  if (before === ABSENT) {
    if (after !== ABSENT) ops.push({ op: 'add', path: pointer, value: after });
  } else if (after === ABSENT) {
    ops.push({ op: 'remove', path: pointer });
  } else if (isContainer(before) && isContainer(after) && Array.isArray(before) === Array.isArray(after)) {
    for (const op of diffPatch(before, after)) {
      ops.push({ ...op, path: `${pointer}${op.path}`, ...('from' in op ? { from: `${pointer}${op.from}` } : {}) });
    }
  } else if (before !== after) {
    // Not two containers of one kind: equal only as the same primitive, which is how diffPatch() (compare())
    // decides for the members it walks, so both give the same patch (-0 and 0 are equal to both). `before`
    // comes from JSON, so it is never NaN, the one value that differs from itself.
    ops.push({ op: 'replace', path: pointer, value: after });
  }
}

/**
 * Below `node`, at `pointer`. A written node is diffed whole. An array whose length changed is diffed
 * whole too (an insertion or removal shifts the neighbours); one of the same length is descended into:
 * every element a step shifted or replaced was itself written, so each written element is diffed on its
 * own — a container edited in place costs that container's fields, not a comparison of the whole list.
 */
function diffNode(
  node: WrittenNode,
  pointer: string,
  before: unknown,
  after: unknown,
  ops: JsonPatchOperation[],
  places: WrittenNode[] | undefined,
): void {
  if (
    node.writer !== undefined ||
    !node.firstChild ||
    ((Array.isArray(before) || Array.isArray(after)) && !sameLengthArrays(before, after))
  ) {
    const from = ops.length;
    diffAt(pointer, before, after, ops);
    if (places) for (let i = from; i < ops.length; i++) places.push(node);
    return;
  }
  for (let child: WrittenNode | undefined = node.firstChild; child; child = child.nextSibling) {
    const { key } = child;
    diffNode(child, `${pointer}/${escapeSegment(key)}`, member(before, key), member(after, key), ops, places);
  }
}

const sameLengthArrays = (a: unknown, b: unknown): boolean =>
  Array.isArray(a) && Array.isArray(b) && a.length === b.length;

/**
 * The patch from `original` to `current` when only the subtrees at the `written` pointers can differ.
 * Values in the patch are shared with `current`, which the caller no longer modifies. Given `places`, each
 * operation's node of the tree is pushed to it, in the patch's order: the node it was diffed at, the first
 * written one on its way down or an array above several writes (split-patch.ts tells writers by it).
 */
export function diffWritten(
  original: object,
  current: object,
  written: WrittenPaths | Iterable<string>,
  places?: WrittenNode[],
): JsonPatchOperation[] {
  let tree: WrittenNode;
  if (written instanceof WrittenPaths) tree = written.tree;
  else {
    const paths = new WrittenPaths();
    for (const pointer of written) paths.record(pointer, '');
    tree = paths.tree;
  }
  if (!tree.firstChild && tree.writer === undefined) return [];
  const ops: JsonPatchOperation[] = [];
  diffNode(tree, '', original, current, ops, places);
  return ops;
}
