/**
 * The configuration `manifests` renders for: a gateway.yaml, or the ConfigMap that carries one in the
 * cluster (manifests/config.yaml, key `gateway.yaml`), so the installed chain's webhooks can be rendered
 * from the installed file itself.
 */
import path from 'node:path';
import { LineCounter, Scalar, isScalar, parse, parseDocument } from 'yaml';
import { loadConfig, parseConfigText } from '../config/load.js';
import type { GatewayConfig } from '../config/types.js';
import { ConfigError, type SourcePosition } from '../base/errors.js';
import { MAX_CONFIG_FILE_BYTES } from '../base/limits.js';
import { readRegularFile } from '../base/regular-file.js';

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

/**
 * Where the lines of the ConfigMap's gateway.yaml are in the ConfigMap file, when it is written as a literal
 * block (`gateway.yaml: |`, as manifests/config.yaml has it): its lines are the file's lines after the
 * header, indented. Undefined for any other style, whose lines do not map one to one.
 */
export function embeddedPositions(text: string): ((position: SourcePosition) => SourcePosition) | undefined {
  const lineCounter = new LineCounter();
  const node = parseDocument(text, { lineCounter }).getIn(['data', CONFIG_MAP_KEY], true);
  if (!isScalar(node) || node.type !== Scalar.BLOCK_LITERAL || !node.range) return undefined;
  const header = lineCounter.linePos(node.range[0]).line;
  const firstLine =
    text
      .split('\n')
      .slice(header)
      .find((line) => line.trim() !== '') ?? '';
  const indent = firstLine.length - firstLine.trimStart().length;
  return ({ line, col }) => ({ line: header + line, col: col + indent });
}

export async function loadManifestsConfig(
  file: string,
  options: { isDefaultLocation: boolean; cwd: string },
): Promise<GatewayConfig> {
  const absolute = path.resolve(options.cwd, file);
  // Bounded and regular only, as loadConfig reads it: that one then says what is wrong with the file.
  const text = await readRegularFile(absolute, MAX_CONFIG_FILE_BYTES).then(
    (bytes) => bytes.toString('utf8'),
    () => undefined,
  );
  const embedded = text === undefined ? undefined : configMapGatewayYaml(text, file);
  if (text === undefined || embedded === undefined) return loadConfig(file, options);
  const positions = embeddedPositions(text);
  // Positions in the file itself where they map one to one; else in the key's own text, which the label names.
  return positions
    ? parseConfigText(embedded, file, path.dirname(absolute), positions)
    : parseConfigText(embedded, `${file} (data.${CONFIG_MAP_KEY})`, path.dirname(absolute));
}
