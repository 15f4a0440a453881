/**
 * The CEL match conditions of the gateway's authorizer in an AuthorizationConfiguration: kube-apiserver calls
 * the gateway only when every condition is true, evaluated over the SubjectAccessReview (v1) it would send
 * (`request.user`, `request.groups`, `request.resourceAttributes.verb`, …; every string attribute is present,
 * '' when empty). The conditions say in CEL what the gateway would decide itself: an identity it never judges
 * (exclusions.ts) or a request no authorize step matches (authorize-match.ts) would only cost a call answered
 * "no opinion".
 */
import type { AuthorizeMatch } from '../authorization/authorize-match.js';
import type { Exclusions } from '../authorization/exclusions.js';
import { celList, celString } from './cel-literal.js';
import type { WebhookMatchCondition } from './render.js';

const ANY = '*';
const R = 'request.resourceAttributes';
const N = 'request.nonResourceAttributes';

/** `names` split as exclusions.ts reads them: exact names, and prefixes (a name ending in `*`). */
function split(names: readonly string[]): { exact: string[]; prefixes: string[] } {
  return {
    exact: names.filter((n) => !n.endsWith(ANY)),
    prefixes: names.filter((n) => n.endsWith(ANY)).map((n) => n.slice(0, -1)),
  };
}

/** Whether `value` (a CEL string expression) is one of `names` (exact or prefix): '' when there are none. */
function isOneOf(value: string, names: readonly string[]): string[] {
  const { exact, prefixes } = split(names);
  return [
    ...(exact.length > 0 ? [`${value} in ${celList(exact)}`] : []),
    ...prefixes.map((p) => `${value}.startsWith(${celString(p)})`),
  ];
}

/** The exclusions as two conditions: not an excluded user, in no excluded group. */
export function exclusionConditions(exclusions: Exclusions): WebhookMatchCondition[] {
  const user = isOneOf('request.user', exclusions.users);
  const group = isOneOf('g', exclusions.groups);
  return [
    ...(user.length > 0 ? [{ name: 'not-excluded-user', expression: `!(${user.join(' || ')})` }] : []),
    ...(group.length > 0
      ? [{ name: 'not-excluded-group', expression: `!request.groups.exists(g, ${group.join(' || ')})` }]
      : []),
  ];
}

/** `field in [values]`, or nothing when the list is absent or names `*`. */
function within(field: string, values: readonly string[] | undefined): string[] {
  if (values === undefined || values.includes(ANY)) return [];
  return [`${field} in ${celList(values)}`];
}

/** One `resources` entry (`secrets`, `pods/exec`, `*`, `*\/status`, `pods/*`), as authorize-match.ts reads it. */
function resourceCondition(entry: string): string | undefined {
  if (entry === ANY) return undefined;
  const slash = entry.indexOf('/');
  if (slash < 0) return `(${R}.resource == ${celString(entry)} && ${R}.subresource == '')`;
  const resource = entry.slice(0, slash);
  const subresource = entry.slice(slash + 1);
  if (resource === ANY) return `${R}.subresource == ${celString(subresource)}`;
  if (subresource === ANY) return `(${R}.resource == ${celString(resource)} && ${R}.subresource != '')`;
  return `(${R}.resource == ${celString(resource)} && ${R}.subresource == ${celString(subresource)})`;
}

const and = (parts: readonly string[]): string => (parts.length === 0 ? 'true' : parts.join(' && '));

/** The requests one step's authorizeMatch selects, or undefined when it selects none. */
export function authorizeMatchExpression(match: AuthorizeMatch): string | undefined {
  const alternatives: string[] = [];
  if (match.resources && match.resources.length > 0) {
    const resources = match.resources.map(resourceCondition);
    const resource = resources.includes(undefined) ? [] : [`(${resources.join(' || ')})`];
    alternatives.push(
      and([
        `has(${R})`,
        ...within(`${R}.verb`, match.verbs),
        ...within(`${R}.group`, match.apiGroups),
        ...within(`${R}.namespace`, match.namespaces),
        ...resource,
      ]),
    );
  }
  if (match.nonResourceURLs && match.nonResourceURLs.length > 0) {
    const paths = isOneOf(`${N}.path`, match.nonResourceURLs);
    alternatives.push(and([`has(${N})`, ...within(`${N}.verb`, match.verbs), `(${paths.join(' || ')})`]));
  }
  if (alternatives.length === 0) return undefined;
  return alternatives.length === 1 ? alternatives[0] : alternatives.map((a) => `(${a})`).join(' || ');
}

/**
 * One condition: some step matches. Undefined when there is no step to match (`everything`: steps added at run
 * time, unknown now, may match any request).
 */
export function stepsCondition(
  matches: readonly AuthorizeMatch[],
  everything: boolean,
): WebhookMatchCondition | undefined {
  if (everything) return undefined;
  const expressions = matches.map(authorizeMatchExpression).filter((e): e is string => e !== undefined);
  return {
    name: 'an-authorize-step-matches',
    expression: expressions.length === 0 ? 'false' : expressions.map((e) => `(${e})`).join(' || '),
  };
}
