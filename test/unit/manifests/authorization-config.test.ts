import assert from 'node:assert/strict';
import { DEFAULT_EXCLUSIONS } from '../../../server/authorization/exclusions.js';
import {
  authorizeMatchExpression,
  exclusionConditions,
  stepsCondition,
} from '../../../server/manifests/authorize-conditions.js';
import { renderAuthorizationConfig } from '../../../server/manifests/authorization-config.js';

const SECRETS = { verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['secrets'] };

describe('renderAuthorizationConfig()', () => {
  it('lists the authorizers in order, the gateway as a NoOpinion webhook with its kubeconfig, timeout and conditions', () => {
    assert.deepEqual(
      renderAuthorizationConfig({
        modes: ['Node', 'Webhook', 'RBAC'],
        name: 'admission-gateway',
        kubeconfigFile: '/etc/kubernetes/admission-gateway/authorization-webhook.kubeconfig',
        timeoutSeconds: 6,
        exclusions: { users: ['system:apiserver', 'system:serviceaccount:gw:*'], groups: ['system:masters'] },
        matches: [SECRETS],
        allRequests: false,
      }),
      {
        apiVersion: 'apiserver.config.k8s.io/v1',
        kind: 'AuthorizationConfiguration',
        authorizers: [
          { type: 'Node', name: 'node' },
          {
            type: 'Webhook',
            name: 'admission-gateway',
            webhook: {
              timeout: '6s',
              subjectAccessReviewVersion: 'v1',
              matchConditionSubjectAccessReviewVersion: 'v1',
              failurePolicy: 'NoOpinion',
              authorizedTTL: '5m',
              unauthorizedTTL: '30s',
              connectionInfo: {
                type: 'KubeConfigFile',
                kubeConfigFile: '/etc/kubernetes/admission-gateway/authorization-webhook.kubeconfig',
              },
              matchConditions: [
                {
                  expression:
                    "!(request.user in ['system:apiserver'] || request.user.startsWith('system:serviceaccount:gw:'))",
                },
                { expression: "!request.groups.exists(g, g in ['system:masters'])" },
                {
                  expression:
                    "(has(request.resourceAttributes) && request.resourceAttributes.verb in ['get', 'list', 'watch'] && " +
                    "request.resourceAttributes.group in [''] && " +
                    "((request.resourceAttributes.resource == 'secrets' && request.resourceAttributes.subresource == '')))",
                },
              ],
            },
          },
          { type: 'RBAC', name: 'rbac' },
        ],
      },
    );
  });
});

describe('the authorizer match conditions', () => {
  it('exclude the identities the gateway never judges: exact names and prefixes', () => {
    assert.deepEqual(exclusionConditions(DEFAULT_EXCLUSIONS), [
      {
        name: 'not-excluded-user',
        expression:
          "!(request.user in ['system:apiserver', 'system:kube-controller-manager', 'system:kube-scheduler', " +
          "'system:kube-proxy'] || request.user.startsWith('system:serviceaccount:kube-system:'))",
      },
      { name: 'not-excluded-group', expression: "!request.groups.exists(g, g in ['system:masters', 'system:nodes'])" },
    ]);
  });

  it('say in CEL what an authorizeMatch matches: subresources, wildcards, namespaces, non-resource paths', () => {
    const R = 'request.resourceAttributes';
    assert.equal(
      authorizeMatchExpression({ resources: ['pods/exec', '*/status', 'deployments/*'], namespaces: ['team-a'] }),
      `has(${R}) && ${R}.namespace in ['team-a'] && ((${R}.resource == 'pods' && ${R}.subresource == 'exec') || ` +
        `${R}.subresource == 'status' || (${R}.resource == 'deployments' && ${R}.subresource != ''))`,
    );
    assert.equal(authorizeMatchExpression({ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }), `has(${R})`);
    assert.equal(
      authorizeMatchExpression({ verbs: ['get'], nonResourceURLs: ['/healthz', '/logs/*'] }),
      "has(request.nonResourceAttributes) && request.nonResourceAttributes.verb in ['get'] && " +
        "(request.nonResourceAttributes.path in ['/healthz'] || request.nonResourceAttributes.path.startsWith('/logs/'))",
    );
    assert.equal(authorizeMatchExpression({ verbs: ['get'] }), undefined, 'neither resources nor paths: nothing');
  });

  it('join the steps with ||; no step is false; steps added at run time leave the condition out', () => {
    assert.deepEqual(stepsCondition([], false), { name: 'an-authorize-step-matches', expression: 'false' });
    assert.equal(stepsCondition([SECRETS], true), undefined);
    assert.equal(
      stepsCondition([{ resources: ['secrets'] }, { nonResourceURLs: ['/metrics'] }], false)?.expression,
      "(has(request.resourceAttributes) && ((request.resourceAttributes.resource == 'secrets' && " +
        "request.resourceAttributes.subresource == ''))) || (has(request.nonResourceAttributes) && " +
        "(request.nonResourceAttributes.path in ['/metrics']))",
    );
  });
});
