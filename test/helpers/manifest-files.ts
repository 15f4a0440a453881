/**
 * manifests/ as files: every YAML document with where it came from, and the kustomizations (which files
 * each one lists). Read at test time, so edits to any manifest are covered without touching the tests.
 * Plain wire form (what `kubectl apply` sends), parsed with `yaml` (anchors and aliases resolved).
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const MANIFESTS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'manifests');

export type Wire = Record<string, unknown>;

/** One document of a manifest file; `file` is relative to manifests/ (e.g. `monitoring/servicemonitor.yaml`). */
export interface ManifestDocument {
  readonly file: string;
  readonly index: number;
  readonly object: Wire;
}

export function isRecord(value: unknown): value is Wire {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `file#index Kind/namespace/name`, for messages. */
export function describeDocument(doc: ManifestDocument): string {
  const meta = isRecord(doc.object.metadata) ? doc.object.metadata : {};
  const ns = typeof meta.namespace === 'string' ? `${meta.namespace}/` : '';
  return `${doc.file}#${doc.index} ${String(doc.object.kind)}/${ns}${String(meta.name)}`;
}

/** Every `*.yaml` under manifests/, relative paths, sorted. */
export async function yamlFiles(dir = MANIFESTS_DIR): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.yaml'))
    .map((e) => path.relative(MANIFESTS_DIR, path.join(e.parentPath, e.name)))
    .sort();
}

/** The documents of manifests/<file>; a syntax error or a document that is not a map throws, naming both. */
export async function readDocuments(file: string): Promise<ManifestDocument[]> {
  const text = await readFile(path.join(MANIFESTS_DIR, file), 'utf8');
  return parseAllDocuments(text).map((doc, index) => {
    const error = doc.errors[0];
    if (error) throw new Error(`manifests/${file} document ${index}: ${error.message}`);
    const object = doc.toJS({ maxAliasCount: -1 }) as unknown;
    if (!isRecord(object)) throw new Error(`manifests/${file} document ${index} is not a map`);
    return { file, index, object };
  });
}

/** A kustomization.yaml (Kustomization or Component) with the entries the tests follow. */
export interface KustomizationFile {
  /** Directory relative to manifests/ ('' for manifests/ itself). */
  readonly dir: string;
  readonly kind: 'Kustomization' | 'Component';
  /** `resources` as written: files or directories, relative to `dir`. */
  readonly resources: readonly string[];
  /** The `path` of each entry of `patches`. */
  readonly patches: readonly string[];
}

function stringList(value: unknown, where: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw new Error(`${where}: expected a list of strings`);
  }
  return value;
}

export async function readKustomization(dir: string): Promise<KustomizationFile> {
  const file = path.join(dir, 'kustomization.yaml');
  const [doc, ...more] = await readDocuments(file);
  if (!doc || more.length > 0) throw new Error(`manifests/${file}: expected exactly one document`);
  const { kind } = doc.object;
  if (kind !== 'Kustomization' && kind !== 'Component') {
    throw new Error(`manifests/${file}: kind ${String(kind)} is neither Kustomization nor Component`);
  }
  const rawPatches = doc.object.patches ?? [];
  if (!Array.isArray(rawPatches)) throw new Error(`manifests/${file}: patches must be a list`);
  const patches = rawPatches.map((p, i) => {
    if (!isRecord(p) || typeof p.path !== 'string') {
      throw new Error(`manifests/${file}: patches[${i}] must name a file (path): inline patches are not followed`);
    }
    return p.path;
  });
  return { dir, kind, resources: stringList(doc.object.resources, `manifests/${file} resources`), patches };
}

async function isDirectory(p: string): Promise<boolean> {
  return (await stat(p).catch(() => undefined))?.isDirectory() ?? false;
}

/**
 * The documents a kustomization's `resources` bring in, in order: a file's documents, or (recursively) a
 * directory's kustomization. Patches are not applied (see `readKustomization` for their files).
 */
export async function kustomizationDocuments(dir: string): Promise<ManifestDocument[]> {
  const kustomization = await readKustomization(dir);
  const docs: ManifestDocument[] = [];
  for (const resource of kustomization.resources) {
    const target = path.normalize(path.join(dir, resource));
    if (target.startsWith('..')) throw new Error(`manifests/${dir}: resource ${resource} is outside manifests/`);
    if (await isDirectory(path.join(MANIFESTS_DIR, target))) {
      docs.push(...(await kustomizationDocuments(target)));
    } else {
      docs.push(...(await readDocuments(target)));
    }
  }
  return docs;
}

/** apiVersion, kind, namespace and name: what identifies an object to the apiserver (and to kustomize). */
export function objectId(object: Wire): string {
  const meta = isRecord(object.metadata) ? object.metadata : {};
  const ns = typeof meta.namespace === 'string' ? meta.namespace : '';
  return `${String(object.apiVersion)} ${String(object.kind)} ${ns}/${String(meta.name)}`;
}
