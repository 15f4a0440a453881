import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import type { AdmissionResponse, KubeObject } from '../../../server/admission/types.js';
import { createLogger } from '../../../server/base/log.js';
import { createChain } from '../../../server/chain/chain.js';
import type { NativePoliciesEntry } from '../../../server/config/types.js';
import { createReviewer, standaloneNamespaceLabels } from '../../../server/dispatch/reviewer.js';
import { selectionOf } from '../../../server/http/routes.js';
import { createMetrics } from '../../../server/metrics/metrics.js';
import {
  createClusterPolicies,
  MAX_CLUSTER_POLICY_OBJECTS,
  selectorQuery,
  type ParamQuery,
} from '../../../server/native-policy/cluster-policies.js';
import type { NativePolicySet } from '../../../server/native-policy/native-objects.js';
import { readPolicySet } from '../../../server/native-policy/read-objects.js';
import type { Step } from '../../../server/steps/step.js';
import { podCreate, requestOf } from '../../fixtures/reviews/index.js';

const metrics = createMetrics(new Registry(), { defaultMetrics: false });
const log = createLogger('silent');

const ENTRY: NativePoliciesEntry = {
  kind: 'admissionPolicies',
  admissionPolicies: 'native',
  name: 'native',
  order: 10,
  path: 'chain[0]',
  files: [],
  fromCluster: true,
};

const NO_FILES: NativePolicySet = {
  policies: [],
  bindings: [],
  mutatingPolicies: [],
  mutatingBindings: [],
  objects: [],
};

/** A ValidatingAdmissionPolicy for Pods as the apiserver serves it (resourceVersion and all). */
function policy(name: string, expression: string, resourceVersion = '1', paramKind?: object): KubeObject {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name, resourceVersion, uid: `uid-${name}`, generation: 1 },
    spec: {
      failurePolicy: 'Fail',
      ...(paramKind ? { paramKind } : {}),
      matchConstraints: {
        resourceRules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        matchPolicy: 'Equivalent',
        namespaceSelector: {},
        objectSelector: {},
      },
      validations: [{ expression }],
    },
    status: { observedGeneration: 1, typeChecking: {} },
  };
}

function binding(name: string, policyName: string, paramRef?: object, resourceVersion = '1'): KubeObject {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name, resourceVersion },
    spec: { policyName, validationActions: ['Deny'], ...(paramRef ? { paramRef } : {}) },
  };
}

/** The validate route's answer, with `steps` as the chain, to the creation of Pod `name` in team-a. */
async function review(steps: readonly Step[], name: string): Promise<AdmissionResponse> {
  const chain = createChain(steps);
  const reviewer = createReviewer({
    chain: () => chain,
    metrics,
    log,
    namespaceLabels: standaloneNamespaceLabels,
    deadlineMarginMs: 250,
    defaultTimeoutMs: 10_000,
  });
  const request = requestOf(podCreate());
  const object = { ...request.object!, metadata: { ...request.object!.metadata, name } };
  return (await reviewer.review({ ...request, name, object }, selectionOf('validate'))).response;
}

/** Whether Pod `name` is admitted, or the refusal's message. */
async function answer(steps: readonly Step[], name: string): Promise<string> {
  const response = await review(steps, name);
  return response.allowed ? 'allowed' : (response.status?.message ?? '');
}

const noParams = (): undefined => undefined;

describe('createClusterPolicies(): the steps of a fromCluster entry from the cluster’s objects', function () {
  it('runs the cluster’s policies, and leaves out one that does not compile, saying so once', async function () {
    const problems: string[] = [];
    const policies = createClusterPolicies(ENTRY, NO_FILES, (p) => problems.push(p));
    const objects = [
      policy('names', "object.metadata.name != 'x'"),
      binding('names', 'names'),
      policy('broken', 'object.metadata.name ==='),
      binding('broken', 'broken'),
    ];
    const built = policies.build(objects, noParams);
    policies.build(objects, noParams);
    assert.deepEqual(
      built.steps.map((s) => s.name),
      ['native/names/names'],
    );
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(
      problems[0]!,
      /^ValidatingAdmissionPolicy "broken" in the cluster: spec\.validations\[0\]\.expression: .* \(left out\)$/,
    );
    assert.equal(
      await answer(built.steps, 'x'),
      "ValidatingAdmissionPolicy 'names' with binding 'names' denied request: failed expression: object.metadata.name != 'x'",
    );
    assert.equal(await answer(built.steps, 'y'), 'allowed');
    assert.deepEqual(built.steps[0]!.describe().origin, {
      policy: { source: 'cluster', resourceVersion: '1' },
      binding: { source: 'cluster', resourceVersion: '1' },
    });
  });

  it('follows a new resourceVersion of a policy, and drops a deleted one', async function () {
    const policies = createClusterPolicies(ENTRY, NO_FILES, () => undefined);
    const first = policies.build([policy('names', "object.metadata.name != 'x'"), binding('b', 'names')], noParams);
    const changed = policies.build(
      [policy('names', "object.metadata.name != 'y'", '2'), binding('b', 'names')],
      noParams,
    );
    const deleted = policies.build([binding('b', 'names')], noParams);
    const refused = (expression: string) =>
      `ValidatingAdmissionPolicy 'names' with binding 'b' denied request: failed expression: ${expression}`;
    assert.deepEqual(
      [await answer(first.steps, 'x'), await answer(changed.steps, 'x'), await answer(changed.steps, 'y')],
      [refused("object.metadata.name != 'x'"), 'allowed', refused("object.metadata.name != 'y'")],
    );
    assert.deepEqual(changed.steps[0]!.describe().origin, {
      policy: { source: 'cluster', resourceVersion: '2' },
      binding: { source: 'cluster', resourceVersion: '1' },
    });
    assert.deepEqual(deleted.steps, []);
  });

  it('settles a name both the files and the cluster define as the file’s', async function () {
    const files = readPolicySet([
      {
        file: '/etc/gateway/policies.yaml',
        value: policy('names', "object.metadata.name != 'from-file'"),
        locate: () => undefined,
      },
    ]);
    const policies = createClusterPolicies(ENTRY, files, () => undefined);
    const { steps } = policies.build(
      [policy('names', "object.metadata.name != 'from-cluster'", '7'), binding('b', 'names', undefined, '8')],
      noParams,
    );
    assert.deepEqual(
      [await answer(steps, 'from-file'), await answer(steps, 'from-cluster')],
      [
        "ValidatingAdmissionPolicy 'names' with binding 'b' denied request: failed expression: object.metadata.name != 'from-file'",
        'allowed',
      ],
    );
    assert.deepEqual(steps[0]!.describe().origin, {
      policy: { source: 'file', file: '/etc/gateway/policies.yaml' },
      binding: { source: 'cluster', resourceVersion: '8' },
    });
  });

  it('asks for the params a paramRef selects, and reads them as a list gives them', async function () {
    const policies = createClusterPolicies(ENTRY, NO_FILES, () => undefined);
    const objects = [
      policy('limits', 'object.metadata.name != params.data.forbidden', '1', { apiVersion: 'v1', kind: 'ConfigMap' }),
      binding('by-name', 'limits', { name: 'limits', namespace: 'team-a', parameterNotFoundAction: 'Deny' }),
    ];
    const asked: ParamQuery[] = [];
    const listed = [{ metadata: { name: 'limits', namespace: 'team-a' }, data: { forbidden: 'web' } }];
    const found = policies.build(objects, (query) => {
      asked.push(query);
      return listed;
    });
    assert.deepEqual(
      asked.map(({ key: _key, ...query }) => query),
      [
        {
          paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
          namespace: 'team-a',
          fieldSelector: 'metadata.name=limits',
        },
      ],
    );
    assert.deepEqual(found.queries, asked);
    assert.equal(
      await answer(found.steps, 'web'),
      "ValidatingAdmissionPolicy 'limits' with binding 'by-name' denied request: failed expression: object.metadata.name != params.data.forbidden",
    );
    assert.equal(await answer(found.steps, 'db'), 'allowed');
    const missing = policies.build(objects, noParams);
    assert.equal(
      await answer(missing.steps, 'db'),
      "ValidatingAdmissionPolicy 'limits' with binding 'by-name' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction",
    );
  });

  it('keeps at most MAX_CLUSTER_POLICY_OBJECTS of the cluster’s objects, and says so', function () {
    const problems: string[] = [];
    const policies = createClusterPolicies(ENTRY, NO_FILES, (p) => problems.push(p));
    const many = Array.from({ length: MAX_CLUSTER_POLICY_OBJECTS + 1 }, (_, i) => binding(`b${i}`, 'none'));
    policies.build(many, noParams);
    assert.deepEqual(problems, [
      `the cluster holds ${MAX_CLUSTER_POLICY_OBJECTS + 1} admission policies and bindings: only the first ${MAX_CLUSTER_POLICY_OBJECTS} run`,
    ]);
  });
});

describe('selectorQuery()', function () {
  it('writes a label selector as the apiserver’s labelSelector parameter reads it', function () {
    assert.equal(
      selectorQuery({
        matchLabels: { app: 'web' },
        matchExpressions: [
          { key: 'tier', operator: 'In', values: ['a', 'b'] },
          { key: 'zone', operator: 'NotIn', values: ['x'] },
          { key: 'owner', operator: 'Exists' },
          { key: 'legacy', operator: 'DoesNotExist' },
        ],
      }),
      'app=web,tier in (a,b),zone notin (x),owner,!legacy',
    );
    assert.equal(selectorQuery({}), '');
  });
});
