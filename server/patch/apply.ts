/**
 * Applies a step's JSON patch to the working copy. fast-json-patch applies each operation and bans
 * `__proto__`/`constructor/prototype` (CVE-2021-4279); the gateway additionally refuses those segments
 * anywhere in a path, refuses non-array patches before anything is applied, and checks each operation
 * against the document as RFC 6902 says.
 */
import { isDeepStrictEqual } from 'node:util';
import jsonpatch from 'fast-json-patch';
import { PatchApplyError } from '../base/errors.js';
import { MAX_PATCH_COPY_BYTES, MAX_PATCH_SHIFTS, clip, describeValue } from '../base/limits.js';
import type { JsonPatchOperation } from '../admission/types.js';

const OPS = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test']);
const FORBIDDEN_SEGMENTS = new Set(['__proto__', 'constructor', 'prototype']);

function checkPointer(pointer: unknown, index: number, field: string): void {
  if (typeof pointer !== 'string' || !pointer.startsWith('/')) {
    // "" would replace the whole object, including apiVersion/kind/metadata.name: never a valid mutation.
    throw new PatchApplyError(
      `operation ${index}: ${field} must be a JSON pointer below the object root, got ${describeValue(pointer)}`,
      index,
    );
  }
  for (const segment of pointer.split('/')) {
    if (FORBIDDEN_SEGMENTS.has(segment)) {
      throw new PatchApplyError(
        `operation ${index}: ${field} "${clip(pointer)}" contains forbidden segment "${segment}"`,
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
      throw new PatchApplyError(`operation ${index}: op ${describeValue(name)} is not a JSON patch operation`, index);
    }
    checkPointer(path, index, 'path');
    if (name === 'move' || name === 'copy') checkPointer(from, index, 'from');
    if ((name === 'add' || name === 'replace' || name === 'test') && !('value' in op)) {
      throw new PatchApplyError(`operation ${index}: "${name}" needs a value`, index);
    }
  });
}

type Container = Record<string, unknown> | unknown[];

const isContainer = (value: unknown): value is Container => typeof value === 'object' && value !== null;

/** A canonical array index: no sign, no leading zero, not empty (RFC 6901 §4). */
const ARRAY_INDEX = /^(?:0|[1-9]\d*)$/;

const unescapeSegment = (segment: string): string =>
  segment.includes('~') ? segment.replace(/~1/g, '/').replace(/~0/g, '~') : segment;

/** Where a pointer leads: the container holding its last segment, and that segment unescaped. */
interface Location {
  readonly parent: Container;
  readonly key: string;
}

const memberOf = (parent: Container, key: string): unknown => (parent as Record<string, unknown>)[key];

/** Whether `parent` has `key` as a member (its own, never one it inherits such as `toString`). */
function has(parent: Container, key: string): boolean {
  return Array.isArray(parent) ? ARRAY_INDEX.test(key) && Number(key) < parent.length : Object.hasOwn(parent, key);
}

/** Elements an insertion or removal at `key` of `parent` shifts (none for an object member or the end). */
function shifted(parent: Container, key: string): number {
  return Array.isArray(parent) && key !== '-' ? Math.max(0, parent.length - Number(key)) : 0;
}

/**
 * Applies `patch` to `document` in place, with RFC 6902's semantics exactly: every container on the way
 * must exist, a member to remove, replace, test, move or copy must be the container's own, array indexes
 * are canonical and within bounds, `move` is a remove followed by an add and never into its own child.
 * fast-json-patch applies each operation; it is laxer on all of these, so each is checked first (pass a
 * tracked view as `document` so the writes are journaled and can be rolled back when an operation fails
 * part-way). Bounded work: at most MAX_PATCH_SHIFTS array elements shifted and MAX_PATCH_COPY_BYTES copied.
 */
export function applyPatchInPlace(document: object, patch: readonly JsonPatchOperation[]): void {
  checkPatchShape(patch);
  let shifts = 0;
  let copied = 0;
  const fail = (index: number, message: string, cause?: unknown): never => {
    const op = patch[index]!;
    throw new PatchApplyError(
      `operation ${index} (${op.op} ${clip(op.path)}) does not apply: ${message}`,
      index,
      cause === undefined ? undefined : { cause },
    );
  };

  const locate = (pointer: string, index: number): Location => {
    const segments = pointer.split('/');
    let node: unknown = document;
    for (let i = 1; i < segments.length - 1; i++) {
      const key = unescapeSegment(segments[i]!);
      if (!isContainer(node) || !has(node, key)) return fail(index, `${clip(pointer)}: nothing at "${clip(key)}"`);
      node = (node as Record<string, unknown>)[key];
    }
    if (!isContainer(node)) return fail(index, `${clip(pointer)}: the parent is not an object or array`);
    return { parent: node, key: unescapeSegment(segments[segments.length - 1]!) };
  };
  const existing = (pointer: string, index: number): Location => {
    const at = locate(pointer, index);
    if (!has(at.parent, at.key)) fail(index, `${clip(pointer)} does not exist`);
    return at;
  };
  const count = (index: number, at: Location): void => {
    shifts += shifted(at.parent, at.key);
    if (shifts > MAX_PATCH_SHIFTS) fail(index, `the patch shifts more than ${MAX_PATCH_SHIFTS} array elements`);
  };
  const apply = (index: number, operation: jsonpatch.Operation): void => {
    try {
      jsonpatch.applyOperation(document, operation, true, true, true, index);
    } catch (err) {
      fail(index, err instanceof Error ? (err.message.split('\n', 1)[0] ?? '') : String(err), err);
    }
  };
  const add = (index: number, path: string, value: unknown): void => {
    const at = locate(path, index);
    if (
      Array.isArray(at.parent) &&
      at.key !== '-' &&
      !(ARRAY_INDEX.test(at.key) && Number(at.key) <= at.parent.length)
    ) {
      fail(index, `${clip(path)}: "${clip(at.key)}" is not an index of an array of ${at.parent.length}`);
    }
    count(index, at);
    apply(index, { op: 'add', path, value });
  };

  patch.forEach((op, index) => {
    switch (op.op) {
      case 'add':
        return add(index, op.path, op.value);
      case 'remove':
        count(index, existing(op.path, index));
        return apply(index, op);
      case 'replace':
        existing(op.path, index);
        return apply(index, { op: 'replace', path: op.path, value: op.value });
      case 'test': {
        const { parent, key } = existing(op.path, index);
        if (!isDeepStrictEqual(JSON.parse(JSON.stringify(memberOf(parent, key))), op.value)) {
          fail(index, 'the value is not the one tested');
        }
        return;
      }
      case 'move': {
        const from = existing(op.from, index);
        if (op.path.startsWith(`${op.from}/`)) fail(index, `cannot move ${clip(op.from)} into its own child`);
        const value: unknown = memberOf(from.parent, from.key);
        count(index, from);
        apply(index, { op: 'remove', path: op.from });
        return add(index, op.path, value);
      }
      case 'copy': {
        const from = existing(op.from, index);
        // Through JSON: a deep copy of a view as much as of plain data, and its size comes with it.
        const text = JSON.stringify(memberOf(from.parent, from.key)) ?? 'null';
        copied += text.length;
        if (copied > MAX_PATCH_COPY_BYTES) fail(index, `the patch copies more than ${MAX_PATCH_COPY_BYTES} bytes`);
        return add(index, op.path, JSON.parse(text));
      }
    }
  });
}

/** The one patch of a review: from the request object to the final working copy. */
export function diffPatch(original: object, current: object): JsonPatchOperation[] {
  return jsonpatch.compare(original, current).filter(isRfc6902);
}

/** compare() gives add, remove and replace; its Operation type also admits the library's internal `_get`. */
const isRfc6902 = (op: jsonpatch.Operation): op is Exclude<jsonpatch.Operation, jsonpatch.GetOperation<unknown>> =>
  op.op !== '_get';
