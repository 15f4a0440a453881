/**
 * The places the mutate phase's steps wrote, kept as a tree of keys: which step wrote what (patch conflicts)
 * and which subtrees the final diff has to cover (diff-written.ts). A write at a place replaces whatever was
 * written below it, so its recorded subtree is reported once and dropped: every recorded key is visited a
 * bounded number of times, and the phase stays linear in what was written however much that is (an object
 * of tens of thousands of containers is input the gateway must take in its stride).
 */

/** A JSON pointer segment for `key`: `~` and `/` escaped (RFC 6901). */
export const escapeSegment = (key: string): string =>
  key.includes('~') || key.includes('/') ? key.replace(/~/g, '~0').replace(/\//g, '~1') : key;

/** The key a JSON pointer segment names: `~1` and `~0` unescaped (RFC 6901). */
export const unescapeSegment = (segment: string): string =>
  segment.includes('~') ? segment.replace(/~1/g, '/').replace(/~0/g, '~') : segment;

/** A container's place in the object, as a tracked view knows it: its parent's place and its key there. */
export interface ContainerPlace {
  /** Undefined for the object itself. */
  readonly parent: ContainerPlace | undefined;
  readonly key: string;
  /** The tree's node for this place, remembered so that more writes into the container find it at once. */
  written?: WrittenNode;
}

/** One key (unescaped) and what was written at or below it. */
export class WrittenNode {
  /** Children in the order they were first written, as a list: walking it allocates nothing. */
  firstChild: WrittenNode | undefined;
  nextSibling: WrittenNode | undefined;
  private lastChild: WrittenNode | undefined;
  /**
   * Finds a child once there are several (a node has one child far more often than not). An object without a
   * prototype rather than a Map: an array's written elements (a Pod's containers) are keyed by their index,
   * which such an object keeps as elements, found without hashing; with no prototype, `__proto__` is a key like
   * any other.
   */
  private index: Record<string, WrittenNode | undefined> | undefined;
  /** The step whose write ends here; undefined for a node that only leads to writes below it. */
  writer: string | undefined;

  constructor(
    readonly key: string,
    readonly parent: WrittenNode | undefined,
  ) {}

  /** The escaped JSON pointer of this place (worked out only for messages). */
  get pointer(): string {
    return this.parent ? `${this.parent.pointer}/${escapeSegment(this.key)}` : '';
  }

  child(key: string): WrittenNode {
    const first = this.firstChild;
    if (first === undefined) return (this.firstChild = this.lastChild = new WrittenNode(key, this));
    if (this.index === undefined) {
      if (first.key === key) return first;
      this.index = Object.create(null) as Record<string, WrittenNode | undefined>;
      this.index[first.key] = first;
    }
    let node = this.index[key];
    if (node === undefined) {
      node = new WrittenNode(key, this);
      this.index[key] = node;
      this.lastChild = this.lastChild!.nextSibling = node;
    }
    return node;
  }

  /** The child at `key`, if anything was written there or below (never makes one). */
  find(key: string): WrittenNode | undefined {
    const first = this.firstChild;
    if (first === undefined) return undefined;
    return this.index === undefined ? (first.key === key ? first : undefined) : this.index[key];
  }

  /** Becomes a write by `writer`, replacing everything recorded below. */
  mark(writer: string): void {
    this.firstChild = this.lastChild = this.index = undefined;
    this.writer = writer;
  }
}

/**
 * Called for each earlier write by another step that a new write replaces (at or below the new place):
 * the two escaped pointers and the earlier writer.
 */
export type OnOverwrite = (pointer: string, earlierPointer: string, earlierWriter: string) => void;

export class WrittenPaths {
  /** The written places as a tree. */
  readonly tree = new WrittenNode('', undefined);

  /**
   * Records that `writer` wrote `key` in the container at `place`. Writing below an earlier write is
   * cooperation (adding a label to a map another step created); writing at or above one replaces it, and
   * `onOverwrite` hears of each earlier write by another step.
   */
  recordAt(place: ContainerPlace, key: string, writer: string, onOverwrite?: OnOverwrite): void {
    this.write(this.nodeOf(place).child(key), writer, onOverwrite);
  }

  /** The same, for an escaped JSON pointer ('' is the whole object). */
  record(pointer: string, writer: string, onOverwrite?: OnOverwrite): void {
    let node = this.tree;
    let at = 1;
    while (at <= pointer.length) {
      let end = pointer.indexOf('/', at);
      if (end < 0) end = pointer.length;
      node = node.child(unescapeSegment(pointer.slice(at, end)));
      at = end + 1;
    }
    this.write(node, writer, onOverwrite);
  }

  /**
   * A place's node, remembered by the place. A place's view belongs to one step's session, so the node it
   * remembers was found in this tree; if a later write by the same step replaced an ancestor, the node is
   * detached and what is recorded there is covered by that ancestor's write.
   */
  private nodeOf(place: ContainerPlace): WrittenNode {
    return (place.written ??= place.parent ? this.nodeOf(place.parent).child(place.key) : this.tree);
  }

  private write(node: WrittenNode, writer: string, onOverwrite: OnOverwrite | undefined): void {
    if (onOverwrite && (node.writer !== undefined || node.firstChild)) reportReplaced(node, writer, onOverwrite);
    node.mark(writer);
  }
}

/** Reports the earlier writes in `node`'s subtree by steps other than `writer`. */
function reportReplaced(node: WrittenNode, writer: string, onOverwrite: OnOverwrite): void {
  const stack: WrittenNode[] = [node];
  while (stack.length > 0) {
    const current = stack.pop()!;
    if (current.writer !== undefined && current.writer !== writer) {
      onOverwrite(node.pointer, current.pointer, current.writer);
    }
    for (let child = current.firstChild; child; child = child.nextSibling) stack.push(child);
  }
}
