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
