/**
 * Refuses objects that lack required labels, or whose label values do not have the required form.
 * Every problem is reported in one message so a user fixes them all in one go.
 */
import {
  SettingsError,
  allow,
  definePlugin,
  deny,
  optionalStringList,
  optionalStringMap,
  settingsObject,
  type KubeObject,
} from '../server/plugin-api/index.js';
import { isObject, objectField, ownField } from './lib/pod-spec.js';

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

function labelValue(labels: Record<string, unknown>, key: string): string | undefined {
  const value = ownField(labels, key);
  return typeof value === 'string' ? value : undefined;
}

function problems(object: Readonly<KubeObject>, settings: RequireLabelsSettings): string[] {
  const metadata = isObject(object.metadata) ? object.metadata : {};
  const labels = objectField(metadata, 'labels') ?? {};
  const missing = settings.labels.filter((key) => labelValue(labels, key) === undefined);
  const invalid = [...settings.values].flatMap(([key, rule]) => {
    const value = labelValue(labels, key);
    return value === undefined || rule.regex.test(value)
      ? []
      : [`label ${key}="${value}" does not match "${rule.pattern}"`];
  });
  const missingText = missing.length === 1 ? 'missing required label: ' : 'missing required labels: ';
  return [...(missing.length > 0 ? [missingText + missing.join(', ')] : []), ...invalid];
}

/** Objects being deleted only shed finalizers; refusing that update would leave them stuck in Terminating. */
function isBeingDeleted(object: Readonly<KubeObject>): boolean {
  return isObject(object.metadata) && object.metadata.deletionTimestamp != null;
}

export default definePlugin({
  name: 'require-labels',
  description: 'Refuses objects without the required labels or with label values of the wrong form',
  match: {
    rules: [
      {
        operations: ['CREATE', 'UPDATE'],
        apiGroups: ['', 'apps', 'batch'],
        apiVersions: ['*'],
        resources: ['pods', 'deployments', 'statefulsets', 'daemonsets', 'replicasets', 'jobs', 'cronjobs', 'services'],
      },
    ],
  },
  settings: parseSettings,
  validate({ object, settings }) {
    if (object === undefined || isBeingDeleted(object)) return allow();
    const found = problems(object, settings);
    return found.length === 0 ? allow() : deny(found.join('; '));
  },
});
