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

/** The value at `pointer`, and whether it exists. */
function valueAt(document: unknown, segments: readonly string[]): { found: boolean; value: unknown } {
  let value = document;
  for (const segment of segments) {
    if (!isContainer(value) || !Object.hasOwn(value, segment)) return { found: false, value: undefined };
    value = (value as Record<string, unknown>)[segment];
  }
  return { found: true, value };
}

/**
 * Where to diff for a written pointer: the pointer itself, or the first array on its way whose length
 * changed (an insertion or removal shifts the neighbours, so the whole array is compared). An array of the
 * same length in both documents is descended into: every element a step shifted or replaced was itself
 * written, so each written element is diffed on its own — a container edited in place costs that
 * container's fields, not a comparison of the whole list.
 */
function diffRoot(original: unknown, current: unknown, segments: readonly string[]): string[] {
  let a: unknown = original;
  let b: unknown = current;
  for (let i = 0; i < segments.length; i++) {
    if (Array.isArray(a) || Array.isArray(b)) {
      if (!(Array.isArray(a) && Array.isArray(b) && a.length === b.length)) return segments.slice(0, i);
    }
    const key = segments[i]!;
    a = isContainer(a) && Object.hasOwn(a, key) ? (a as Record<string, unknown>)[key] : undefined;
    b = isContainer(b) && Object.hasOwn(b, key) ? (b as Record<string, unknown>)[key] : undefined;
  }
  return [...segments];
}

const toPointer = (segments: readonly string[]): string =>
  segments.map((s) => `/${s.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/**
 * The patch from `original` to `current` when only the subtrees at `written` pointers can differ: the
 * same result as diffPatch, at the cost of the written parts instead of the whole object.
 */
export function diffWritten(original: object, current: object, written: Iterable<string>): JsonPatchOperation[] {
  const roots = new Map<string, string[]>();
  for (const pointer of written) {
    const segments = diffRoot(original, current, pointer.split('/').slice(1).map(unescapeSegment));
    roots.set(toPointer(segments), segments);
  }
  // In write order (the chain's order); a write below another written pointer is covered by that one.
  const ops: JsonPatchOperation[] = [];
  const covered = (segments: readonly string[]): boolean => {
    for (let i = segments.length - 1; i >= 0; i--) if (roots.has(toPointer(segments.slice(0, i)))) return true;
    return false;
  };
  for (const pointer of roots.keys()) {
    const segments = roots.get(pointer)!;
    if (segments.length === 0) return diffPatch(original, current);
    if (covered(segments)) continue;
    const before = valueAt(original, segments);
    const after = valueAt(current, segments);
    if (!before.found && after.found)
      ops.push({ op: 'add', path: pointer, value: jsonpatch.deepClone(after.value) as unknown });
    else if (before.found && !after.found) ops.push({ op: 'remove', path: pointer });
    else if (before.found && after.found) {
      if (
        isContainer(before.value) &&
        isContainer(after.value) &&
        Array.isArray(before.value) === Array.isArray(after.value)
      ) {
        for (const op of jsonpatch.compare(before.value, after.value) as JsonPatchOperation[]) {
          ops.push({ ...op, path: `${pointer}${op.path}`, ...('from' in op ? { from: `${pointer}${op.from}` } : {}) });
        }
      } else if (!jsonpatch._areEquals(before.value, after.value)) {
        ops.push({ op: 'replace', path: pointer, value: jsonpatch.deepClone(after.value) as unknown });
      }
    }
  }
  return ops;
}
