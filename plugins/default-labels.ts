/**
 * Adds labels and annotations that an object does not set itself, e.g. `managed-by` or a cost-center
 * annotation. A value the user set wins unless `overwrite: true`.
 */
import {
  SettingsError,
  definePlugin,
  isObject,
  on,
  optionalBoolean,
  optionalStringMap,
  own,
  settingsObject,
  type JsonObject,
} from '../server/plugin-api/index.js';

export interface DefaultLabelsSettings {
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly overwrite: boolean;
}

// https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set
const NAME = /^[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;

function isQualifiedName(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash === -1) return NAME.test(key);
  const prefix = key.slice(0, slash);
  return prefix.length <= 253 && DNS_SUBDOMAIN.test(prefix) && NAME.test(key.slice(slash + 1));
}

const NAME_RULE = 'up to 63 letters, digits, "-", "_" or "." starting and ending alphanumeric';

function checkKeys(map: Readonly<Record<string, string>>, field: string): void {
  for (const key of Object.keys(map)) {
    if (!isQualifiedName(key)) {
      throw new SettingsError(
        `${field}.${key}`,
        `expected a key [prefix/]name, the name ${NAME_RULE}, the prefix a DNS subdomain`,
      );
    }
  }
}

function checkLabelValues(labels: Readonly<Record<string, string>>): void {
  for (const [key, value] of Object.entries(labels)) {
    if (value !== '' && !NAME.test(value)) {
      throw new SettingsError(`labels.${key}`, `expected a label value of ${NAME_RULE}, got "${value}"`);
    }
  }
}

function parseSettings(raw: unknown): DefaultLabelsSettings {
  const settings = settingsObject(raw, ['labels', 'annotations', 'overwrite']);
  const labels = optionalStringMap(settings, 'labels') ?? {};
  const annotations = optionalStringMap(settings, 'annotations') ?? {};
  if (Object.keys(labels).length === 0 && Object.keys(annotations).length === 0) {
    throw new SettingsError('', 'expected labels or annotations (or both) with at least one entry');
  }
  checkKeys(labels, 'labels');
  checkLabelValues(labels);
  checkKeys(annotations, 'annotations');
  return { labels, annotations, overwrite: optionalBoolean(settings, 'overwrite', false) };
}

/** Sets the defaults into `metadata[field]`, creating the map when absent; a malformed map is left alone. */
function applyDefaults(
  metadata: JsonObject,
  field: 'labels' | 'annotations',
  defaults: Readonly<Record<string, string>>,
  overwrite: boolean,
): void {
  const entries = Object.entries(defaults);
  if (entries.length === 0) return;
  const current = metadata[field];
  if (current === undefined || current === null) {
    metadata[field] = { ...defaults };
    return;
  }
  if (!isObject(current)) return;
  for (const [key, value] of entries) {
    if (overwrite || own(current, key) === undefined) current[key] = value;
  }
}

export default definePlugin({
  name: 'default-labels',
  description: 'Adds the configured labels and annotations when an object does not set them',
  match: on('*').create().update(),
  settings: parseSettings,
  setup: ({ labels, annotations, overwrite }) => ({
    mutate({ object }) {
      // Any resource, custom ones included: metadata is whatever the client sent until checked.
      const metadata: unknown = (object.metadata ??= {});
      if (!isObject(metadata)) return;
      applyDefaults(metadata, 'labels', labels, overwrite);
      applyDefaults(metadata, 'annotations', annotations, overwrite);
    },
  }),
});
