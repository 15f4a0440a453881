/**
 * Refuses objects that lack required labels, or whose label values do not have the required form.
 * Every problem is reported in one message so a user fixes them all in one go.
 */
import {
  PatternError,
  SettingsError,
  allow,
  compilePattern,
  definePlugin,
  deny,
  on,
  optionalStringList,
  optionalStringMap,
  own,
  settingsObject,
  type Pattern,
} from '../server/plugin-api/index.js';

export interface RequireLabelsSettings {
  readonly labels: readonly string[];
  /**
   * Label → the form its value must fully match; checked whenever the label is present. The value is the
   * object creator's to choose, so the pattern runs on the linear-time engine of the plugin API.
   */
  readonly values: ReadonlyMap<string, Pattern>;
}

function compileRule(label: string, source: string): Pattern {
  try {
    return compilePattern(source);
  } catch (err) {
    if (err instanceof PatternError) throw new SettingsError(`values.${label}`, err.message);
    throw err;
  }
}

function parseSettings(raw: unknown): RequireLabelsSettings {
  const settings = settingsObject(raw, ['labels', 'values']);
  const labels = optionalStringList(settings, 'labels');
  if (labels === undefined || labels.length === 0) {
    throw new SettingsError('labels', 'expected a non-empty list of label names, e.g. [team]');
  }
  const empty = labels.indexOf('');
  if (empty !== -1) throw new SettingsError(`labels[${empty}]`, 'expected a label name, got ""');
  const values = Object.entries(optionalStringMap(settings, 'values') ?? {});
  return {
    labels: [...new Set(labels)],
    values: new Map(values.map(([label, pattern]) => [label, compileRule(label, pattern)])),
  };
}

function problems(labels: Readonly<Record<string, string>>, settings: RequireLabelsSettings): string[] {
  const missing = settings.labels.filter((key) => own(labels, key) === undefined);
  const found: string[] = [];
  if (missing.length > 0) found.push(`missing required label${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}`);
  for (const [key, pattern] of settings.values) {
    const value = own(labels, key);
    if (value !== undefined && !pattern.matches(value))
      found.push(`label ${key}="${value}" does not match "${pattern.source}"`);
  }
  return found;
}

export default definePlugin({
  name: 'require-labels',
  description: 'Refuses objects without the required labels or with label values of the wrong form',
  match: on('pods', 'deployments', 'statefulsets', 'daemonsets', 'replicasets', 'jobs', 'cronjobs', 'services')
    .create()
    .update(),
  settings: parseSettings,
  setup: (settings) => ({
    validate({ object }) {
      // Objects being deleted only shed finalizers; refusing that update would leave them stuck in Terminating.
      if (!object || object.metadata?.deletionTimestamp != null) return allow();
      const found = problems(object.metadata?.labels ?? {}, settings);
      return found.length === 0 ? allow() : deny(found.join('; '));
    },
  }),
});
