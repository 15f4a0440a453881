/**
 * The project's manifests (manifests/*.yaml) as client-node models, for creating them through the typed
 * APIs. Parsed with `yaml` (anchors and aliases resolved), then deserialized: client-node's models name
 * some properties differently from the wire (`xKubernetesListType` for `x-kubernetes-list-type`,
 * `_default` for `default`, `ref` for `$ref`), and a typed call serializes the model back by those names —
 * a wire-named property it was handed as is would be dropped without a word.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// Not re-exported by the package index; the package has no `exports` map, so the module is reachable.
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { parseAllDocuments } from 'yaml';

export const MANIFESTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'manifests');

/** The documents of manifests/<file> in their wire form (plain JSON values). */
export async function manifestDocuments(file: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(path.join(MANIFESTS, file), 'utf8');
  return parseAllDocuments(text).map((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`${file} document ${i}: ${doc.errors[0]!.message}`);
    const value = doc.toJS({ maxAliasCount: -1 }) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new Error(`${file} document ${i} is not a map`);
    }
    return value as Record<string, unknown>;
  });
}

/** A wire-form object as the client-node model `type` (e.g. 'V1CustomResourceDefinition'). */
export function toModel<T>(wire: unknown, type: string): T {
  return ObjectSerializer.deserialize(wire, type, '') as T;
}

/** A client-node model back in its wire form (what the API would send). */
export function toWire(model: unknown, type: string): unknown {
  return JSON.parse(JSON.stringify(ObjectSerializer.serialize(model, type, ''))) as unknown;
}
