import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeObject } from '../../server/admission/types.js';
import { edited, podCreate } from '../fixtures/reviews/index.js';
import { reviewOf, startHarness, type Harness } from '../helpers/gateway-harness.js';
import { decodePatch, patchedObject } from '../helpers/patch.js';

const POLICIES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/native-mutating-policies');
const UID = '7c2f6d0e-2b1a-4e8f-9a34-5d6e7f8091a2';

const CONFIG = `
chain:
  - admissionPolicies: native
    files: [${POLICIES}]
`;

interface PodReview {
  readonly request: { readonly object: KubeObject };
}

/** A Pod create in `namespace` with `labels` and one container `web` (with a memory limit unless `limit` is null). */
function pod(
  labels: Record<string, string> | undefined,
  namespace = 'team-a',
  limit: string | null = '64Mi',
): PodReview {
  return edited(podCreate(), {
    'request.uid': UID,
    'request.namespace': namespace,
    'request.object.metadata': { name: 'web', namespace, ...(labels ? { labels } : {}) },
    'request.object.spec': {
      containers: [{ name: 'web', image: 'nginx:1.27', resources: limit ? { limits: { memory: limit } } : {} }],
    },
  }) as unknown as PodReview;
}

describe('native admission policies (MutatingAdmissionPolicy files) through the real gateway', function () {
  let harness: Harness;

  before(async function () {
    harness = await startHarness({ yaml: CONFIG });
  });

  after(async function () {
    await harness.close();
  });

  it('patches with a JSONPatch mutation, its value from the binding’s params', async function () {
    const review = pod({ app: 'web' });
    const { response } = reviewOf(await harness.post('/mutate', review));
    assert.equal(response?.allowed, true, JSON.stringify(response));
    assert.deepEqual(decodePatch(response), [
      { op: 'add', path: '/metadata/labels/example.com~1team', value: 'payments' },
    ]);
    assert.deepEqual(patchedObject(review.request.object, response).metadata, {
      name: 'web',
      namespace: 'team-a',
      labels: { app: 'web', 'example.com/team': 'payments' },
    });
  });

  it('adds the labels map when the object has none, and changes nothing where no params are found (Allow)', async function () {
    const unlabelled = pod(undefined);
    const { response } = reviewOf(await harness.post('/mutate', unlabelled));
    assert.deepEqual(decodePatch(response), [
      { op: 'add', path: '/metadata/labels', value: { 'example.com/team': 'payments' } },
    ]);
    const elsewhere = reviewOf(await harness.post('/mutate', pod({ app: 'web' }, 'team-b')));
    assert.deepEqual(elsewhere.response, { uid: UID, allowed: true });
  });

  it('merges an ApplyConfiguration mutation into the object, list items by their key', async function () {
    const review = pod({ pull: 'always', exempt: 'true' });
    const { response } = reviewOf(await harness.post('/mutate', review));
    assert.deepEqual(decodePatch(response), [
      { op: 'add', path: '/spec/containers/0/imagePullPolicy', value: 'Always' },
    ]);
    assert.deepEqual(patchedObject(review.request.object, response).spec, {
      containers: [
        { name: 'web', image: 'nginx:1.27', resources: { limits: { memory: '64Mi' } }, imagePullPolicy: 'Always' },
      ],
    });
  });

  it('skips a policy whose matchConditions are false', async function () {
    const answer = reviewOf(await harness.post('/mutate', pod({ exempt: 'true' })));
    assert.deepEqual(answer.response, { uid: UID, allowed: true });
  });

  it('refuses in the apiserver’s words when a mutation fails under failurePolicy Fail', async function () {
    const answer = reviewOf(await harness.post('/mutate', pod({ exempt: 'true', note: 'fail' }, 'team-a', null)));
    assert.deepEqual(answer.response, {
      uid: UID,
      allowed: false,
      status: {
        code: 403,
        message:
          "policy 'memory-note-fail' with binding 'memory-note-fail' denied request: expression 'Object{metadata: Object.metadata{annotations: {\"example.com/memory\": object.spec.containers[0].resources.limits.memory}}}' resulted in error: no such key: limits",
        reason: 'Forbidden',
      },
    });
  });

  it('keeps the other mutations’ changes and says nothing when a mutation fails under failurePolicy Ignore', async function () {
    const review = pod({ exempt: 'true', note: 'ignore' }, 'team-a', null);
    const { response } = reviewOf(await harness.post('/mutate', review));
    assert.equal(response?.warnings, undefined);
    assert.deepEqual(decodePatch(response), [
      { op: 'add', path: '/metadata/annotations', value: { 'example.com/noted': 'ignore' } },
    ]);
    assert.deepEqual(patchedObject(review.request.object, response).metadata?.annotations, {
      'example.com/noted': 'ignore',
    });
  });

  it('runs both mutations when none fails', async function () {
    const review = pod({ exempt: 'true', note: 'fail' });
    const { response } = reviewOf(await harness.post('/mutate', review));
    assert.deepEqual(patchedObject(review.request.object, response).metadata?.annotations, {
      'example.com/memory': '64Mi',
      'example.com/noted': 'fail',
    });
  });
});

describe('a MutatingAdmissionPolicy binding with many params: its operations bounded in all', function () {
  let harness: Harness;

  /** Each of three params' runs gives 4000 operations: under the bound of one run, over it together. */
  const FILES = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: { name: many }
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  paramKind: { apiVersion: v1, kind: ConfigMap }
  matchConstraints:
    resourceRules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] }]
  mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: "lists.range(4000).map(i, JSONPatch{op: 'add', path: '/metadata/labels/n', value: params.data.n})"
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: { name: many }
spec:
  policyName: many
  paramRef: { selector: { matchLabels: { many: 'yes' } }, parameterNotFoundAction: Allow }
${['1', '2', '3']
  .map(
    (n) =>
      `---\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: p${n}, namespace: team-a, labels: { many: 'yes' } }\ndata: { n: '${n}' }\n`,
  )
  .join('')}`;

  let dir = '';

  before(async function () {
    dir = await mkdtemp(path.join(os.tmpdir(), 'native-many-'));
    await writeFile(path.join(dir, 'many.yaml'), FILES);
    harness = await startHarness({
      yaml: `chain:\n  - admissionPolicies: many\n    files: [${dir}]\n`,
    });
  });

  after(async function () {
    await harness.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses under failurePolicy Fail once the params’ runs together give more than 10000 operations', async function () {
    const answer = reviewOf(await harness.post('/mutate', pod({ app: 'web' })));
    assert.deepEqual(answer.response, {
      uid: UID,
      allowed: false,
      status: {
        code: 403,
        message:
          "policy 'many' with binding 'many' denied request: more than 10000 JSON Patch operations for all the binding's params",
        reason: 'Forbidden',
      },
    });
  });
});
