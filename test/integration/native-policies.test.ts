import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { deploymentCreate, edited, podCreate } from '../fixtures/reviews/index.js';
import { reviewOf, startHarness, type Harness } from '../helpers/gateway-harness.js';

const POLICIES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/native-policies');
const UID = '5b0c1c2e-41b5-4c59-9d3e-0f8e7f6f2a11';

const CONFIG = `
chain:
  - admissionPolicies: native
    files: [${POLICIES}]
`;

/** Namespace labels as cluster mode's cache would give them. */
const LABELS: Record<string, Record<string, string>> = {
  'team-a': { env: 'prod' },
  'team-b': { env: 'dev' },
};

function pod(labels: Record<string, string>, image = 'nginx:1.27', extra: Record<string, unknown> = {}): object {
  return edited(podCreate(), {
    'request.uid': UID,
    'request.object.metadata.labels': labels,
    'request.object.spec.containers': [{ name: 'web', image }],
    ...extra,
  });
}

function deployment(replicas: number, namespace = 'team-a'): object {
  return edited(deploymentCreate(), {
    'request.uid': UID,
    'request.namespace': namespace,
    'request.object.metadata.namespace': namespace,
    'request.object.spec.replicas': replicas,
  });
}

describe('native admission policies (ValidatingAdmissionPolicy files) through the real gateway', function () {
  let harness: Harness;

  before(async function () {
    harness = await startHarness({
      yaml: CONFIG,
      namespaceLabels: { labels: (namespace) => LABELS[namespace] },
    });
  });

  after(async function () {
    await harness.close();
  });

  it('refuses in the apiserver’s words, with the reason’s code and the policy’s audit annotation', async function () {
    const answer = reviewOf(await harness.post('/validate', deployment(7)));
    assert.deepEqual(answer.response, {
      uid: UID,
      allowed: false,
      status: {
        code: 403,
        message:
          "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-prod' denied request: replicas 7 is over the limit of 5",
        reason: 'Forbidden',
      },
      auditAnnotations: { 'max-replicas.replicas': '7' },
    });
  });

  it('allows what the params allow, and leaves out a namespace the binding’s namespaceSelector does not select', async function () {
    for (const review of [deployment(5), deployment(9, 'team-b')]) {
      const answer = reviewOf(await harness.post('/validate', review));
      assert.equal(answer.response?.allowed, true, JSON.stringify(answer.response));
    }
  });

  it('reports every binding that refuses, in policy then binding name order, the first one’s code', async function () {
    const review = pod({}, 'nginx:latest', { 'request.object.spec.priorityClassName': 'system-node-critical' });
    const answer = reviewOf(await harness.post('/validate', review));
    assert.deepEqual(answer.response?.status, {
      code: 422,
      message:
        "ValidatingAdmissionPolicy 'pod-priority' with binding 'pod-priority' denied request: failed expression: object.spec.priorityClassName != 'system-node-critical'; " +
        "ValidatingAdmissionPolicy 'pod-rules' with binding 'pod-rules-deny' denied request: no image may use the latest tag",
      reason: 'Invalid',
    });
  });

  it('warns and audits every failed validation for a Warn and Audit binding, and lets the request through', async function () {
    const answer = reviewOf(await harness.post('/validate', pod({ tier: 'canary' }, 'nginx:latest')));
    assert.equal(answer.response?.allowed, true);
    assert.deepEqual(answer.response?.warnings, [
      "Validation failed for ValidatingAdmissionPolicy 'pod-rules' with binding 'pod-rules-warn': no image may use the latest tag",
      "Validation failed for ValidatingAdmissionPolicy 'pod-rules' with binding 'pod-rules-warn': failed expression: 'team' in object.metadata.?labels.orValue({})",
    ]);
    assert.deepEqual(answer.response?.auditAnnotations, {
      'validation.policy.admission.k8s.io.validation_failure': JSON.stringify([
        {
          message: 'no image may use the latest tag',
          policy: 'pod-rules',
          binding: 'pod-rules-warn',
          expressionIndex: 0,
          validationActions: ['Warn', 'Audit'],
        },
      ]),
    });
  });

  it('skips a policy whose matchConditions are false, and lets an error pass under failurePolicy Ignore', async function () {
    // pod-priority reads a field the Pod has not: an error, which its failurePolicy Ignore lets pass.
    const answer = reviewOf(await harness.post('/validate', pod({ exempt: 'true' }, 'nginx:latest')));
    assert.equal(answer.response?.allowed, true, JSON.stringify(answer.response));
    assert.equal(answer.response?.warnings, undefined);
  });
});
