/**
 * Refuses objects that lack required labels, or whose label values do not have the required form.
 * Every problem is reported in one message so a user fixes them all in one go.
 */
import {
  SettingsError,
  allow,
  definePlugin,
  deny,
  on,
  optionalStringList,
  optionalStringMap,
  own,
  settingsObject,
} from '../server/plugin-api/index.js';

interface ValueRule {
  /** As written in the settings, for messages. */
  readonly pattern: string;
  readonly regex: RegExp;
}

export interface RequireLabelsSettings {
  readonly labels: readonly string[];
  /** Label → the form its value must fully match; checked whenever the label is present. */
  readonly values: ReadonlyMap<string, ValueRule>;
}

function compileRule(label: string, pattern: string): ValueRule {
  try {
    return { pattern, regex: new RegExp(`^(?:${pattern})$`) };
  } catch (err) {
    // V8 says "Invalid regular expression: /<source>/: <reason>"; the source is our wrapper, so keep the reason.
    const reason = err instanceof Error ? (err.message.split(': ').pop() ?? err.message) : String(err);
    throw new SettingsError(`values.${label}`, `invalid regular expression "${pattern}": ${reason}`);
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
  for (const [key, { pattern, regex }] of settings.values) {
    const value = own(labels, key);
    if (value !== undefined && !regex.test(value)) found.push(`label ${key}="${value}" does not match "${pattern}"`);
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
