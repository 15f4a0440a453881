/**
 * Exceptions from YAML files (`exceptions.files` without a cluster, `review --exceptions`, `replay
 * --exceptions`): each document an AdmissionException, a ClusterAdmissionException, or a List of them (what
 * `kubectl get -o yaml` prints). Files are read whole, within bounds, and any invalid exception refuses the
 * file: a mistake is told at start, never silently ignored.
 */
import { parseAllDocuments } from 'yaml';
import { ConfigError, errorMessage } from '../base/errors.js';
import { MAX_CONFIG_FILE_BYTES } from '../base/limits.js';
import { readRegularFile } from '../base/regular-file.js';
import type { GatewayException } from './exception.js';
import { readException, type ExceptionRules } from './read-exception.js';

/** At most this many exceptions in all the files together. */
export const MAX_FILE_EXCEPTIONS = 10_000;

/** The exceptions the YAML `text` of `file` states. */
export function parseExceptions(text: string, file: string, rules: ExceptionRules): GatewayException[] {
  const docs = parseAllDocuments(text, { prettyErrors: false, uniqueKeys: true });
  if (!Array.isArray(docs)) return [];
  const objects: unknown[] = [];
  for (const [i, doc] of docs.entries()) {
    const first = doc.errors[0];
    if (first) throw new ConfigError(file, `document ${i + 1}`, `invalid YAML: ${first.message}`);
    const value = doc.toJS({ maxAliasCount: 100 }) as unknown;
    if (value === null || value === undefined) continue;
    const list = value as { kind?: unknown; items?: unknown };
    if (list.kind === 'List' && Array.isArray(list.items)) objects.push(...(list.items as unknown[]));
    else objects.push(value);
    if (objects.length > MAX_FILE_EXCEPTIONS) {
      throw new ConfigError(file, '', `holds more than ${MAX_FILE_EXCEPTIONS} exceptions`);
    }
  }
  return objects.map((object, i) => readException(object, rules, `${file} (exception ${i + 1})`));
}

/** The exceptions of every file, in order; a file that cannot be read or holds an invalid one throws. */
export async function readExceptionFiles(files: readonly string[], rules: ExceptionRules): Promise<GatewayException[]> {
  const all: GatewayException[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = (await readRegularFile(file, MAX_CONFIG_FILE_BYTES)).toString('utf8');
    } catch (err) {
      throw new ConfigError(file, '', `cannot read the exceptions file: ${errorMessage(err)}`);
    }
    all.push(...parseExceptions(text, file, rules));
    if (all.length > MAX_FILE_EXCEPTIONS) {
      throw new ConfigError(file, '', `the exceptions files hold more than ${MAX_FILE_EXCEPTIONS} exceptions`);
    }
  }
  return all;
}
