/**
 * The union of several steps' rules as one webhook's `rules`: what the apiserver must send so that every
 * step still sees every request it matches. Only rewrites that keep the matched set exactly the same are
 * made (correct over clever), and the result passes the apiserver's validation of admissionregistration/v1
 * rules (a `*` stands alone; a resource covered by another one of the same list is dropped).
 */
import type { RuleWithOperations } from '../admission/types.js';

type Scope = 'Cluster' | 'Namespaced' | '*';

/** A rule with its lists normalised; `scope` always set (the apiserver's default is `*`). */
interface NormalRule {
  readonly operations: readonly string[];
  readonly apiGroups: readonly string[];
  readonly apiVersions: readonly string[];
  readonly resources: readonly string[];
  readonly scope: Scope;
}

/** First occurrence order, duplicates removed; a list holding `*` is just `[*]` (the apiserver refuses a mix). */
function wildcardList(list: readonly string[]): string[] {
  return list.includes('*') ? ['*'] : [...new Set(list)];
}

function splitResource(resource: string): { res: string; sub: string } {
  const slash = resource.indexOf('/');
  return slash < 0 ? { res: resource, sub: '' } : { res: resource.slice(0, slash), sub: resource.slice(slash + 1) };
}

/**
 * Whether the pattern `outer` matches every request `inner` matches (apiserver rules.go: `*` stands for any
 * resource, a subresource `*` for any subresource *including none*, so `pods/*` covers `pods`).
 */
export function resourceCovers(outer: string, inner: string): boolean {
  const o = splitResource(outer);
  const i = splitResource(inner);
  return (o.res === '*' || o.res === i.res) && (o.sub === '*' || o.sub === i.sub);
}

/** Drops each resource another entry of the list already covers (keeps the first of equal entries). */
function resourceList(list: readonly string[]): string[] {
  const unique = [...new Set(list)];
  return unique.filter((r, i) => !unique.some((other, j) => j !== i && resourceCovers(other, r)));
}

function normalise(rule: RuleWithOperations): NormalRule {
  return {
    operations: wildcardList(rule.operations),
    apiGroups: wildcardList(rule.apiGroups),
    apiVersions: wildcardList(rule.apiVersions),
    resources: resourceList(rule.resources),
    scope: rule.scope ?? '*',
  };
}

/** `a ⊆ b` for lists where `*` means everything. */
function listWithin(a: readonly string[], b: readonly string[]): boolean {
  return b.includes('*') || a.every((x) => x !== '*' && b.includes(x));
}

/** Whether every operation/group/version/scope `a` selects is selected by `b` too. */
function dimensionsWithin(a: NormalRule, b: NormalRule): boolean {
  return (
    listWithin(a.operations, b.operations) &&
    listWithin(a.apiGroups, b.apiGroups) &&
    listWithin(a.apiVersions, b.apiVersions) &&
    (b.scope === '*' || a.scope === b.scope)
  );
}

function keyOf(rule: NormalRule): string {
  const sorted = (list: readonly string[]) => [...list].sort().join(',');
  return `${sorted(rule.operations)}|${sorted(rule.apiGroups)}|${sorted(rule.apiVersions)}|${rule.scope}`;
}

function toWire(rule: NormalRule): RuleWithOperations {
  return {
    operations: rule.operations as RuleWithOperations['operations'],
    apiGroups: rule.apiGroups,
    apiVersions: rule.apiVersions,
    resources: rule.resources,
    // Always written, `*` included (the apiserver's default): what is applied is then what is stored.
    scope: rule.scope,
  };
}

/**
 * The rules matching exactly the requests that at least one of `rules` matches, in first-seen order:
 * 1. rules with the same operations, groups, versions and scope become one rule with the union of resources;
 * 2. a resource is dropped from a rule when another rule selects a superset of its operations, groups,
 *    versions and scope and covers that resource (then a rule left with no resource is dropped).
 * Step 2 never drops both of two rules: their dimensions would be equal, and step 1 has merged those.
 */
export function unionRules(rules: readonly RuleWithOperations[]): RuleWithOperations[] {
  const merged = new Map<string, NormalRule>();
  for (const rule of rules.map(normalise)) {
    const key = keyOf(rule);
    const existing = merged.get(key);
    merged.set(
      key,
      existing ? { ...existing, resources: resourceList([...existing.resources, ...rule.resources]) } : rule,
    );
  }
  const all = [...merged.values()];
  return all
    .map((rule) => ({
      ...rule,
      resources: rule.resources.filter(
        (resource) =>
          !all.some(
            (other) =>
              other !== rule &&
              dimensionsWithin(rule, other) &&
              other.resources.some((covering) => resourceCovers(covering, resource)),
          ),
      ),
    }))
    .filter((rule) => rule.resources.length > 0)
    .map(toWire);
}
