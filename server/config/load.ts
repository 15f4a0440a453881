/** Reads gateway.yaml (or the embedded default) into a validated GatewayConfig. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { ConfigError } from '../base/errors.js';
import { DEFAULT_CONFIG_YAML } from './default-config.js';
import type { GatewayConfig } from './types.js';
import { validateConfig } from './validate.js';

export const EMBEDDED_CONFIG = '(embedded default)';

/** Parses YAML text; syntax errors name the line and column. */
export function parseConfigText(text: string, file: string, baseDir: string): GatewayConfig {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true, lineCounter });
  const first = doc.errors[0];
  if (first) {
    const at = lineCounter.linePos(first.pos[0]);
    throw new ConfigError(file, `line ${at.line} column ${at.col}`, `invalid YAML: ${first.message}`);
  }
  return validateConfig(doc.toJS(), file, baseDir);
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
    text = await readFile(absolute, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && options.isDefaultLocation) {
      return parseConfigText(DEFAULT_CONFIG_YAML, EMBEDDED_CONFIG, cwd);
    }
    throw new ConfigError(file, '(file)', `cannot read the config file: ${(err as Error).message}`);
  }
  return parseConfigText(text, file, path.dirname(absolute));
}
