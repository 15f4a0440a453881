import assert from 'node:assert/strict';
import { MEMORY_LIMITS_CHAIN } from '../fixtures/memory-limits-policy.js';
import { edited, podCreate } from '../fixtures/reviews/index.js';
import { reviewOf, startHarness, type Harness } from '../helpers/gateway-harness.js';

const UID = '0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21';

/** The README's example, as an operator would write it. */
const MEMORY_LIMITS = `chain:${MEMORY_LIMITS_CHAIN}`;

/**
 * A quadratic walk, which the cost budget cuts off on a large Pod: every container's name looked for among the
 * first container's args. `in` walks the whole list natively, so the units run out in milliseconds, far from the
 * time they allow: the cut is the units', on any machine.
 */
const QUADRATIC_EXPRESSION = "object.spec.containers.all(c, !(c.name + '-x' in object.spec.containers[0].args))";
const QUADRATIC = (failurePolicy: string) => `
chain:
  - policy: unique-names
    failurePolicy: ${failurePolicy}
    match: { rules: [ { operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] } ] }
    validations:
      - expression: "${QUADRATIC_EXPRESSION}"
`;

/** 40,000 containers, the first with 40,000 args. */
function quadraticContainers(): object[] {
  const containers: Array<{ name: string; image: string; args?: string[] }> = Array.from(
    { length: 40_000 },
    (_, i) => ({ name: `c${i}`, image: 'nginx' }),
  );
  containers[0]!.args = containers.map((c) => c.name);
  return containers;
}

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

  it('runs as a shadow step beside the live chain: counted, would_deny, in the trace and /chain, never in the answer', async function () {
    harness = await startHarness({
      yaml: `explain: { keep: all }\nchain:${MEMORY_LIMITS_CHAIN.replace('- policy: memory-limits\n', '- policy: memory-limits\n  shadow: true\n')}`,
    });
    const review = podWithContainers([{ name: 'sidecar', image: 'envoy' }]);

    const answer = reviewOf(await harness.post('/validate', review));

    assert.deepEqual(answer.response, { uid: UID, allowed: true });
    // The shadow call settles after the answer.
    for (
      let i = 0;
      i < 50 &&
      !(await harness.metric('admission_gateway_shadow_calls_total', { step: 'memory-limits', outcome: 'denied' }));
      i++
    )
      await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(
      await harness.metric('admission_gateway_shadow_disagreements_total', {
        step: 'memory-limits',
        kind: 'would_deny',
      }),
      1,
    );
    const trace = (await harness.ops(`/explain/${UID}`)).body as { steps: unknown[]; shadow: unknown };
    assert.deepEqual(
      [trace.steps, trace.shadow],
      [
        [],
        [
          {
            step: 'memory-limits',
            outcome: 'denied',
            ms: (trace.shadow as Array<{ ms: number }>)[0]!.ms,
            disagreement: 'would_deny',
            message: 'memory-limits: every container needs a memory limit: sidecar',
          },
        ],
      ],
    );
    const chain = (await harness.ops('/chain')).body as { validate: Record<string, unknown>[] };
    assert.deepEqual(
      chain.validate.map((s) => [s.name, s.source, s.shadow]),
      [['memory-limits', 'policy', true]],
    );
  });

  describe('on a 40,000-container Pod, an expression that walks it quadratically', function () {
    const containers = quadraticContainers();

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

  describe('explained (GET /explain/<uid>, review --explain)', function () {
    const threeContainers = [
      { name: 'web', image: 'nginx', resources: { limits: { memory: '256Mi' } } },
      { name: 'sidecar', image: 'envoy' },
      { name: 'log', image: 'fluentbit', resources: { requests: { cpu: '10m' } } },
    ];
    const explained = async (h: Harness) =>
      ((await h.ops(`/explain/${UID}`)).body as { steps: Array<{ policy?: unknown }> }).steps[0]?.policy;

    it('says which validation refused, with its text, message and reason, the values it read, and the annotations', async function () {
      harness = await startHarness({
        yaml: `explain: { includeObjects: true, keep: all }\nchain:${MEMORY_LIMITS_CHAIN}`,
      });
      await harness.post('/validate', podWithContainers(threeContainers));

      assert.deepEqual(await explained(harness), {
        decidedBy: {
          field: 'validations[0]',
          index: 0,
          expression: 'variables.containers.all(c, c.?resources.?limits.?memory.hasValue())',
          result: 'false',
          message: 'every container needs a memory limit: sidecar, log',
          reason: 'Invalid',
        },
        variables: [
          {
            name: 'containers',
            value:
              '[{"name": "web", "image": "nginx", "resources": {"limits": {"memory": "256Mi"}}}, ' +
              '{"name": "sidecar", "image": "envoy"}, {"name": "log", "image": "fluentbit", "resources": {"requests": {"cpu": "10m"}}}]',
          },
        ],
        auditAnnotations: { containers: '3' },
        cost: 79,
      });
      const text = (await harness.ops(`/explain/${UID}?format=text`)).text;
      assert.ok(
        text.includes(
          '\n       decided by: validations[0] is false (reason Invalid): ' +
            'variables.containers.all(c, c.?resources.?limits.?memory.hasValue())\n' +
            '       variable containers = [{"name": "web", "image": "nginx", "resources": {"limits": {"memory": "256Mi"}}}, ' +
            '{"name": "sidecar", "image": "envoy"}, {"name": "log", "image": "fluentbit", "resources": {"requests": {"cpu": "10m"}}}]\n' +
            '       audit annotation: containers = "3"\n       cost: 79 units',
        ),
        text,
      );
    });

    it('leaves the values out unless explain.includeObjects, as it does patch values', async function () {
      harness = await startHarness({ yaml: `explain: { keep: all }\nchain:${MEMORY_LIMITS_CHAIN}` });
      await harness.post('/validate', podWithContainers(threeContainers));

      const policy = (await explained(harness)) as Record<string, unknown>;
      assert.deepEqual(
        [policy.variables, policy.valuesOmitted],
        [[{ name: 'containers' }], 'explain.includeObjects is off'],
      );
      const text = (await harness.ops(`/explain/${UID}?format=text`)).text;
      assert.ok(text.includes('\n       variable containers (value left out: explain.includeObjects is off)\n'), text);
    });

    it('names a false matchCondition as what skipped the policy step', async function () {
      harness = await startHarness({ yaml: `explain: { keep: all }\nchain:${MEMORY_LIMITS_CHAIN}` });
      await harness.post('/validate', podWithContainers(threeContainers, 'kube-system'));

      const trace = (await harness.ops(`/explain/${UID}`)).body as { steps: unknown[] };
      assert.deepEqual(trace.steps[0], {
        step: 'memory-limits',
        phase: 'validate',
        source: 'policy',
        mode: 'enforce',
        failurePolicy: 'Fail',
        outcome: 'skipped',
        ms: 0,
        reason: 'matchConditions[0] "not-kube-system" is false',
      });
    });

    it('shows a hostile value bounded: the first containers of 40,000, a 100,000-character name clipped', async function () {
      harness = await startHarness({
        yaml: `explain: { includeObjects: true, keep: all }
chain:
  - policy: few-containers
    match: { rules: [ { operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] } ] }
    variables: [{ name: all, expression: object.spec.containers }]
    validations: [{ expression: variables.all.size() < 10, message: too many containers }]
`,
      });
      const containers = Array.from({ length: 40_000 }, (_, i) => ({ name: `c${i}`, image: 'nginx' }));
      containers[0]!.name = 'x'.repeat(100_000);
      await harness.post('/validate', podWithContainers(containers));

      const policy = (await explained(harness)) as { variables: Array<{ name: string; value: string }> };
      const { value } = policy.variables[0]!;
      assert.ok(value.length < 400, `${value.length} characters`);
      assert.match(value, /^\[\{"name": "x{200,}"…, …\}, … 39999 more\]$/);
    });

    it('names the expression that ran out of cost budget, and what it spent', async function () {
      harness = await startHarness({ yaml: `explain: { keep: all }\n${QUADRATIC('Fail')}` });
      await harness.post('/validate', podWithContainers(quadraticContainers()));

      assert.deepEqual(await explained(harness), {
        decidedBy: {
          field: 'validations[0]',
          index: 0,
          expression: QUADRATIC_EXPRESSION,
          result: 'cost_exceeded',
          message: 'the expression exceeded its cost limit of 1000000',
          reason: 'cost_exceeded',
          cost: 1_000_000,
        },
        cost: 1_000_000,
      });
      const text = (await harness.ops(`/explain/${UID}?format=text`)).text;
      assert.ok(
        text.includes(
          '       decided by: validations[0] failed (cost_exceeded, 1000000 cost units): object.spec.containers.all(',
        ),
        text,
      );
    });
  });
});
