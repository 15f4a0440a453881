/**
 * Applies a step's JSON patch to the working copy. fast-json-patch validates each operation and bans
 * `__proto__`/`constructor/prototype` (CVE-2021-4279); the gateway additionally refuses those segments
 * anywhere in a path, and refuses non-array patches, before anything is applied.
 */
import jsonpatch from 'fast-json-patch';
import { PatchApplyError } from '../errors.js';
import type { JsonPatchOperation } from '../plugin-api/types.js';

const OPS = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test']);
const FORBIDDEN_SEGMENTS = new Set(['__proto__', 'constructor', 'prototype']);

function checkPointer(pointer: unknown, index: number, field: string): void {
  if (typeof pointer !== 'string' || !pointer.startsWith('/')) {
    // "" would replace the whole object, including apiVersion/kind/metadata.name: never a valid mutation.
    throw new PatchApplyError(
      `operation ${index}: ${field} must be a JSON pointer below the object root, got ${JSON.stringify(pointer)}`,
      index,
    );
  }
  for (const segment of pointer.split('/')) {
    if (FORBIDDEN_SEGMENTS.has(segment)) {
      throw new PatchApplyError(
        `operation ${index}: ${field} "${pointer}" contains forbidden segment "${segment}"`,
        index,
      );
    }
  }
}

/** Checks the shape of an untrusted patch (e.g. decoded from a provider's answer). */
export function checkPatchShape(patch: unknown): asserts patch is JsonPatchOperation[] {
  if (!Array.isArray(patch)) throw new PatchApplyError('patch must be a JSON array of operations', -1);
  patch.forEach((op: unknown, index) => {
    if (typeof op !== 'object' || op === null) throw new PatchApplyError(`operation ${index} is not an object`, index);
    const { op: name, path, from } = op as Record<string, unknown>;
    if (typeof name !== 'string' || !OPS.has(name)) {
      throw new PatchApplyError(`operation ${index}: op ${JSON.stringify(name)} is not a JSON patch operation`, index);
    }
    checkPointer(path, index, 'path');
    if (name === 'move' || name === 'copy') checkPointer(from, index, 'from');
    if ((name === 'add' || name === 'replace' || name === 'test') && !('value' in op)) {
      throw new PatchApplyError(`operation ${index}: "${name}" needs a value`, index);
    }
  });
}

/**
 * Applies `patch` to `document` in place (pass a tracked view so the writes are journaled and can be
 * rolled back when an operation fails part-way).
 */
export function applyPatchInPlace(document: object, patch: readonly JsonPatchOperation[]): void {
  checkPatchShape(patch);
  patch.forEach((operation, index) => {
    try {
      jsonpatch.applyOperation(document, operation as jsonpatch.Operation, true, true, true, index);
    } catch (err) {
      const detail = err instanceof Error ? err.message.split('\n', 1)[0] : String(err);
      throw new PatchApplyError(
        `operation ${index} (${operation.op} ${operation.path}) does not apply: ${detail}`,
        index,
        {
          cause: err,
        },
      );
    }
  });
}

/** The one patch of a review: from the request object to the final working copy. */
export function diffPatch(original: object, current: object): JsonPatchOperation[] {
  return jsonpatch.compare(original, current) as JsonPatchOperation[];
}

function unescapeSegment(segment: string): string {
  return segment.includes('~') ? segment.replace(/~1/g, '/').replace(/~0/g, '~') : segment;
}

function isContainer(value: unknown): value is Record<string, unknown> | unknown[] {
  return typeof value === 'object' && value !== null;
}

const ABSENT = Symbol('absent');

/** `value[key]` when `value` is a container that has it, else ABSENT. */
function member(value: unknown, key: string): unknown {
  return isContainer(value) && Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : ABSENT;
}

/** Where to diff for one written pointer, and the values there before and after. */
interface DiffRoot {
  /** How many of the pointer's segments lead to it. */
  readonly depth: number;
  readonly before: unknown;
  readonly after: unknown;
}

/**
 * Walks a written pointer in both documents at once, down to the pointer itself or to the first array
 * on the way whose length changed (an insertion or removal shifts the neighbours, so the whole array is
 * compared). An array of the same length in both documents is descended into: every element a step
 * shifted or replaced was itself written, so each written element is diffed on its own — a container
 * edited in place costs that container's fields, not a comparison of the whole list.
 */
function diffRoot(original: unknown, current: unknown, segments: readonly string[]): DiffRoot {
  let before: unknown = original;
  let after: unknown = current;
  for (let i = 0; i < segments.length; i++) {
    if (Array.isArray(before) || Array.isArray(after)) {
      if (!(Array.isArray(before) && Array.isArray(after) && before.length === after.length)) {
        return { depth: i, before, after };
      }
    }
    before = member(before, segments[i]!);
    after = member(after, segments[i]!);
  }
  return { depth: segments.length, before, after };
}

/** The first `depth` segments of an escaped pointer, still escaped (an escaped segment holds no '/'). */
function pointerPrefix(pointer: string, depth: number): string {
  let end = 0;
  for (let i = 0; i < depth; i++) {
    end = pointer.indexOf('/', end + 1);
    if (end === -1) return pointer;
  }
  return pointer.slice(0, end);
}

/** Whether a strict ancestor of `pointer` is among `roots` (a handful: comparing beats hashing slices). */
function hasAncestorIn(roots: ReadonlyMap<string, unknown>, pointer: string): boolean {
  for (const root of roots.keys()) {
    if (root.length < pointer.length && pointer.charCodeAt(root.length) === 47 /* / */ && pointer.startsWith(root))
      return true;
  }
  return false;
}

/**
 * The patch from `original` to `current` when only the subtrees at `written` pointers can differ: the
 * same result as diffPatch, at the cost of the written parts instead of the whole object. Values in the
 * patch are shared with `current`, which the caller no longer modifies.
 */
export function diffWritten(original: object, current: object, written: Iterable<string>): JsonPatchOperation[] {
  const roots = new Map<string, DiffRoot>();
  for (const pointer of written) {
    const segments = pointer.split('/');
    segments.shift();
    if (pointer.includes('~')) for (let i = 0; i < segments.length; i++) segments[i] = unescapeSegment(segments[i]!);
    const root = diffRoot(original, current, segments);
    if (root.depth === 0) return diffPatch(original, current);
    const at = root.depth === segments.length ? pointer : pointerPrefix(pointer, root.depth);
    if (!roots.has(at)) roots.set(at, root);
  }
  // In write order (the chain's order); a write below another written pointer is covered by that one.
  const ops: JsonPatchOperation[] = [];
  for (const [pointer, { before, after }] of roots) {
    if (hasAncestorIn(roots, pointer)) continue;
    if (before === ABSENT) {
      if (after !== ABSENT) ops.push({ op: 'add', path: pointer, value: after });
    } else if (after === ABSENT) {
      ops.push({ op: 'remove', path: pointer });
    } else if (isContainer(before) && isContainer(after) && Array.isArray(before) === Array.isArray(after)) {
      for (const op of jsonpatch.compare(before, after) as JsonPatchOperation[]) {
        ops.push({ ...op, path: `${pointer}${op.path}`, ...('from' in op ? { from: `${pointer}${op.from}` } : {}) });
      }
    } else if (!jsonpatch._areEquals(before, after)) {
      ops.push({ op: 'replace', path: pointer, value: after });
    }
  }
  return ops;
}
