import assert from 'node:assert/strict';
import type { Labels } from '../../../server/steps/label-selector.js';
import { compileMatch, namespaceToLookUp } from '../../../server/steps/match.js';
import type { AdmissionRequest, Match } from '../../../server/plugin-api/types.js';

function request(overrides: Partial<AdmissionRequest> = {}): AdmissionRequest {
  return {
    uid: 'u1',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    namespace: 'team-a',
    name: 'web',
    operation: 'CREATE',
    userInfo: {},
    object: { metadata: { name: 'web', labels: { app: 'web' } } },
    oldObject: null,
    ...overrides,
  };
}

const pods: Match = { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }] };
const namespaceRequest = (operation: AdmissionRequest['operation'], labels?: Record<string, string>) =>
  request({
    kind: { group: '', version: 'v1', kind: 'Namespace' },
    resource: { group: '', version: 'v1', resource: 'namespaces' },
    namespace: 'prod',
    name: 'prod',
    operation,
    object: operation === 'DELETE' ? null : { metadata: { name: 'prod', ...(labels ? { labels } : {}) } },
    oldObject: operation === 'DELETE' ? { metadata: { name: 'prod', labels: { env: 'prod' } } } : null,
  });

interface Case {
  name: string;
  match: Match;
  request: AdmissionRequest;
  namespaceLabels?: Labels;
  expected: string | undefined;
}

const cases: Case[] = [
  { name: 'an exact rule matches', match: pods, request: request(), expected: undefined },
  {
    name: 'another operation does not match',
    match: pods,
    request: request({ operation: 'UPDATE' }),
    expected: 'rules do not match',
  },
  {
    name: 'operations * matches every operation',
    match: { rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] },
    request: request({ operation: 'DELETE' }),
    expected: undefined,
  },
  {
    name: 'resources * does not match a subresource',
    match: { rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] },
    request: request({ subResource: 'status' }),
    expected: 'rules do not match',
  },
  {
    name: '*/status matches the status subresource of any resource',
    match: { rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/status'] }] },
    request: request({ subResource: 'status' }),
    expected: undefined,
  },
  {
    // rules.go: the "*" subresource also matches the empty one, so pods/* covers pods itself.
    name: 'pods/* matches pods itself, as the apiserver does',
    match: { rules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods/*'] }] },
    request: request(),
    expected: undefined,
  },
  {
    name: 'pods/* does not match a subresource of another resource',
    match: { rules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods/*'] }] },
    request: request({ resource: { group: '', version: 'v1', resource: 'services' }, subResource: 'status' }),
    expected: 'rules do not match',
  },
  {
    name: '*/* matches everything',
    match: { rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'] }] },
    request: request({ subResource: 'exec', operation: 'CONNECT' }),
    expected: undefined,
  },
  {
    name: 'a group mismatch does not match',
    match: { rules: [{ operations: ['*'], apiGroups: ['apps'], apiVersions: ['*'], resources: ['*'] }] },
    request: request(),
    expected: 'rules do not match',
  },
  {
    name: 'scope Namespaced matches a namespaced object',
    match: { rules: [{ ...pods.rules[0]!, scope: 'Namespaced' }] },
    request: request(),
    expected: undefined,
  },
  {
    name: 'scope Namespaced does not match a Namespace (it is cluster-scoped)',
    match: {
      rules: [
        { operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['namespaces'], scope: 'Namespaced' },
      ],
    },
    request: namespaceRequest('CREATE'),
    expected: 'rules do not match',
  },
  {
    name: 'scope Cluster matches a Namespace',
    match: {
      rules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['namespaces'], scope: 'Cluster' }],
    },
    request: namespaceRequest('CREATE'),
    expected: undefined,
  },
  {
    name: 'scope Cluster does not match a namespaced Pod',
    match: { rules: [{ ...pods.rules[0]!, scope: 'Cluster' }] },
    request: request(),
    expected: 'rules do not match',
  },
  {
    name: 'a namespaceSelector matching the namespace labels',
    match: { ...pods, namespaceSelector: { matchLabels: { env: 'prod' } } },
    request: request(),
    namespaceLabels: { env: 'prod' },
    expected: undefined,
  },
  {
    name: 'a namespaceSelector not matching the namespace labels',
    match: { ...pods, namespaceSelector: { matchLabels: { env: 'prod' } } },
    request: request(),
    namespaceLabels: { env: 'dev' },
    expected: 'namespaceSelector does not match',
  },
  {
    name: 'a namespaceSelector never exempts a cluster-scoped object',
    match: {
      rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }],
      namespaceSelector: { matchLabels: { env: 'prod' } },
    },
    request: request({
      kind: { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRole' },
      resource: { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles' },
      namespace: '',
    }),
    expected: undefined,
  },
  {
    name: "a Namespace CREATE is selected by the new Namespace's own labels",
    match: {
      rules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['namespaces'] }],
      namespaceSelector: { matchLabels: { env: 'prod' } },
    },
    request: namespaceRequest('CREATE', { env: 'prod' }),
    namespaceLabels: { env: 'dev' },
    expected: undefined,
  },
  {
    name: 'NotIn matches when the key is absent',
    match: {
      ...pods,
      namespaceSelector: { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['system'] }] },
    },
    request: request(),
    namespaceLabels: {},
    expected: undefined,
  },
  {
    name: 'Exists does not match when the key is absent',
    match: { ...pods, namespaceSelector: { matchExpressions: [{ key: 'tier', operator: 'Exists' }] } },
    request: request(),
    namespaceLabels: { env: 'prod' },
    expected: 'namespaceSelector does not match',
  },
  {
    name: 'an objectSelector matching the new object',
    match: { ...pods, objectSelector: { matchLabels: { app: 'web' } } },
    request: request(),
    expected: undefined,
  },
  {
    name: 'an objectSelector matching only the old object still matches',
    match: {
      rules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
      objectSelector: { matchLabels: { app: 'old' } },
    },
    request: request({ operation: 'UPDATE', oldObject: { metadata: { labels: { app: 'old' } } } }),
    expected: undefined,
  },
  {
    name: 'an objectSelector with DoesNotExist does not match an absent object',
    match: {
      rules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
      objectSelector: { matchExpressions: [{ key: 'skip', operator: 'DoesNotExist' }] },
    },
    request: request({ operation: 'DELETE', object: null, oldObject: null }),
    expected: 'objectSelector does not match',
  },
  {
    name: 'an objectSelector against an object without labels sees no labels',
    match: { ...pods, objectSelector: { matchExpressions: [{ key: 'skip', operator: 'DoesNotExist' }] } },
    request: request({ object: { metadata: { name: 'web' } } }),
    expected: undefined,
  },
];

describe('compileMatch()', () => {
  for (const c of cases) {
    it(`${c.name}: ${c.expected ?? 'applies'}`, () => {
      assert.equal(compileMatch(c.match).matches(c.request, c.namespaceLabels), c.expected);
    });
  }

  it('reports whether namespace labels are needed', () => {
    assert.equal(compileMatch(pods).needsNamespaceLabels, false);
    assert.equal(compileMatch({ ...pods, namespaceSelector: { matchLabels: { a: 'b' } } }).needsNamespaceLabels, true);
    assert.equal(compileMatch({ ...pods, namespaceSelector: {} }).needsNamespaceLabels, false);
  });
});

describe('namespaceToLookUp()', () => {
  it('is the request namespace for namespaced objects', () => {
    assert.equal(namespaceToLookUp(request()), 'team-a');
  });
  it('is nothing for a Namespace CREATE (its own labels are used)', () => {
    assert.equal(namespaceToLookUp(namespaceRequest('CREATE')), undefined);
  });
  it('is the Namespace itself for a Namespace DELETE', () => {
    assert.equal(namespaceToLookUp(namespaceRequest('DELETE')), 'prod');
  });
  it('is nothing for other cluster-scoped objects', () => {
    assert.equal(namespaceToLookUp(request({ namespace: '' })), undefined);
  });
});
