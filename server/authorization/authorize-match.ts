/**
 * Which authorization requests an authorize step sees, written as an RBAC rule is: `verbs`, `apiGroups` and
 * `resources` (`secrets`, `pods/exec`, `*`, `*\/status`) for resource requests, `nonResourceURLs` (`/healthz`,
 * `/logs/*`) for the others, and `namespaces` to narrow resource requests to some namespaces. `*` matches
 * anything. Compiled once into sets, so that a request that matches no step costs a few lookups.
 */
import type { AuthorizationAttributes } from './attributes.js';

export interface AuthorizeMatch {
  /** Default: every verb. */
  readonly verbs?: readonly string[];
  /** Default: every group ('' is the core group). */
  readonly apiGroups?: readonly string[];
  /** `resource` or `resource/subresource`; without it, no resource request matches. */
  readonly resources?: readonly string[];
  /** Default: every namespace, and cluster-wide requests. */
  readonly namespaces?: readonly string[];
  /** Paths, or prefixes ending in `*`; without it, no non-resource request matches. */
  readonly nonResourceURLs?: readonly string[];
}

export interface CompiledAuthorizeMatch {
  matches(attributes: AuthorizationAttributes): boolean;
}

const ANY = '*';

/** A set that `*` makes universal; undefined (not given) is universal too. */
function setOf(values: readonly string[] | undefined): ReadonlySet<string> | undefined {
  return values === undefined || values.includes(ANY) ? undefined : new Set(values);
}

export function compileAuthorizeMatch(spec: AuthorizeMatch): CompiledAuthorizeMatch {
  const verbs = setOf(spec.verbs);
  const groups = setOf(spec.apiGroups);
  const namespaces = setOf(spec.namespaces);
  const resources = spec.resources ? new Set(spec.resources) : undefined;
  const paths = spec.nonResourceURLs ? spec.nonResourceURLs.filter((p) => !p.endsWith(ANY)) : [];
  const prefixes = spec.nonResourceURLs
    ? spec.nonResourceURLs.filter((p) => p.endsWith(ANY)).map((p) => p.slice(0, -1))
    : [];

  const resourceMatches = (r: NonNullable<AuthorizationAttributes['resource']>): boolean => {
    if (!resources) return false;
    if (verbs && !verbs.has(r.verb)) return false;
    if (groups && !groups.has(r.group)) return false;
    if (namespaces && !namespaces.has(r.namespace)) return false;
    if (resources.has(ANY)) return true;
    if (!r.subresource) return resources.has(r.resource);
    return (
      resources.has(`${r.resource}/${r.subresource}`) ||
      resources.has(`${ANY}/${r.subresource}`) ||
      resources.has(`${r.resource}/${ANY}`)
    );
  };
  return {
    matches(a) {
      if (a.resource) return resourceMatches(a.resource);
      const n = a.nonResource!;
      if (verbs && !verbs.has(n.verb)) return false;
      return paths.includes(n.path) || prefixes.some((prefix) => n.path.startsWith(prefix));
    },
  };
}
