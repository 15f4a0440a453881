/**
 * Reads a `match` block (webhook-configuration shapes) from untrusted input, refusing what the apiserver
 * would refuse in a webhook configuration.
 */
import type { LabelSelector, LabelSelectorRequirement, Match, RuleWithOperations } from '../admission/types.js';
import { childPath, type Reader } from './reader.js';

const OPERATIONS = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT', '*'] as const;
const SCOPES = ['Cluster', 'Namespaced', '*'] as const;
const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;

function nonEmptyList(r: Reader, value: unknown, path: string): string[] {
  const list = r.stringList(value, path);
  if (!list || list.length === 0) r.fail(path, 'expected a non-empty list of strings');
  return list;
}

export function readRule(r: Reader, value: unknown, path: string): RuleWithOperations {
  const m = r.map(value, path, ['operations', 'apiGroups', 'apiVersions', 'resources', 'scope'], false);
  const operations = nonEmptyList(r, m.operations, childPath(path, 'operations'));
  operations.forEach((op, i) => r.oneOf(op, childPath(childPath(path, 'operations'), i), OPERATIONS));
  const resources = nonEmptyList(r, m.resources, childPath(path, 'resources'));
  resources.forEach((res, i) => {
    const parts = res.split('/');
    if (parts.length > 2 || parts.some((p) => p === '')) {
      r.fail(childPath(childPath(path, 'resources'), i), 'expected "resource", "resource/subresource" or "*"', res);
    }
  });
  const scope = r.oneOf(m.scope, childPath(path, 'scope'), SCOPES);
  return {
    operations: operations as RuleWithOperations['operations'],
    apiGroups: nonEmptyList(r, m.apiGroups, childPath(path, 'apiGroups')),
    apiVersions: nonEmptyList(r, m.apiVersions, childPath(path, 'apiVersions')),
    resources,
    ...(scope ? { scope } : {}),
  };
}

export function readLabelSelector(r: Reader, value: unknown, path: string): LabelSelector | undefined {
  if (value === undefined || value === null) return undefined;
  const m = r.map(value, path, ['matchLabels', 'matchExpressions']);
  const matchLabels = r.stringMap(m.matchLabels, childPath(path, 'matchLabels'));
  const expressions = r.list(m.matchExpressions, childPath(path, 'matchExpressions'));
  const matchExpressions = expressions?.map((item, i): LabelSelectorRequirement => {
    const p = childPath(childPath(path, 'matchExpressions'), i);
    const e = r.map(item, p, ['key', 'operator', 'values'], false);
    const key = r.requiredString(e.key, childPath(p, 'key'));
    const operator = r.oneOf(e.operator, childPath(p, 'operator'), OPERATORS);
    if (!operator) r.fail(childPath(p, 'operator'), `is required (one of ${OPERATORS.join(', ')})`);
    const values = r.stringList(e.values, childPath(p, 'values'));
    if ((operator === 'In' || operator === 'NotIn') && (!values || values.length === 0)) {
      r.fail(childPath(p, 'values'), `must be non-empty for operator ${operator}`);
    }
    if ((operator === 'Exists' || operator === 'DoesNotExist') && values && values.length > 0) {
      r.fail(childPath(p, 'values'), `must be empty for operator ${operator}`);
    }
    return { key, operator, ...(values ? { values } : {}) };
  });
  return { ...(matchLabels ? { matchLabels } : {}), ...(matchExpressions ? { matchExpressions } : {}) };
}

export function readMatch(r: Reader, value: unknown, path: string): Match | undefined {
  if (value === undefined || value === null) return undefined;
  const m = r.map(value, path, ['rules', 'namespaceSelector', 'objectSelector']);
  const rules = r.list(m.rules, childPath(path, 'rules'));
  if (!rules || rules.length === 0) r.fail(childPath(path, 'rules'), 'expected a non-empty list of rules');
  const namespaceSelector = readLabelSelector(r, m.namespaceSelector, childPath(path, 'namespaceSelector'));
  const objectSelector = readLabelSelector(r, m.objectSelector, childPath(path, 'objectSelector'));
  return {
    rules: rules.map((rule, i) => readRule(r, rule, childPath(childPath(path, 'rules'), i))),
    ...(namespaceSelector ? { namespaceSelector } : {}),
    ...(objectSelector ? { objectSelector } : {}),
  };
}
