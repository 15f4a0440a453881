/**
 * Sets of JSON pointer patterns, as a step declares them in `supplies` and `dependsOn`: `/metadata/labels/team`,
 * `/spec/containers/*\/resources` (`*` matches any one segment). A pattern covers its own path and everything
 * below it. Used to order steps (two patterns overlap when one covers a path the other covers) and to hold a
 * step to its lane (every change of its patch must be covered by its `supplies`).
 */
import type { JsonPatchOperation } from '../admission/types.js';
import { escapeSegment } from '../patch/written-paths.js';

/** A pattern's segments, unescaped (RFC 6901); `*` stands for any one segment. */
export type PathPattern = readonly string[];

const ANY = '*';

/** The segments of a pointer below the root (`/a/b~1c` → `a`, `b/c`). */
export function segmentsOf(pointer: string): string[] {
  return pointer
    .slice(1)
    .split('/')
    .map((s) => (s.includes('~') ? s.replace(/~1/g, '/').replace(/~0/g, '~') : s));
}

const segmentsMatch = (a: string, b: string): boolean => a === b || a === ANY || b === ANY;

/** Whether `pattern` covers `path`: it is `path` or one of its ancestors, segment by segment. */
export function covers(pattern: PathPattern, path: readonly string[]): boolean {
  if (pattern.length > path.length) return false;
  for (let i = 0; i < pattern.length; i++) if (pattern[i] !== ANY && pattern[i] !== path[i]) return false;
  return true;
}

/** Whether some path is covered by both: one of them is an ancestor of (or the same as) the other. */
export function overlaps(a: PathPattern, b: PathPattern): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (!segmentsMatch(a[i]!, b[i]!)) return false;
  return true;
}

/** A step's declared pointers. */
export class WriteSet {
  readonly patterns: readonly PathPattern[];

  constructor(readonly pointers: readonly string[]) {
    this.patterns = pointers.map(segmentsOf);
  }

  covers(path: readonly string[]): boolean {
    return this.patterns.some((pattern) => covers(pattern, path));
  }

  /** Whether `path` lies on the way to a pattern (a strict ancestor of a path it covers). */
  leadsInto(path: readonly string[]): boolean {
    return this.patterns.some((pattern) => pattern.length > path.length && overlaps(pattern, path));
  }

  /** The first pair of pointers, one of each set, that overlap; undefined when none do. */
  overlap(other: WriteSet): readonly [string, string] | undefined {
    for (let i = 0; i < this.patterns.length; i++) {
      for (let j = 0; j < other.patterns.length; j++) {
        if (overlaps(this.patterns[i]!, other.patterns[j]!)) return [this.pointers[i]!, other.pointers[j]!];
      }
    }
    return undefined;
  }
}

const isContainer = (value: unknown): value is Record<string, unknown> | unknown[] =>
  typeof value === 'object' && value !== null;

function valueAt(document: unknown, path: readonly string[]): unknown {
  let node = document;
  for (const key of path) {
    if (!isContainer(node) || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/** JSON text with every object's members in sorted order: equal for equal JSON values. */
const sortedJson = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    isContainer(v) && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, v[k]]),
        )
      : v,
  );

/**
 * What a step that reads `reads` sees in `document`, as text: every path the patterns reach, with its value.
 * Equal texts, equal reads (members in any order). Linear in what the patterns reach.
 */
export function readsIn(document: unknown, reads: WriteSet): string {
  const seen: Array<[string, string]> = [];
  const at: string[] = [];
  const walk = (value: unknown, pattern: PathPattern, i: number): void => {
    if (i === pattern.length) {
      seen.push([at.join('/'), sortedJson(value)]);
      return;
    }
    if (!isContainer(value)) return;
    const keys =
      pattern[i] !== ANY
        ? Object.hasOwn(value, pattern[i]!)
          ? [pattern[i]!]
          : []
        : Array.isArray(value)
          ? Object.keys(value)
          : Object.keys(value).sort();
    for (const key of keys) {
      at.push(escapeSegment(key));
      walk((value as Record<string, unknown>)[key], pattern, i + 1);
      at.pop();
    }
  };
  for (const pattern of reads.patterns) walk(document, pattern, 0);
  return JSON.stringify(seen);
}

/**
 * The first path below `path` where `before` and `after` differ and that `supplies` does not cover. Only
 * called on the way to the lane, so it descends at most as deep as the deepest pattern and then compares
 * whole values.
 */
function firstChangeOutside(before: unknown, after: unknown, path: string[], supplies: WriteSet): string | undefined {
  if (supplies.covers(path)) return undefined;
  if (isContainer(before) && isContainer(after) && supplies.leadsInto(path)) {
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    for (const key of keys) {
      path.push(key);
      const found = firstChangeOutside(
        (before as Record<string, unknown>)[key],
        (after as Record<string, unknown>)[key],
        path,
        supplies,
      );
      path.pop();
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (before === after) return undefined;
  if (
    supplies.leadsInto(path) &&
    ((isContainer(after) && before === undefined) || (isContainer(before) && after === undefined))
  ) {
    // A container created on the way to the lane (or removed from it) with nothing outside the lane in it.
    return firstChangeOutside(
      isContainer(before) ? before : emptyLike(after),
      isContainer(after) ? after : emptyLike(before),
      path,
      supplies,
    );
  }
  return `/${path.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
}

const emptyLike = (value: unknown): Record<string, unknown> | unknown[] => (Array.isArray(value) ? [] : {});

/**
 * The first pointer a step's own patch changes outside its `supplies`, or undefined when the patch keeps to
 * them. `base` is the object the step was given. An operation on the way to the lane (creating
 * `/metadata/labels` to add `/metadata/labels/team`) is inside it when everything it changes is.
 */
export function firstWriteOutside(
  patch: readonly JsonPatchOperation[],
  base: unknown,
  supplies: WriteSet,
): string | undefined {
  for (const op of patch) {
    const path = segmentsOf(op.path);
    if (supplies.covers(path)) continue;
    if (!supplies.leadsInto(path)) return op.path;
    const before = valueAt(base, path);
    const after = op.op === 'remove' ? undefined : 'value' in op ? op.value : undefined;
    const found = firstChangeOutside(before, after, path, supplies);
    if (found !== undefined) return found;
  }
  return undefined;
}

const isObject = (value: unknown): value is Record<string, unknown> => isContainer(value) && !Array.isArray(value);

function has(document: unknown, path: readonly string[]): boolean {
  if (path.length === 0) return true;
  const parent = valueAt(document, path.slice(0, -1));
  return isContainer(parent) && Object.hasOwn(parent, path.at(-1)!);
}

const pointerOf = (path: readonly string[]): string => `/${path.map(escapeSegment).join('/')}`;

/**
 * Merges a declared step's own patch (against its level's base, kept to `supplies`) into `current`, the object
 * as the level-mates before it in chain order left it, by handing `apply` one operation at a time (each sees
 * the ones before it applied): what the step would have done had it run after them. Returns the pointers of
 * the ways it made again. Only the way to its lane
 * can have changed meanwhile (level-mates' supplies do not overlap):
 *  - an object it added on the way (`/metadata/annotations`, created for its annotation) is created empty
 *    when it is not there, and gets the step's members one by one, as a step that creates the maps on the way
 *    writes them (so a later step overwriting one of them is seen as it would be serially);
 *  - an object it removed on the way (with nothing outside its lane in it) to which a level-mate added a member
 *    loses only what the step's lane covers;
 *  - the way a level-mate removed is created again, as objects, for what the step writes below it.
 */
export function mergePatch(
  patch: readonly JsonPatchOperation[],
  current: unknown,
  supplies: WriteSet,
  apply: (op: JsonPatchOperation) => void,
): string[] {
  /** The ways made again, for the step's writes: the chain's order would have seen it make them. */
  const madeAgain: string[] = [];
  /** Adds `value` at `path`, making the way again where a level-mate removed it (one empty object a segment). */
  const put = (path: readonly string[], value: unknown): void => {
    for (let i = 1; i < path.length; i++) {
      const way = path.slice(0, i);
      if (isContainer(valueAt(current, way))) continue;
      madeAgain.push(pointerOf(way));
      apply({ op: 'add', path: madeAgain.at(-1)!, value: {} });
    }
    apply({ op: 'add', path: pointerOf(path), value });
  };
  const add = (path: string[], value: unknown): void => {
    if (supplies.covers(path) || !isObject(value)) {
      put(path, value);
      return;
    }
    if (!isObject(valueAt(current, path))) put(path, {});
    for (const key of Object.keys(value)) {
      path.push(key);
      add(path, value[key]);
      path.pop();
    }
  };
  /** The removals of what the lane covers at `path`, into `out`; whether that was all there is. */
  const removals = (path: string[], out: JsonPatchOperation[]): boolean => {
    const there = valueAt(current, path);
    if (supplies.covers(path) || !isObject(there)) {
      out.push({ op: 'remove', path: pointerOf(path) });
      return true;
    }
    const members: JsonPatchOperation[] = [];
    let all = true;
    for (const key of Object.keys(there)) {
      path.push(key);
      if (supplies.covers(path) || supplies.leadsInto(path)) all = removals(path, members) && all;
      else all = false;
      path.pop();
    }
    if (all) out.push({ op: 'remove', path: pointerOf(path) });
    // One by one: spread, an object's hundreds of thousands of keys would overflow the stack.
    else for (const member of members) out.push(member);
    return all;
  };
  for (const op of patch) {
    const path = segmentsOf(op.path);
    if (op.op === 'add' || (op.op === 'replace' && !has(current, path))) add(path, op.value);
    else if (op.op === 'remove') {
      const out: JsonPatchOperation[] = [];
      if (has(current, path)) removals(path, out);
      out.forEach(apply);
    } else apply(op);
  }
  return madeAgain;
}

/**
 * A declared step's writes (escaped pointers, as it made them on its copy of `base`) that created a map on the
 * way to its lane: when a level-mate has created it first, the chain's order would not have seen them made.
 */
export function creationsOnTheWay(pointers: readonly string[], base: unknown, supplies: WriteSet): Set<string> {
  const created = new Set<string>();
  for (const pointer of pointers) {
    const path = segmentsOf(pointer);
    if (!supplies.covers(path) && !has(base, path)) created.add(pointer);
  }
  return created;
}

/**
 * What a step's `created` (creationsOnTheWay) leaves of `pointers` when merged into `current`: a map a level-mate
 * created first is not the step's write, but what the step put in it down to its lane is (`own`, its copy).
 */
export function writesOnMerge(
  pointers: readonly string[],
  created: ReadonlySet<string>,
  current: unknown,
  own: unknown,
  supplies: WriteSet,
): string[] {
  if (created.size === 0) return [...pointers];
  const out: string[] = [];
  /** The step's members of the map at `path` (in its copy), down to what its lane covers. */
  const members = (path: string[]): void => {
    const value = valueAt(own, path);
    if (!isObject(value)) return;
    for (const key of Object.keys(value)) {
      path.push(key);
      if (supplies.covers(path)) out.push(pointerOf(path));
      else if (!has(current, path)) out.push(pointerOf(path));
      else members(path);
      path.pop();
    }
  };
  for (const pointer of pointers) {
    const path = segmentsOf(pointer);
    if (!created.has(pointer) || !has(current, path)) out.push(pointer);
    else members(path);
  }
  return out;
}
