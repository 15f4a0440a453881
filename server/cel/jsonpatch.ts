/**
 * The apiserver's JSON Patch library for mutating policies: `jsonpatch.escapeKey(k)` writes a map key as one
 * JSON pointer segment (`~` as `~0`, `/` as `~1`), so that `"/metadata/labels/" + jsonpatch.escapeKey(k)` points
 * at the label `k` whatever it contains.
 */
import type { Library } from './library.js';

/** The `jsonpatch` in `jsonpatch.escapeKey(k)`. */
export class JsonPatchNamespace {}

/** A key as a JSON pointer segment (RFC 6901): `~` first, so that the `~` of `~1` is not escaped again. */
export const escapeKey = (key: string): string => key.replaceAll('~', '~0').replaceAll('/', '~1');

export const jsonPatchLibrary: Library = {
  types: [['JsonPatchNamespace', JsonPatchNamespace]],
  constants: [['jsonpatch', 'JsonPatchNamespace', new JsonPatchNamespace()]],
  functions: [['JsonPatchNamespace.escapeKey(string): string', (_ns: unknown, key: string) => escapeKey(key)]],
};
