/**
 * Adds labels and annotations that an object does not set itself, e.g. `managed-by` or a cost-center
 * annotation. A value the user set wins unless `overwrite: true`.
 */
import {
  QUALIFIED_NAME_RULE,
  SettingsError,
  definePlugin,
  isLabelKey,
  isLabelValue,
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

function checkKeys(map: Readonly<Record<string, string>>, field: string): void {
  const bad = Object.keys(map).find((key) => !isLabelKey(key));
  if (bad !== undefined) {
    throw new SettingsError(
      `${field}.${bad}`,
      `expected a key [prefix/]name, the name ${QUALIFIED_NAME_RULE}, the prefix a DNS subdomain`,
    );
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
  const bad = Object.entries(labels).find(([, value]) => !isLabelValue(value));
  if (bad)
    throw new SettingsError(`labels.${bad[0]}`, `expected a label value of ${QUALIFIED_NAME_RULE}, got "${bad[1]}"`);
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
