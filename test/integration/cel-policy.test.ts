import assert from 'node:assert/strict';
import { MEMORY_LIMITS_CHAIN } from '../fixtures/memory-limits-policy.js';
import { edited, podCreate } from '../fixtures/reviews/index.js';
import { reviewOf, startHarness, type Harness } from '../helpers/gateway-harness.js';

const UID = '0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21';

/** The README's example, as an operator would write it. */
const MEMORY_LIMITS = `chain:${MEMORY_LIMITS_CHAIN}`;

/** A quadratic walk, which the cost budget cuts off on a large Pod. */
const QUADRATIC = (failurePolicy: string) => `
chain:
  - policy: unique-names
    failurePolicy: ${failurePolicy}
    match: { rules: [ { operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] } ] }
    validations:
      - expression: "object.spec.containers.all(c, !object.spec.containers.exists(d, d.name == c.name + '-x'))"
`;

function podWithContainers(containers: readonly object[], namespace = 'team-a'): object {
  const review = podCreate();
  return edited(review, {
    'request.uid': UID,
    'request.namespace': namespace,
    'request.object.spec.containers': containers,
  });
}

describe('a policy step written in CEL, through the real gateway', function () {
  let harness: Harness | undefined;

  afterEach(async function () {
    await harness?.close();
    harness = undefined;
  });

  it('refuses a Pod whose containers lack memory limits with the messageExpression, as Invalid (422)', async function () {
    harness = await startHarness({ yaml: MEMORY_LIMITS });
    const review = podWithContainers([
      { name: 'web', image: 'nginx', resources: { limits: { memory: '256Mi' } } },
      { name: 'sidecar', image: 'envoy' },
      { name: 'log', image: 'fluentbit', resources: { requests: { cpu: '10m' } } },
    ]);

    const answer = reviewOf(await harness.post('/validate', review));

    assert.deepEqual(answer.response, {
      uid: UID,
      allowed: false,
      status: {
        code: 422,
        message: 'memory-limits: every container needs a memory limit: sidecar, log',
        reason: 'Invalid',
      },
      auditAnnotations: { 'memory-limits.containers': '3' },
    });
    assert.equal(
      await harness.metric('admission_gateway_step_calls_total', {
        step: 'memory-limits',
        phase: 'validate',
        outcome: 'denied',
      }),
      1,
    );
  });

  it('allows a Pod whose every container has a memory limit', async function () {
    harness = await startHarness({ yaml: MEMORY_LIMITS });
    const review = podWithContainers([
      { name: 'web', image: 'nginx', resources: { limits: { memory: '256Mi' } } },
      { name: 'sidecar', image: 'envoy', resources: { limits: { memory: '64Mi' } } },
    ]);

    const answer = reviewOf(await harness.post('/validate', review));

    assert.deepEqual(answer.response, {
      uid: UID,
      allowed: true,
      auditAnnotations: { 'memory-limits.containers': '2' },
    });
  });

  it('lets through what its matchConditions exclude, without evaluating its validations', async function () {
    harness = await startHarness({ yaml: MEMORY_LIMITS });
    const review = podWithContainers([{ name: 'sidecar', image: 'envoy' }], 'kube-system');

    const answer = reviewOf(await harness.post('/validate', review));

    assert.deepEqual(answer.response, { uid: UID, allowed: true });
  });

  it('lists the policy in /chain', async function () {
    harness = await startHarness({ yaml: MEMORY_LIMITS });

    const chain = (await harness.ops('/chain')).body as { validate: Record<string, unknown>[] };

    assert.deepEqual(
      chain.validate.map((s) => [s.name, s.source, s.policy, s.validations]),
      [['memory-limits', 'policy', 'memory-limits', 1]],
    );
  });

  describe('on a 40,000-container Pod, an expression that walks it quadratically', function () {
    const containers = Array.from({ length: 40_000 }, (_, i) => ({ name: `c${i}`, image: 'nginx' }));

    it('fails the step with cost_exceeded, refusing the Pod under failurePolicy Fail', async function () {
      harness = await startHarness({ yaml: QUADRATIC('Fail') });

      const answer = reviewOf(await harness.post('/validate', podWithContainers(containers)));

      assert.equal(answer.response.allowed, false);
      assert.equal(answer.response.status?.code, 500);
      assert.match(
        answer.response.status?.message ?? '',
        /^policy "unique-names" failed \(cost_exceeded\): validations\[0\]: the expression exceeded its cost limit of 1000000/,
      );
      assert.equal(
        await harness.metric('admission_gateway_step_calls_total', {
          step: 'unique-names',
          phase: 'validate',
          outcome: 'error',
        }),
        1,
      );
    });

    it('fails open with cost_exceeded under failurePolicy Ignore, saying so', async function () {
      harness = await startHarness({ yaml: QUADRATIC('Ignore') });

      const answer = reviewOf(await harness.post('/validate', podWithContainers(containers)));

      assert.equal(answer.response.allowed, true);
      assert.match(
        answer.response.auditAnnotations?.['unique-names.failed-open'] ?? '',
        /^cost_exceeded: validations\[0\]: the expression exceeded its cost limit/,
      );
      assert.equal(await harness.metric('admission_gateway_fail_open_total', { step: 'unique-names' }), 1);
    });
  });
});
