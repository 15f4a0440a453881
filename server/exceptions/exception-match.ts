/**
 * Which requests an exception covers: the webhook-style rules and selectors of steps/match.ts, then the
 * object's name, then who sent the request. Every list is a Set built once, so one test is a few lookups.
 */
import type { AdmissionRequest, RuleWithOperations } from '../admission/types.js';
import { compileMatch } from '../steps/match.js';
import type { ExceptionMatchSpec, ExceptionMatcher } from './exception.js';

const ANY_REQUEST: readonly RuleWithOperations[] = [
  { operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*', '*/*'] },
];

/** The name a request is about: the apiserver's `name`, or for a CREATE the object's own. */
export function requestName(request: AdmissionRequest): string | undefined {
  return request.name || request.object?.metadata?.name || request.oldObject?.metadata?.name || undefined;
}

/** `namespace/name` of a ServiceAccount, as its user name. */
const serviceAccountUser = (ref: string): string => {
  const slash = ref.indexOf('/');
  return `system:serviceaccount:${ref.slice(0, slash)}:${ref.slice(slash + 1)}`;
};

export function compileExceptionMatch(spec: ExceptionMatchSpec): {
  matches: ExceptionMatcher;
  needsNamespaceLabels: boolean;
} {
  const base = compileMatch({
    rules: spec.rules?.length ? spec.rules : ANY_REQUEST,
    ...(spec.namespaceSelector ? { namespaceSelector: spec.namespaceSelector } : {}),
    ...(spec.objectSelector ? { objectSelector: spec.objectSelector } : {}),
  });
  const names = spec.names?.length ? new Set(spec.names) : undefined;
  const users = new Set([...(spec.users ?? []), ...(spec.serviceAccounts ?? []).map(serviceAccountUser)]);
  const groups = new Set(spec.groups ?? []);
  const bySubject = users.size > 0 || groups.size > 0;
  const matches: ExceptionMatcher = (request, namespaceLabels) => {
    if (base.matches(request, namespaceLabels) !== undefined) return false;
    if (names) {
      const name = requestName(request);
      if (name === undefined || !names.has(name)) return false;
    }
    if (bySubject) {
      const info = request.userInfo;
      const user = info?.username;
      if (!(user !== undefined && users.has(user)) && !(info?.groups ?? []).some((g) => groups.has(g))) return false;
    }
    return true;
  };
  return { matches, needsNamespaceLabels: base.needsNamespaceLabels };
}
