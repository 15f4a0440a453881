/**
 * Which requests a step sees: the apiserver's webhook predicates (rules → namespaceSelector →
 * objectSelector), compiled once per chain so the request path only runs closures.
 * Mirrors k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/{rules,namespace,object}.
 */
import type { AdmissionRequest, KubeObject, Match, RuleWithOperations } from '../admission/types.js';
import { compileSelector, isEmptySelector, type Labels } from './label-selector.js';

/** Returns why the step does not apply, or undefined when it does. */
export type Matcher = (request: AdmissionRequest, namespaceLabels: Labels | undefined) => string | undefined;

/** Why a match does not apply: what `Matcher` returns (review-references.ts puts them in words). */
export const RULES_DO_NOT_MATCH = 'rules do not match';
export const NAMESPACE_SELECTOR_DOES_NOT_MATCH = 'namespaceSelector does not match';
export const OBJECT_SELECTOR_DOES_NOT_MATCH = 'objectSelector does not match';

export interface CompiledMatch {
  readonly matches: Matcher;
  /**
   * Whether the rules alone select the request: what a webhook configuration rendered from them lets through
   * to the gateway (its selectors aside).
   */
  readonly rulesMatch: (request: AdmissionRequest) => boolean;
  /** True when the namespaceSelector needs the labels of the request's namespace. */
  readonly needsNamespaceLabels: boolean;
  /** The index of the first rule that selects the request, or -1 (the decision trace names it). */
  readonly ruleIndex: (request: AdmissionRequest) => number;
}

/** A set test where `*` matches anything; built once per rule. */
function anyOf(list: readonly string[]): (value: string) => boolean {
  if (list.includes('*')) return () => true;
  const set = new Set(list);
  return (value) => set.has(value);
}

/** `resource`, `resource/sub`, `*`, `*\/sub`, `resource/*`, `*\/*`, split once (apiserver rules.go semantics). */
function resourcesOf(patterns: readonly string[]): (resource: string, subResource: string) => boolean {
  const split = patterns.map((pattern) => {
    const slash = pattern.indexOf('/');
    return slash < 0 ? { res: pattern, sub: '' } : { res: pattern.slice(0, slash), sub: pattern.slice(slash + 1) };
  });
  return (resource, subResource) =>
    split.some(({ res, sub }) => (res === '*' || res === resource) && (sub === '*' || sub === subResource));
}

/** Namespace objects are cluster-scoped; for them the apiserver sets request.namespace to their own name. */
export function isNamespaceResource(request: AdmissionRequest): boolean {
  return request.resource.group === '' && request.resource.resource === 'namespaces';
}

function scopeMatches(rule: RuleWithOperations, request: AdmissionRequest): boolean {
  const isNamespaceObject = isNamespaceResource(request);
  const namespaced = !!request.namespace;
  switch (rule.scope ?? '*') {
    case 'Namespaced':
      return !isNamespaceObject && namespaced;
    case 'Cluster':
      return isNamespaceObject || !namespaced;
    default:
      return true;
  }
}

function compileRule(rule: RuleWithOperations): (request: AdmissionRequest) => boolean {
  const operation = anyOf(rule.operations);
  const group = anyOf(rule.apiGroups);
  const version = anyOf(rule.apiVersions);
  const resources = resourcesOf(rule.resources);
  return (request) =>
    operation(request.operation) &&
    group(request.resource.group) &&
    version(request.resource.version) &&
    resources(request.resource.resource, request.subResource ?? '') &&
    scopeMatches(rule, request);
}

function labelsOf(object: KubeObject | null | undefined): Labels | undefined {
  const labels = object?.metadata?.labels;
  return labels && typeof labels === 'object' ? labels : undefined;
}

/**
 * The labels a namespaceSelector is evaluated against: for a Namespace CREATE/UPDATE the object's own
 * labels (it may not exist yet), otherwise those of the request's namespace.
 */
export function namespaceLabelsFromObject(request: AdmissionRequest): Labels | undefined {
  if (
    isNamespaceResource(request) &&
    !request.subResource &&
    (request.operation === 'CREATE' || request.operation === 'UPDATE')
  ) {
    return labelsOf(request.object) ?? {};
  }
  return undefined;
}

/** The namespace whose labels a namespaceSelector needs, or undefined when no lookup is needed. */
export function namespaceToLookUp(request: AdmissionRequest): string | undefined {
  if (namespaceLabelsFromObject(request) !== undefined) return undefined;
  if (isNamespaceResource(request)) return request.namespace || request.name || undefined;
  return request.namespace || undefined;
}

export function compileMatch(match: Match): CompiledMatch {
  const rules = match.rules.map(compileRule);
  const nsSelector = compileSelector(match.namespaceSelector);
  const objSelector = compileSelector(match.objectSelector);
  const hasNsSelector = !isEmptySelector(match.namespaceSelector);
  const hasObjSelector = !isEmptySelector(match.objectSelector);
  // The apiserver matches the new *or* the old object; an absent object never matches.
  const objectMatches = (object: KubeObject | null | undefined): boolean =>
    !!object && objSelector(labelsOf(object) ?? {});

  const rulesMatch = (request: AdmissionRequest): boolean => rules.some((rule) => rule(request));
  const matches: Matcher = (request, namespaceLabels) => {
    if (!rulesMatch(request)) return RULES_DO_NOT_MATCH;
    // A cluster-scoped object other than a Namespace is never exempted by a namespaceSelector.
    if (hasNsSelector && (request.namespace || isNamespaceResource(request))) {
      const labels = namespaceLabelsFromObject(request) ?? namespaceLabels;
      if (!nsSelector(labels ?? {})) return NAMESPACE_SELECTOR_DOES_NOT_MATCH;
    }
    if (hasObjSelector && !objectMatches(request.object) && !objectMatches(request.oldObject)) {
      return OBJECT_SELECTOR_DOES_NOT_MATCH;
    }
    return undefined;
  };
  const ruleIndex = (request: AdmissionRequest): number => rules.findIndex((rule) => rule(request));
  return { matches, rulesMatch, needsNamespaceLabels: hasNsSelector, ruleIndex };
}
