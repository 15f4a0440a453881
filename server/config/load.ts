/** Reads gateway.yaml (or the embedded default) into a validated GatewayConfig. */
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { ConfigError, type SourcePosition } from '../base/errors.js';
import { MAX_CONFIG_FILE_BYTES } from '../base/limits.js';
import { oneByteStrings } from '../base/one-byte.js';
import { readRegularFile } from '../base/regular-file.js';
import { DEFAULT_CONFIG_YAML } from './default-config.js';
import { locateConfigError, yamlFieldLocator, type LocateField } from './field-positions.js';
import type { GatewayConfig } from './types.js';
import { validateConfig } from './validate.js';

export const EMBEDDED_CONFIG = '(embedded default)';

/**
 * The value of one YAML document and where each of its fields is written; a syntax error is a ConfigError
 * naming its line and column. `inFile` maps a position in `text` to one in `file` when the text is embedded in
 * it (a ConfigMap). What gateway.yaml and `admission-gateway test`'s files are read with.
 */
export function parseYamlText(
  text: string,
  file: string,
  inFile: (position: SourcePosition) => SourcePosition = (position) => position,
): { value: unknown; locateField: LocateField } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true, lineCounter });
  const first = doc.errors[0];
  if (first) {
    throw new ConfigError(file, '', `invalid YAML: ${first.message}`, inFile(lineCounter.linePos(first.pos[0])));
  }
  const locate = yamlFieldLocator(doc, lineCounter);
  const locateField: LocateField = (fieldPath) => {
    const position = locate(fieldPath);
    return position && inFile(position);
  };
  return { value: oneByteStrings(doc.toJS()), locateField };
}

/**
 * Parses YAML text; every error names the line and column (of the field, or where the syntax breaks).
 * `inFile` maps a position in `text` to one in `file` when the text is embedded in it (a ConfigMap).
 */
export function parseConfigText(
  text: string,
  file: string,
  baseDir: string,
  inFile?: (position: SourcePosition) => SourcePosition,
): GatewayConfig {
  const { value, locateField } = parseYamlText(text, file, inFile);
  try {
    return { ...validateConfig(value, file, baseDir), locateField, source: { text, baseDir } };
  } catch (err) {
    throw locateConfigError(err, file, locateField);
  }
}

/**
 * Loads `file`. When `file` is the default location and does not exist, the embedded default is used
 * (relative paths then resolve against `cwd`), so a bare image or checkout still starts.
 */
export async function loadConfig(
  file: string,
  options: { isDefaultLocation?: boolean; cwd?: string } = {},
): Promise<GatewayConfig> {
  const cwd = options.cwd ?? process.cwd();
  const absolute = path.resolve(cwd, file);
  let text: string;
  try {
    text = (await readRegularFile(absolute, MAX_CONFIG_FILE_BYTES)).toString('utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && options.isDefaultLocation) {
      return parseConfigText(DEFAULT_CONFIG_YAML, EMBEDDED_CONFIG, cwd);
    }
    throw new ConfigError(file, '(file)', `cannot read the config file: ${(err as Error).message}`);
  }
  return parseConfigText(text, file, path.dirname(absolute));
}
