/**
 * The patch of an AdmissionReview answer, as the apiserver reads it: base64 → JSON → RFC 6902
 * operations, applied with fast-json-patch to a copy of the object under review.
 */
import jsonpatch from 'fast-json-patch';
import type { AdmissionResponse } from '../../server/admission/types.js';
import type { JsonPatchOperation, KubeObject } from '../../server/plugin-api/index.js';

/** The decoded operations of `response.patch`; throws when the answer carries none or patchType is wrong. */
export function decodePatch(response: Pick<AdmissionResponse, 'patch' | 'patchType'>): JsonPatchOperation[] {
  if (response.patch === undefined) throw new Error('the answer carries no patch');
  if (response.patchType !== 'JSONPatch') {
    throw new Error(`patchType=${JSON.stringify(response.patchType)}, expected "JSONPatch"`);
  }
  const ops: unknown = JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8'));
  if (!Array.isArray(ops)) throw new Error('the decoded patch is not a JSON array');
  return ops as JsonPatchOperation[];
}

/**
 * Applies `ops` to a deep copy of `object` (the original is never touched) the way the apiserver does:
 * every operation validated, the first one that does not apply fails the whole patch.
 */
export function applyPatch<T extends KubeObject>(object: T, ops: readonly JsonPatchOperation[]): T {
  const copy = structuredClone(object);
  return jsonpatch.applyPatch(copy, ops as jsonpatch.Operation[], true, true).newDocument;
}

/** Decodes the answer's patch and applies it to a copy of `object`. */
export function patchedObject<T extends KubeObject>(object: T, response: AdmissionResponse): T {
  return applyPatch(object, decodePatch(response));
}
