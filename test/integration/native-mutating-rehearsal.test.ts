/**
 * A MutatingAdmissionPolicy's binding in the chain, through the real gateway: reinvoked as its
 * reinvocationPolicy says when a later step changed the object, explained in the decision trace (its patch, the
 * mutation that failed and how), and rehearsed under `shadow: true`: run after the answer, as if bound, its patch
 * compared with the answer's and never applied.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AdmissionReview } from '../../server/admission/types.js';
import { edited, numberedPodCreate } from '../fixtures/reviews/index.js';
import { reviewOf, startHarness, type Harness } from '../helpers/gateway-harness.js';
import { decodePatch, patchedObject } from '../helpers/patch.js';
import { eventually } from '../helpers/wait.js';

/** Counts the Pod's labels into an annotation; its first mutation fails for a Pod without a memory limit. */
const POLICY = (reinvocationPolicy: string) => `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: { name: label-count }
spec:
  failurePolicy: Ignore
  reinvocationPolicy: ${reinvocationPolicy}
  matchConstraints:
    resourceRules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] }]
  variables:
    - name: labels
      expression: object.metadata.?labels.orValue({})
  mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'memory': object.spec.containers[0].resources.limits.memory}}]"
    - patchType: ApplyConfiguration
      applyConfiguration:
        expression: "Object{metadata: Object.metadata{annotations: {'labels': string(size(variables.labels))}}}"
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: { name: label-count }
spec: { policyName: label-count }
`;

function pod(n: number, labels: Record<string, string>, resources: object = {}): AdmissionReview {
  return edited(numberedPodCreate(n, `web-${n}`, labels), {
    'request.object.metadata.annotations': {},
    'request.object.spec.containers': [{ name: 'c', image: 'nginx:1.27', resources }],
  });
}

describe('a MutatingAdmissionPolicy’s binding in the chain: reinvoked, explained, rehearsed', function () {
  this.timeout(30_000);
  let harness: Harness | undefined;
  let dir: string;

  before(async function () {
    dir = await mkdtemp(join(tmpdir(), 'native-mutating-'));
    await writeFile(join(dir, 'if-needed.yaml'), POLICY('IfNeeded'));
    await writeFile(join(dir, 'never.yaml'), POLICY('Never'));
  });

  after(() => rm(dir, { recursive: true, force: true }));

  afterEach(async function () {
    await harness?.close();
    harness = undefined;
  });

  const chain = (file: string, more = '') =>
    `chain:\n  - admissionPolicies: native\n    files: [${join(dir, file)}]\n${more}` +
    `  - plugin: default-labels\n    settings: { labels: { team: payments } }\n`;

  it('runs again after a later step changed the object with reinvocationPolicy IfNeeded, not with Never', async function () {
    const counts: Record<string, unknown> = {};
    for (const file of ['if-needed.yaml', 'never.yaml']) {
      harness = await startHarness({ yaml: chain(file) });
      const review = pod(1, { app: 'web' }, { limits: { memory: '64Mi' } });
      const { response } = reviewOf(await harness.post('/mutate', review));
      counts[file] = patchedObject(review.request!.object!, response).metadata?.annotations;
      await harness.close();
      harness = undefined;
    }
    assert.deepEqual(counts, {
      'if-needed.yaml': { memory: '64Mi', labels: '2' },
      'never.yaml': { memory: '64Mi', labels: '1' },
    });
  });

  it('explains the binding’s run: its patch, and the mutation that failed under Ignore and how', async function () {
    harness = await startHarness({ yaml: `explain: { keep: all, includeObjects: true }\n${chain('never.yaml')}` });
    const review = pod(2, { app: 'web' });
    const uid = review.request!.uid;
    const { response } = reviewOf(await harness.post('/mutate', review));
    assert.deepEqual(decodePatch(response), [
      { op: 'add', path: '/metadata/annotations/labels', value: '1' },
      { op: 'add', path: '/metadata/labels/team', value: 'payments' },
    ]);
    const trace = (await harness.ops(`/explain/${uid}`)).body as { steps: Array<Record<string, unknown>> };
    const step = trace.steps[0]!;
    const policy = step.policy as { cost?: number; decidedBy?: { cost?: number } } | undefined;
    const [cost, failedCost] = [policy?.cost ?? 0, policy?.decidedBy?.cost ?? 0];
    assert.ok(failedCost > 0 && cost > failedCost, `${failedCost} of ${cost} cost units`);
    assert.deepEqual(
      [step.step, step.outcome, step.patch, step.policy],
      [
        'native/label-count/label-count',
        'patched',
        [{ op: 'add', path: '/metadata/annotations/labels', value: '1' }],
        {
          decidedBy: {
            field: 'mutations[0] (JSONPatch)',
            index: 0,
            expression:
              "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'memory': object.spec.containers[0].resources.limits.memory}}]",
            result: 'error',
            message: 'No such key: limits (at column 108)',
            reason: 'no_such_key',
            cost: failedCost,
          },
          cost,
        },
      ],
    );
  });

  it('rehearses the binding under shadow: true: its patch never applied, counted where the answer lacks it', async function () {
    harness = await startHarness({ yaml: `explain: { keep: all }\n${chain('never.yaml', '    shadow: true\n')}` });
    const review = pod(3, { app: 'web' }, { limits: { memory: '64Mi' } });
    const { response } = reviewOf(await harness.post('/mutate', review));
    assert.deepEqual(decodePatch(response), [{ op: 'add', path: '/metadata/labels/team', value: 'payments' }]);
    const h = harness;
    const step = 'native/label-count/label-count';
    await eventually(
      'the shadow step has run',
      async () => (await h.metric('admission_gateway_shadow_calls_total', { step, outcome: 'patched' })) === 1,
    );
    assert.equal(await h.metric('admission_gateway_shadow_disagreements_total', { step, kind: 'patch_differs' }), 1);
    const chainNow = (await h.ops('/chain')).body as { mutate: Array<Record<string, unknown>> };
    assert.deepEqual(
      chainNow.mutate.filter((s) => s.source === 'admissionPolicies').map((s) => [s.name, s.shadow, s.mutations]),
      [[step, true, ['JSONPatch', 'ApplyConfiguration']]],
    );
  });
});
