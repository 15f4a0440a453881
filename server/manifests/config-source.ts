/**
 * The configuration `manifests` renders for: a gateway.yaml, or the ConfigMap that carries one in the
 * cluster (manifests/config.yaml, key `gateway.yaml`), so the installed chain's webhooks can be rendered
 * from the installed file itself.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';
import { loadConfig, parseConfigText } from '../config/load.js';
import type { GatewayConfig } from '../config/types.js';
import { ConfigError } from '../base/errors.js';

export const CONFIG_MAP_KEY = 'gateway.yaml';

/** The gateway.yaml text inside a ConfigMap document, or undefined when `text` is not a ConfigMap. */
export function configMapGatewayYaml(text: string, file: string): string | undefined {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch {
    return undefined; // not a single YAML document: loadConfig reports it as a config file
  }
  if (typeof doc !== 'object' || doc === null || (doc as { kind?: unknown }).kind !== 'ConfigMap') return undefined;
  const data = (doc as { data?: unknown }).data;
  const value =
    typeof data === 'object' && data !== null ? (data as Record<string, unknown>)[CONFIG_MAP_KEY] : undefined;
  if (typeof value !== 'string') {
    throw new ConfigError(
      file,
      `data.${CONFIG_MAP_KEY}`,
      'expected the gateway configuration as a string in this ConfigMap',
    );
  }
  return value;
}

export async function loadManifestsConfig(
  file: string,
  options: { isDefaultLocation: boolean; cwd: string },
): Promise<GatewayConfig> {
  const absolute = path.resolve(options.cwd, file);
  const text = await readFile(absolute, 'utf8').catch(() => undefined);
  const embedded = text === undefined ? undefined : configMapGatewayYaml(text, file);
  if (embedded === undefined) return loadConfig(file, options);
  return parseConfigText(embedded, `${file} (data.${CONFIG_MAP_KEY})`, path.dirname(absolute));
}
