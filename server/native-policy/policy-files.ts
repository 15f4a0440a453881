/**
 * The documents of an `admissionPolicies` entry's files: each path a YAML file, or a folder whose `*.yaml`,
 * `*.yml` and `*.json` files are read in name order (not its subfolders, as `kubectl apply -f` without `-R`).
 * Every file is a regular file of bounded size, their number is bounded, and a syntax error names its line.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { LineCounter, parseAllDocuments } from 'yaml';
import { ConfigError } from '../base/errors.js';
import { MAX_CONFIG_FILE_BYTES } from '../base/limits.js';
import { readRegularFileSync } from '../base/regular-file.js';
import { yamlFieldLocator, type LocateField } from '../config/field-positions.js';
import type { NativeOrigin } from './native-objects.js';

/** Files one entry reads, at most, and documents in all of them. */
export const MAX_POLICY_FILES = 256;
export const MAX_POLICY_DOCUMENTS = 1024;

const POLICY_FILE = /\.(ya?ml|json)$/i;

/** One YAML document of a policy file. */
export interface PolicyDocument {
  readonly file: string;
  readonly value: unknown;
  /** Where a field path of the document is written (for errors). */
  readonly locate: LocateField;
  /** Where it came from when not from `file` (an object of the cluster). */
  readonly origin?: NativeOrigin;
}

function filesOf(entryPath: string, fieldPath: string, configFile: string): string[] {
  let isFolder: boolean;
  try {
    isFolder = statSync(entryPath).isDirectory();
  } catch (err) {
    throw new ConfigError(configFile, fieldPath, `cannot read ${entryPath}: ${(err as Error).message}`);
  }
  if (!isFolder) return [entryPath];
  return readdirSync(entryPath, { withFileTypes: true })
    .filter((dirent) => !dirent.isDirectory() && POLICY_FILE.test(dirent.name))
    .map((dirent) => path.join(entryPath, dirent.name))
    .sort();
}

/** Every document of the files and folders `paths` (the entry's `files`, at `fieldPath` of `configFile`). */
export function readPolicyDocuments(paths: readonly string[], fieldPath: string, configFile: string): PolicyDocument[] {
  const files = [...new Set(paths.flatMap((p, i) => filesOf(p, `${fieldPath}[${i}]`, configFile)))];
  if (files.length > MAX_POLICY_FILES)
    throw new ConfigError(configFile, fieldPath, `names ${files.length} files, more than ${MAX_POLICY_FILES}`);
  const documents: PolicyDocument[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = readRegularFileSync(file, MAX_CONFIG_FILE_BYTES).toString('utf8');
    } catch (err) {
      throw new ConfigError(configFile, fieldPath, `cannot read ${file}: ${(err as Error).message}`);
    }
    const lineCounter = new LineCounter();
    for (const doc of parseAllDocuments(text, { prettyErrors: false, uniqueKeys: true, lineCounter })) {
      const first = doc.errors[0];
      if (first) throw new ConfigError(file, '', `invalid YAML: ${first.message}`, lineCounter.linePos(first.pos[0]));
      const value = doc.toJS({ maxAliasCount: 100 }) as unknown;
      // An empty document (a trailing `---`) holds nothing.
      if (value === null || value === undefined) continue;
      if (documents.length >= MAX_POLICY_DOCUMENTS)
        throw new ConfigError(configFile, fieldPath, `the files hold more than ${MAX_POLICY_DOCUMENTS} documents`);
      documents.push({ file, value, locate: yamlFieldLocator(doc, lineCounter) });
    }
  }
  return documents;
}
