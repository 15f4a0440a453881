/** The words a decision trace gives for a skip: each agrees with the matcher that decided it. */
import assert from 'node:assert/strict';
import type { AdmissionRequest, Match } from '../../../server/admission/types.js';
import { compileMatch } from '../../../server/steps/match.js';
import { describeRule, explainMismatch } from '../../../server/trace/match-explanation.js';
import { requestOf, podCreate } from '../../fixtures/reviews/index.js';

const pod = (): AdmissionRequest => requestOf(podCreate());

/** What the matcher says, put in words. */
function explained(match: Match, request: AdmissionRequest, namespaceLabels = {}): string | undefined {
  const reason = compileMatch(match).matches(request, namespaceLabels);
  return reason === undefined ? undefined : explainMismatch(reason, match, request, namespaceLabels);
}

describe('why a match excluded a request, in words', function () {
  it('names the first field of each rule the request fails', function () {
    const match: Match = {
      rules: [
        { operations: ['UPDATE', 'DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] },
        { operations: ['*'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] },
        { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods/status'] },
        { operations: ['CREATE'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'], scope: 'Cluster' },
      ],
    };
    assert.equal(
      explained(match, pod()),
      'rules do not match: rule 1 wants operations [UPDATE, DELETE], not CREATE; ' +
        'rule 2 wants apiGroups [apps], not ""; rule 3 wants resources [pods/status], not pods; ' +
        'rule 4 wants scope Cluster, not Namespaced',
    );
  });

  it('names the selector requirements the labels fail, and the labels', function () {
    const match: Match = {
      rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }],
      objectSelector: {
        matchLabels: { app: 'web', tier: 'front' },
        matchExpressions: [
          { key: 'team', operator: 'NotIn', values: ['payments'] },
          { key: 'app', operator: 'Exists' },
        ],
      },
    };
    assert.equal(
      explained(match, pod()),
      "objectSelector does not match: the object's labels {app=web, team=payments} fail tier=front, team NotIn [payments]",
    );
    const namespaced: Match = {
      ...match,
      objectSelector: {},
      namespaceSelector: { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod', 'staging'] }] },
    };
    assert.equal(
      explained(namespaced, pod(), { env: 'dev' }),
      "namespaceSelector does not match: the namespace's labels {env=dev} fail env In [prod, staging]",
    );
  });

  it('gives other reasons as they are, and nothing for a request that matches', function () {
    const match: Match = {
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
    };
    assert.equal(explained(match, pod()), undefined);
    assert.equal(
      explainMismatch('dry-run request and the step has side effects', match, pod(), {}),
      'dry-run request and the step has side effects',
    );
  });

  it('describes the rule that selected a request', function () {
    const match: Match = {
      rules: [
        { operations: ['DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] },
        {
          operations: ['CREATE', 'UPDATE'],
          apiGroups: ['', 'apps'],
          apiVersions: ['v1'],
          resources: ['pods', 'deployments'],
          scope: 'Namespaced',
        },
      ],
    };
    const index = compileMatch(match).ruleIndex(pod());
    assert.equal(describeRule(match, index), 'rule 2 (CREATE, UPDATE on core,apps/v1 pods, deployments, Namespaced)');
    assert.equal(describeRule(match, -1), undefined);
  });
});
