/**
 * A policy's matchConstraints and a binding's matchResources, as the apiserver matches them
 * (admission/plugin/policy/matching): namespaceSelector and objectSelector as a webhook's, then
 * excludeResourceRules, then resourceRules (none: every resource), a rule with resourceNames only for those
 * names. matchPolicy Equivalent also tries the resource the review was converted to: the gateway knows that one
 * equivalent, not the apiserver's whole table of them (README "Native admission policies", known differences).
 */
import type { AdmissionRequest, RuleWithOperations } from '../admission/types.js';
import { compileMatch, RULES_DO_NOT_MATCH } from '../steps/match.js';
import type { MatchResources, NamedRule, ResourceMatcher } from './native-objects.js';

export const EXCLUDED = 'excludeResourceRules match';

const EVERY_RESOURCE: RuleWithOperations = {
  operations: ['*'],
  apiGroups: ['*'],
  apiVersions: ['*'],
  resources: ['*/*'],
};

type RequestTest = (request: AdmissionRequest) => boolean;

function compileNamedRule(rule: NamedRule): RequestTest {
  const { resourceNames, ...plain } = rule;
  const rulesMatch = compileMatch({ rules: [plain] }).rulesMatch;
  if (!resourceNames) return rulesMatch;
  const names = new Set(resourceNames);
  return (request) => rulesMatch(request) && names.has(request.name ?? '');
}

/** The request as the client made it, when the apiserver converted it for the webhook; else undefined. */
function asRequested(request: AdmissionRequest): AdmissionRequest | undefined {
  const original = request.requestResource;
  if (!original) return undefined;
  const same =
    original.group === request.resource.group &&
    original.version === request.resource.version &&
    original.resource === request.resource.resource &&
    (request.requestSubResource ?? '') === (request.subResource ?? '');
  return same ? undefined : { ...request, resource: original, subResource: request.requestSubResource ?? '' };
}

function anyRule(rules: readonly NamedRule[], equivalent: boolean): RequestTest {
  const tests = rules.map(compileNamedRule);
  const matchesAny = (request: AdmissionRequest): boolean => tests.some((test) => test(request));
  return (request) => {
    const requested = asRequested(request);
    if (requested === undefined) return matchesAny(request);
    return matchesAny(requested) || (equivalent && matchesAny(request));
  };
}

/** MatchResources compiled; `needsNamespaceLabels` when its namespaceSelector reads them. */
export function compileMatchResources(match: MatchResources): {
  readonly matches: ResourceMatcher;
  readonly needsNamespaceLabels: boolean;
} {
  const selectors = compileMatch({
    rules: [EVERY_RESOURCE],
    namespaceSelector: match.namespaceSelector,
    objectSelector: match.objectSelector,
  });
  const equivalent = match.matchPolicy === 'Equivalent';
  const excluded = match.excludeResourceRules.length > 0 ? anyRule(match.excludeResourceRules, equivalent) : undefined;
  const included = match.resourceRules.length > 0 ? anyRule(match.resourceRules, equivalent) : undefined;
  return {
    needsNamespaceLabels: selectors.needsNamespaceLabels,
    matches(request, namespaceLabels) {
      const notSelected = selectors.matches(request, namespaceLabels);
      if (notSelected !== undefined) return notSelected;
      if (excluded?.(request)) return EXCLUDED;
      if (included && !included(request)) return RULES_DO_NOT_MATCH;
      return undefined;
    },
  };
}
