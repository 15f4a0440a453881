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

/** The index of the first rule that selects the request (as requested, or, when equivalent, as converted), or -1. */
function firstRule(rules: readonly NamedRule[], equivalent: boolean): (request: AdmissionRequest) => number {
  const tests = rules.map(compileNamedRule);
  return (request) => {
    const requested = asRequested(request);
    if (requested === undefined) return tests.findIndex((test) => test(request));
    return tests.findIndex((test) => test(requested) || (equivalent && test(request)));
  };
}

/** MatchResources compiled; `needsNamespaceLabels` when its namespaceSelector reads them. */
export function compileMatchResources(match: MatchResources): {
  readonly matches: ResourceMatcher;
  readonly needsNamespaceLabels: boolean;
  /** The index of the first of its resourceRules that selects the request, or -1 (the decision trace names it). */
  readonly ruleIndex: (request: AdmissionRequest) => number;
} {
  const selectors = compileMatch({
    rules: [EVERY_RESOURCE],
    namespaceSelector: match.namespaceSelector,
    objectSelector: match.objectSelector,
  });
  const equivalent = match.matchPolicy === 'Equivalent';
  const excluded = firstRule(match.excludeResourceRules, equivalent);
  const ruleIndex = firstRule(match.resourceRules, equivalent);
  const everyResource = match.resourceRules.length === 0;
  return {
    needsNamespaceLabels: selectors.needsNamespaceLabels,
    ruleIndex,
    matches(request, namespaceLabels) {
      const notSelected = selectors.matches(request, namespaceLabels);
      if (notSelected !== undefined) return notSelected;
      if (excluded(request) >= 0) return EXCLUDED;
      if (!everyResource && ruleIndex(request) < 0) return RULES_DO_NOT_MATCH;
      return undefined;
    },
  };
}
