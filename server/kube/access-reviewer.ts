/**
 * The ops port's questions to the apiserver (server.opsAuth kube): a TokenReview (authentication.k8s.io/v1) for
 * who a bearer token belongs to, a SubjectAccessReview (authorization.k8s.io/v1) of a non-resource URL for what
 * that user may do. The gateway's ServiceAccount needs `create` on both, which the built-in ClusterRole
 * system:auth-delegator grants (manifests/ops-access-rbac.yaml).
 */
import { AuthenticationV1Api, AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { AccessReviewer } from '../http/ops-access.js';
import { abortedBy } from './abort-call.js';

export function createKubeAccessReviewer(kc: KubeConfig): AccessReviewer {
  const authentication = kc.makeApiClient(AuthenticationV1Api);
  const authorization = kc.makeApiClient(AuthorizationV1Api);
  return {
    async reviewToken(token, signal) {
      const review = await authentication.createTokenReview(
        { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } } },
        abortedBy(signal),
      );
      const user = review.status?.user;
      if (review.status?.authenticated !== true || !user?.username) return { authenticated: false };
      return {
        authenticated: true,
        user: {
          username: user.username,
          ...(user.uid ? { uid: user.uid } : {}),
          ...(user.groups ? { groups: user.groups } : {}),
          ...(user.extra ? { extra: user.extra } : {}),
        },
      };
    },
    async reviewAccess(user, path, verb, signal) {
      const review = await authorization.createSubjectAccessReview(
        {
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec: {
              user: user.username,
              ...(user.uid ? { uid: user.uid } : {}),
              ...(user.groups ? { groups: [...user.groups] } : {}),
              ...(user.extra
                ? { extra: Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, [...v]])) }
                : {}),
              nonResourceAttributes: { path, verb },
            },
          },
        },
        abortedBy(signal),
      );
      return review.status?.allowed === true && review.status.denied !== true;
    },
  };
}
