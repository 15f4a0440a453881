/**
 * A review's patch split by the step that wrote each operation's place, when that is plain: each operation lies
 * in a part of the object only one step wrote (the phase's WrittenPaths says who wrote what). Then, if no step
 * overwrote another's write, each step's own patch is its share of the review's, in the review's order, and
 * nothing needs working back (write-history.ts does that otherwise). The review's diff says where in the tree it
 * found each operation (diff-written.ts), so an operation's writer is read there rather than looked for from the
 * root. Linear in the written tree: the operations' places are disjoint, so each part of it is walked once.
 */
import type { JsonPatchOperation } from '../admission/types.js';
import { unescapeSegment, type WrittenNode } from './written-paths.js';

/**
 * The one writer of everything recorded at or below `node`; undefined when there are several, or none. Walks the
 * subtree through its links (children, then the next sibling, else back up), so that it allocates nothing.
 */
function soleWriter(node: WrittenNode): string | undefined {
  let found: string | undefined;
  let current = node;
  for (;;) {
    if (current.writer !== undefined) {
      if (found !== undefined && found !== current.writer) return undefined;
      found = current.writer;
    }
    if (current.firstChild !== undefined) {
      current = current.firstChild;
      continue;
    }
    while (current !== node && current.nextSibling === undefined) current = current.parent!;
    if (current === node) return found;
    current = current.nextSibling!;
  }
}

/**
 * The deepest node on the way down `pointer` from `tree`, going on while `onward(node, key)` allows (`key` the next
 * segment, unescaped); `missed` when the next place was not written at or below.
 */
function descend(
  tree: WrittenNode,
  pointer: string,
  onward: (node: WrittenNode, key: string) => boolean = () => true,
): { node: WrittenNode; missed: boolean } {
  let node = tree;
  let at = 1;
  while (at <= pointer.length) {
    let end = pointer.indexOf('/', at);
    if (end < 0) end = pointer.length;
    const key = unescapeSegment(pointer.slice(at, end));
    if (!onward(node, key)) break;
    const child = node.find(key);
    if (child === undefined) return { node, missed: true };
    node = child;
    at = end + 1;
  }
  return { node, missed: false };
}

/** The deepest node `a` and `b` both lie at or below. */
function commonAncestor(a: WrittenNode, b: WrittenNode): WrittenNode {
  let depthA = depthOf(a);
  let depthB = depthOf(b);
  for (; depthA > depthB; depthA--) a = a.parent!;
  for (; depthB > depthA; depthB--) b = b.parent!;
  while (a !== b) {
    a = a.parent!;
    b = b.parent!;
  }
  return a;
}

function depthOf(node: WrittenNode): number {
  let depth = 0;
  for (let at = node.parent; at; at = at.parent) depth++;
  return depth;
}

/**
 * Whether operations at `places` (their written places), all `writer`'s, lie in one place only it wrote: the review's patch then
 * already lists them in the order its own diff would (the tree's children there are in the order it wrote
 * them), and nothing is reordered.
 */
export function inOnePlaceOf(writer: string, places: readonly WrittenNode[]): boolean {
  let common = places[0]!;
  for (let i = 1; i < places.length; i++) if (places[i] !== places[i - 1]) common = commonAncestor(common, places[i]!);
  return soleWriter(common) === writer;
}

/** One writer's operations of the review's patch, and the written place of each. */
export interface Share {
  readonly ops: JsonPatchOperation[];
  readonly places: WrittenNode[];
}

/** `pointer` past its first `segments` segments ('' when that is all of it). */
function pointerBelow(pointer: string, segments: number): string {
  let at = 0;
  for (let i = 0; i < segments && at >= 0; i++) at = pointer.indexOf('/', at + 1);
  return at < 0 ? '' : pointer.slice(at);
}

/**
 * The place an operation diffed at `place` changes, as far as the tree tells it: `place` itself when it was
 * written (or leads nowhere), else — an array diffed whole above several writes — the first write on the way
 * down to the operation's own place; undefined when nothing was written there.
 */
function writtenPlace(op: JsonPatchOperation, place: WrittenNode): WrittenNode | undefined {
  if (place.writer !== undefined || !place.firstChild) return place;
  const { node, missed } = descend(place, pointerBelow(op.path, depthOf(place)), (at) => at.writer === undefined);
  return missed ? undefined : node;
}

/**
 * Each writer's operations of `patch`, in its order, by `places` (diff-written.ts: the node each operation was
 * diffed at); undefined when some operation is not one writer's.
 */
export function splitByWriter(
  patch: readonly JsonPatchOperation[],
  places: readonly WrittenNode[],
): Map<string, Share> | undefined {
  const byWriter = new Map<string, Share>();
  let last: WrittenNode | undefined;
  let writer: string | undefined;
  for (let i = 0; i < patch.length; i++) {
    const op = patch[i]!;
    if (op.op === 'move' || op.op === 'copy') return undefined;
    const place = writtenPlace(op, places[i]!);
    if (place === undefined) return undefined;
    // One written place gives its operations one after another: its writer is found once.
    if (place !== last) {
      last = place;
      writer = soleWriter(place);
    }
    if (writer === undefined) return undefined;
    const share = byWriter.get(writer);
    if (share) {
      share.ops.push(op);
      share.places.push(place);
    } else byWriter.set(writer, { ops: [op], places: [place] });
  }
  return byWriter;
}

/**
 * `ops` (one writer's share) in the order its own diff would give them. The review's patch follows the order in
 * which any step first wrote each place, the writer's own diff the order in which it wrote them (`tree`, its own
 * places), except inside an array (in `root`, the object as the phase left it), whose operations both give in the
 * order diff-written.ts compares its elements: those keep the review's order.
 */
export function inWriteOrder(
  ops: readonly JsonPatchOperation[],
  tree: WrittenNode,
  root: unknown,
): readonly JsonPatchOperation[] {
  if (ops.length < 2) return ops;
  const rank = new Map<WrittenNode, number>();
  const stack: WrittenNode[] = [tree];
  while (stack.length > 0) {
    const node = stack.pop()!;
    rank.set(node, rank.size);
    const children: WrittenNode[] = [];
    for (let child = node.firstChild; child; child = child.nextSibling) children.push(child);
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
  const placeOf = (pointer: string): number => {
    // Down the object beside the tree, to stop at the first array.
    let value = root;
    const { node } = descend(tree, pointer, (_, key) => {
      if (Array.isArray(value)) return false;
      value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
      return true;
    });
    return rank.get(node)!;
  };
  // Sorting is stable: operations at or below one place keep the review's order.
  return ops
    .map((op) => ({ op, place: placeOf(op.path) }))
    .sort((a, b) => a.place - b.place)
    .map(({ op }) => op);
}
