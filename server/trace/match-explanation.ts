/**
 * Why a step's match excluded a request, in words: which field of each rule, which requirement of a selector.
 * Worked out only when a trace is read or built, never by the matcher on the request path; each field is tested
 * with the matcher's own code (a rule of that field alone), so the words cannot disagree with the decision.
 */
import type { AdmissionRequest, LabelSelector, Match, RuleWithOperations } from '../admission/types.js';
import { clip } from '../base/limits.js';
import { compileSelector, type Labels } from '../steps/label-selector.js';
import {
  NAMESPACE_SELECTOR_DOES_NOT_MATCH,
  OBJECT_SELECTOR_DOES_NOT_MATCH,
  RULES_DO_NOT_MATCH,
  compileMatch,
  namespaceLabelsFromObject,
} from '../steps/match.js';

/** Rules and requirements named at most; labels shown at most. */
const MAX_NAMED = 8;

const ANY: RuleWithOperations = { operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'] };

const list = (values: readonly string[]): string =>
  `[${values
    .slice(0, MAX_NAMED)
    .map((v) => (v === '' ? '""' : v))
    .join(', ')}${values.length > MAX_NAMED ? ', …' : ''}]`;

/** A rule in a few words: `rule 2 (CREATE, UPDATE on apps/v1 deployments)`. */
export function describeRule(match: Match, index: number): string | undefined {
  const rule = match.rules[index];
  if (!rule) return undefined;
  const groups = rule.apiGroups.map((g) => (g === '' ? 'core' : g)).join(',');
  return `rule ${index + 1} (${rule.operations.join(', ')} on ${groups}/${rule.apiVersions.join(',')} ${rule.resources.join(
    ', ',
  )}${rule.scope && rule.scope !== '*' ? `, ${rule.scope}` : ''})`;
}

/** The first field of `rule` the request fails, tested alone with the matcher's semantics. */
function failingField(rule: RuleWithOperations, request: AdmissionRequest): string | undefined {
  const alone = (field: Partial<RuleWithOperations>) =>
    compileMatch({ rules: [{ ...ANY, ...field }] }).rulesMatch(request);
  const resource = request.subResource
    ? `${request.resource.resource}/${request.subResource}`
    : request.resource.resource;
  if (!alone({ operations: rule.operations })) return `operations ${list(rule.operations)}, not ${request.operation}`;
  if (!alone({ apiGroups: rule.apiGroups }))
    return `apiGroups ${list(rule.apiGroups)}, not "${request.resource.group}"`;
  if (!alone({ apiVersions: rule.apiVersions })) {
    return `apiVersions ${list(rule.apiVersions)}, not ${request.resource.version}`;
  }
  if (!alone({ resources: rule.resources })) return `resources ${list(rule.resources)}, not ${resource}`;
  if (rule.scope && !alone({ scope: rule.scope })) {
    return `scope ${rule.scope}, not ${request.namespace ? 'Namespaced' : 'Cluster'}`;
  }
  return undefined;
}

function rulesExplained(match: Match, request: AdmissionRequest): string {
  const parts = match.rules
    .slice(0, MAX_NAMED)
    .map((rule, i) => `rule ${i + 1} wants ${failingField(rule, request) ?? 'something else'}`);
  if (match.rules.length > MAX_NAMED) parts.push(`${match.rules.length - MAX_NAMED} more rules`);
  return parts.length ? parts.join('; ') : 'there are no rules';
}

function shownLabels(labels: Labels | undefined): string {
  const entries = Object.entries(labels ?? {});
  if (entries.length === 0) return '{}';
  const shown = entries.slice(0, MAX_NAMED).map(([k, v]) => `${clip(k, 63)}=${clip(v, 63)}`);
  return `{${shown.join(', ')}${entries.length > MAX_NAMED ? `, … ${entries.length - MAX_NAMED} more` : ''}}`;
}

/** The requirements of `selector` that `labels` fail, each in the selector's own words. */
function failingRequirements(selector: LabelSelector, labels: Labels): string[] {
  const failing: string[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (!compileSelector({ matchLabels: { [key]: value } })(labels)) failing.push(`${key}=${value}`);
  }
  for (const requirement of selector.matchExpressions ?? []) {
    if (compileSelector({ matchExpressions: [requirement] })(labels)) continue;
    const values = requirement.values?.length ? ` ${list(requirement.values)}` : '';
    failing.push(`${requirement.key} ${requirement.operator}${values}`);
  }
  return failing.slice(0, MAX_NAMED);
}

const labelsOf = (object: AdmissionRequest['object']): Labels => {
  const labels = object?.metadata?.labels;
  return labels && typeof labels === 'object' ? labels : {};
};

/**
 * `reason` (what the matcher returned) with the rule field or selector requirement that decided it. Any other
 * reason (opt-in, dry-run) is already in words and comes back as it is.
 */
export function explainMismatch(
  reason: string,
  match: Match,
  request: AdmissionRequest,
  namespaceLabels: Labels | undefined,
): string {
  switch (reason) {
    case RULES_DO_NOT_MATCH:
      return `${reason}: ${rulesExplained(match, request)}`;
    case NAMESPACE_SELECTOR_DOES_NOT_MATCH: {
      const labels = namespaceLabelsFromObject(request) ?? namespaceLabels ?? {};
      const failing = failingRequirements(match.namespaceSelector ?? {}, labels);
      return `${reason}: the namespace's labels ${shownLabels(labels)} fail ${failing.join(', ')}`;
    }
    case OBJECT_SELECTOR_DOES_NOT_MATCH: {
      const labels = labelsOf(request.object ?? request.oldObject);
      const failing = failingRequirements(match.objectSelector ?? {}, labels);
      return `${reason}: the object's labels ${shownLabels(labels)} fail ${failing.join(', ')}`;
    }
    default:
      return reason;
  }
}
