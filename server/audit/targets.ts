/**
 * Which resources an audit lists: the rules of the validating steps (as written) mapped to what the apiserver's
 * discovery documents say it serves. Pure: the discovery documents are read by cluster.ts.
 *
 * - A rule counts when its operations include CREATE (or `*`): the audit reviews each existing object as the
 *   CREATE of it would be reviewed now.
 * - `apiGroups`/`apiVersions`/`resources` match as in the apiserver's rules (`*` included); subresources
 *   (`pods/status`) are never listed, and a resource must support `list`.
 * - One version per group and resource: the group's preferred version when a rule takes it, else the first the
 *   server lists that a rule takes, so no object is reviewed twice under two versions.
 * - `scope` is honoured: `Namespaced` rules list namespaced resources only, `Cluster` rules cluster-scoped ones.
 */
import type { RuleWithOperations } from '../admission/types.js';

/** A group as the apiserver's discovery lists it; the core group is `''`. */
export interface DiscoveredGroup {
  readonly name: string;
  readonly preferredVersion: string;
  /** In the server's order of preference. */
  readonly versions: readonly string[];
}

/** A resource of one group-version as discovery lists it (`APIResource`). */
export interface DiscoveredResource {
  /** The plural, or `plural/subresource`. */
  readonly name: string;
  readonly kind: string;
  readonly namespaced: boolean;
  readonly verbs: readonly string[];
}

/** What the audit lists, and which steps' rules select it. */
export interface AuditTarget {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly kind: string;
  readonly namespaced: boolean;
  readonly steps: readonly string[];
}

/** A step's rules as written. */
export interface StepRules {
  readonly step: string;
  readonly rules: readonly RuleWithOperations[];
}

const takes = (list: readonly string[], value: string) => list.includes('*') || list.includes(value);

const createRules = (rules: readonly RuleWithOperations[]) => rules.filter((rule) => takes(rule.operations, 'CREATE'));

/** The group-versions whose resource lists the audit needs: those some CREATE rule takes. */
export function groupVersionsToRead(
  steps: readonly StepRules[],
  groups: readonly DiscoveredGroup[],
): { group: string; version: string }[] {
  const rules = steps.flatMap((s) => createRules(s.rules));
  return groups.flatMap((g) =>
    g.versions
      .filter((version) => rules.some((r) => takes(r.apiGroups, g.name) && takes(r.apiVersions, version)))
      .map((version) => ({ group: g.name, version })),
  );
}

/** Whether a rule's resources take the resource itself (not only subresources of it). */
function takesResource(patterns: readonly string[], resource: string): boolean {
  return patterns.some((pattern) => {
    const slash = pattern.indexOf('/');
    const res = slash < 0 ? pattern : pattern.slice(0, slash);
    const sub = slash < 0 ? '' : pattern.slice(slash + 1);
    return (res === '*' || res === resource) && (sub === '' || sub === '*');
  });
}

function scopeTakes(rule: RuleWithOperations, group: string, resource: DiscoveredResource): boolean {
  const isNamespace = group === '' && resource.name === 'namespaces';
  switch (rule.scope ?? '*') {
    case 'Namespaced':
      return resource.namespaced;
    case 'Cluster':
      return !resource.namespaced || isNamespace;
    default:
      return true;
  }
}

function ruleTakes(rule: RuleWithOperations, group: string, version: string, resource: DiscoveredResource): boolean {
  return (
    takes(rule.apiGroups, group) &&
    takes(rule.apiVersions, version) &&
    takesResource(rule.resources, resource.name) &&
    scopeTakes(rule, group, resource)
  );
}

/** The version order one group's resources are tried in: preferred first, then the server's order. */
function versionOrder(group: DiscoveredGroup): string[] {
  return [group.preferredVersion, ...group.versions.filter((v) => v !== group.preferredVersion)].filter((v) =>
    group.versions.includes(v),
  );
}

/**
 * The resources to list, sorted by group, resource. `resourcesOf` gives a group-version's resources (undefined
 * when it was not read).
 */
export function auditTargets(
  steps: readonly StepRules[],
  groups: readonly DiscoveredGroup[],
  resourcesOf: (group: string, version: string) => readonly DiscoveredResource[] | undefined,
): AuditTarget[] {
  const targets = new Map<string, AuditTarget>();
  for (const group of groups) {
    for (const version of versionOrder(group)) {
      for (const resource of resourcesOf(group.name, version) ?? []) {
        if (resource.name.includes('/') || !resource.verbs.includes('list')) continue;
        const key = `${group.name}/${resource.name}`;
        if (targets.has(key)) continue;
        const selecting = steps
          .filter((s) => createRules(s.rules).some((rule) => ruleTakes(rule, group.name, version, resource)))
          .map((s) => s.step);
        if (selecting.length === 0) continue;
        targets.set(key, {
          group: group.name,
          version,
          resource: resource.name,
          kind: resource.kind,
          namespaced: resource.namespaced,
          steps: selecting,
        });
      }
    }
  }
  return [...targets.values()].sort((a, b) => a.group.localeCompare(b.group) || a.resource.localeCompare(b.resource));
}

/** `apps/v1`, or `v1` for the core group. */
export function apiVersionOf(target: Pick<AuditTarget, 'group' | 'version'>): string {
  return target.group ? `${target.group}/${target.version}` : target.version;
}
