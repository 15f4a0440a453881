/**
 * A review's patch split by the step that wrote each operation's place, when that is plain: each operation lies
 * in a part of the object only one step wrote (the phase's WrittenPaths says who wrote what). Then, if no step
 * overwrote another's write, each step's own patch is its share of the review's, in the review's order, and
 * nothing needs working back (write-history.ts does that otherwise). Linear in the written tree: the operations'
 * places are disjoint, so each part of it is walked once.
 */
import type { JsonPatchOperation } from '../admission/types.js';
import { unescapeSegment, type WrittenNode } from './written-paths.js';

/** The one writer of everything recorded at or below `node`; undefined when there are several, or none. */
function soleWriter(node: WrittenNode): string | undefined {
  let found: string | undefined;
  const stack: WrittenNode[] = [node];
  while (stack.length > 0) {
    const current = stack.pop()!;
    if (current.writer !== undefined) {
      if (found !== undefined && found !== current.writer) return undefined;
      found = current.writer;
    }
    for (let child = current.firstChild; child; child = child.nextSibling) stack.push(child);
  }
  return found;
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

/**
 * Who wrote the place an operation at `pointer` changes: the first write on the way down to it, or, when the
 * operation covers several writes below it (a map two steps added keys to, made at once), their one writer.
 */
function writerAt(pointer: string, tree: WrittenNode): string | undefined {
  const { node, missed } = descend(tree, pointer, (at) => at.writer === undefined);
  return missed ? undefined : soleWriter(node);
}

/** The longest pointer every one of `ops` lies at or below. */
function commonPointer(ops: readonly JsonPatchOperation[]): string {
  let common = ops[0]!.path.split('/');
  for (let i = 1; i < ops.length && common.length > 1; i++) {
    const segments = ops[i]!.path.split('/');
    let same = 0;
    while (same < common.length && same < segments.length && common[same] === segments[same]) same++;
    common = common.slice(0, same);
  }
  return common.join('/');
}

/**
 * Whether `ops`, all `writer`'s, lie in one place only it wrote: the review's patch then already lists them in the
 * order its own diff would (the tree's children there are in the order it wrote them), and nothing is reordered.
 */
export function inOnePlaceOf(writer: string, ops: readonly JsonPatchOperation[], written: WrittenNode): boolean {
  const { node, missed } = descend(written, commonPointer(ops));
  return !missed && soleWriter(node) === writer;
}

/** Each writer's operations of `patch`, in its order; undefined when some operation is not one writer's. */
export function splitByWriter(
  patch: readonly JsonPatchOperation[],
  written: WrittenNode,
): Map<string, JsonPatchOperation[]> | undefined {
  const byWriter = new Map<string, JsonPatchOperation[]>();
  for (const op of patch) {
    if (op.op === 'move' || op.op === 'copy') return undefined;
    const writer = writerAt(op.path, written);
    if (writer === undefined) return undefined;
    const ops = byWriter.get(writer);
    if (ops) ops.push(op);
    else byWriter.set(writer, [op]);
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
