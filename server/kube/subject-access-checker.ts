/**
 * The authorization checks of admission policies (`authorizer` in CEL), asked of the apiserver in cluster mode: a
 * SubjectAccessReview (authorization.k8s.io/v1, served since 1.6) for the request's user or a service account,
 * with the check's resource or non-resource attributes. The apiserver answers it with the authorizer it runs its
 * own policies' checks on, so the decision, reason and evaluation error are the ones its policies see. The
 * gateway's ServiceAccount needs `create` on subjectaccessreviews (system:auth-delegator grants it:
 * manifests/ops-access-rbac.yaml). At most `maxInFlight` are asked at once; past it a check is answered as
 * failed at once rather than queued behind an apiserver that is not keeping up.
 */
import { AuthorizationV1Api, type KubeConfig, type V1ResourceAttributes } from '@kubernetes/client-node';
import type { AccessAttributes, AccessUser } from '../cel/index.js';
import type { SubjectAccessChecker } from '../policy/authorizer-session.js';
import { abortedBy } from './abort-call.js';

/** Questions to the apiserver at once, for the whole process. */
export const MAX_CHECKS_IN_FLIGHT = 64;

/** The attributes as the spec writes them; the version is any, as the apiserver's library asks. */
function attributesOf(a: AccessAttributes) {
  if (a.kind === 'nonResource') return { nonResourceAttributes: { path: a.path, verb: a.verb } };
  const resourceAttributes: V1ResourceAttributes = {
    verb: a.verb,
    group: a.group,
    version: '*',
    resource: a.resource,
    ...(a.subresource ? { subresource: a.subresource } : {}),
    ...(a.namespace ? { namespace: a.namespace } : {}),
    ...(a.name ? { name: a.name } : {}),
    // Parsed by the apiserver as its library parses them (and left out when they do not parse); an apiserver
    // before 1.31 drops them, and RBAC never reads them.
    ...(a.fieldSelector ? { fieldSelector: { rawSelector: a.fieldSelector } } : {}),
    ...(a.labelSelector ? { labelSelector: { rawSelector: a.labelSelector } } : {}),
  };
  return { resourceAttributes };
}

function userOf(user: AccessUser) {
  return {
    user: user.username,
    ...(user.uid ? { uid: user.uid } : {}),
    ...(user.groups ? { groups: [...user.groups] } : {}),
    ...(user.extra ? { extra: Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, [...v]])) } : {}),
  };
}

export function createSubjectAccessChecker(kc: KubeConfig, maxInFlight = MAX_CHECKS_IN_FLIGHT): SubjectAccessChecker {
  const api = kc.makeApiClient(AuthorizationV1Api);
  let inFlight = 0;
  return {
    async check(user, attributes, signal) {
      if (inFlight >= maxInFlight)
        throw new Error(`${maxInFlight} authorization checks are already waiting on the apiserver`);
      inFlight++;
      try {
        const review = await api.createSubjectAccessReview(
          {
            body: {
              apiVersion: 'authorization.k8s.io/v1',
              kind: 'SubjectAccessReview',
              spec: { ...userOf(user), ...attributesOf(attributes) },
            },
          },
          abortedBy(signal),
        );
        const status = review.status;
        return {
          allowed: status?.allowed === true,
          reason: status?.reason ?? '',
          ...(status?.evaluationError ? { error: status.evaluationError } : {}),
        };
      } finally {
        inFlight--;
      }
    },
  };
}
