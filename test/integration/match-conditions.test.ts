/**
 * `matchConditions` on every chain entry (README "Match conditions"), through the real gateway: a step whose
 * conditions are not all true is skipped (reported, counted and traced as skipped, like a `match` miss), one whose
 * condition cannot be evaluated fails under its failurePolicy, and a mutate step's conditions read the object as
 * the earlier steps left it.
 */
import assert from 'node:assert/strict';
import type { AdmissionReview, JsonPatchOperation } from '../../server/admission/types.js';
import { edited, podCreate } from '../fixtures/reviews/index.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { reviewOf, startHarness, type Harness } from '../helpers/gateway-harness.js';

const UID = '0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21';
const PODS = `{ rules: [ { operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] } ] }`;

/** The fixture's Pod CREATE in `namespace` with `labels`. */
function pod(labels: Record<string, string>, namespace = 'team-a'): AdmissionReview {
  return edited(podCreate(), {
    'request.uid': UID,
    'request.namespace': namespace,
    'request.object.metadata.labels': labels,
  });
}

function patchOf(review: { response: { patch?: string } }): JsonPatchOperation[] {
  return JSON.parse(Buffer.from(review.response.patch ?? 'W10=', 'base64').toString('utf8')) as JsonPatchOperation[];
}

describe('matchConditions on chain entries, through the real gateway', function () {
  this.timeout(20_000);
  let harness: Harness | undefined;
  let fake: FakeProvider | undefined;

  afterEach(async function () {
    await harness?.close();
    await fake?.close();
    harness = undefined;
    fake = undefined;
  });

  const skipCount = (h: Harness, step: string, phase: string, outcome = 'skipped') =>
    h.metric('admission_gateway_step_calls_total', { step, phase, outcome });

  describe('on a plugin entry', function () {
    const YAML = `
explain: { keep: all }
chain:
  - plugin: require-labels
    settings: { labels: [owner] }
    match: ${PODS}
    matchConditions:
      - name: prod-only
        expression: object.metadata.?labels.?tier.orValue('') == 'prod'
      - name: not-kube-system
        expression: request.namespace != 'kube-system'
`;

    it('skips the step when a condition is false: allowed, counted and traced as skipped, with the condition named', async function () {
      harness = await startHarness({ yaml: YAML });

      const answer = reviewOf(await harness.post('/validate', pod({ app: 'web', tier: 'dev' })));

      assert.deepEqual(answer.response, { uid: UID, allowed: true });
      assert.equal(await skipCount(harness, 'require-labels', 'validate'), 1);
      assert.equal(await skipCount(harness, 'require-labels', 'validate', 'denied'), 0);
      const trace = (await harness.ops(`/explain/${UID}`)).body as { steps: Record<string, unknown>[] };
      assert.deepEqual(
        trace.steps.map((s) => [s.step, s.outcome, s.reason]),
        [['require-labels', 'skipped', 'matchConditions[0] "prod-only" is false']],
      );
    });

    it('runs the step when every condition is true', async function () {
      harness = await startHarness({ yaml: YAML });

      const answer = reviewOf(await harness.post('/validate', pod({ app: 'web', tier: 'prod' })));

      assert.equal(answer.response.allowed, false);
      assert.equal(answer.response.status?.message, 'require-labels: missing required label: owner');
      assert.equal(await skipCount(harness, 'require-labels', 'validate', 'denied'), 1);
    });

    it('lists the conditions in /chain', async function () {
      harness = await startHarness({ yaml: YAML });

      const chain = (await harness.ops('/chain')).body as { validate: Record<string, unknown>[] };

      assert.deepEqual(chain.validate[0]!.matchConditions, [
        { name: 'prod-only', expression: "object.metadata.?labels.?tier.orValue('') == 'prod'" },
        { name: 'not-kube-system', expression: "request.namespace != 'kube-system'" },
      ]);
    });
  });

  describe('a condition that cannot be evaluated', function () {
    const yaml = (failurePolicy: string) => `
chain:
  - plugin: require-labels
    failurePolicy: ${failurePolicy}
    settings: { labels: [owner] }
    match: ${PODS}
    matchConditions:
      - name: tier
        expression: object.metadata.labels.tier == 'prod'
`;

    it('refuses the request under failurePolicy Fail, naming the condition', async function () {
      harness = await startHarness({ yaml: yaml('Fail') });

      const answer = reviewOf(await harness.post('/validate', pod({ owner: 'me' })));

      assert.equal(answer.response.allowed, false);
      assert.equal(answer.response.status?.code, 500);
      assert.match(
        answer.response.status?.message ?? '',
        /^plugin "require-labels" failed \(error\): matchConditions\[0\] \(tier\): .*no such key.*tier/i,
      );
      assert.equal(await skipCount(harness, 'require-labels', 'validate', 'error'), 1);
    });

    it('fails open under failurePolicy Ignore: allowed, with the failure warned and annotated', async function () {
      harness = await startHarness({ yaml: yaml('Ignore') });

      const answer = reviewOf(await harness.post('/validate', pod({ app: 'web' })));

      assert.equal(answer.response.allowed, true);
      assert.equal(answer.response.warnings?.length, 1);
      assert.match(
        answer.response.warnings[0]!,
        /^require-labels: failed open \(error\): matchConditions\[0\] \(tier\)/,
      );
      assert.match(answer.response.auditAnnotations?.['require-labels.failed-open'] ?? '', /^error: matchConditions/);
      assert.equal(await harness.metric('admission_gateway_fail_open_total', { step: 'require-labels' }), 1);
    });

    it('is no failure when another condition is false: the step is skipped, as the apiserver does', async function () {
      harness = await startHarness({
        yaml: `${yaml('Fail')}      - name: never\n        expression: 'false'\n`,
      });

      const answer = reviewOf(await harness.post('/validate', pod({ owner: 'me' })));

      assert.deepEqual(answer.response, { uid: UID, allowed: true });
      assert.equal(await skipCount(harness, 'require-labels', 'validate'), 1);
    });
  });

  it('cuts off a condition that walks a 40,000-container Pod quadratically: cost_exceeded, under failurePolicy', async function () {
    harness = await startHarness({
      yaml: `
chain:
  - plugin: require-labels
    settings: { labels: [owner] }
    match: ${PODS}
    matchConditions:
      - name: quadratic
        expression: "object.spec.containers.all(c, !(c.name + '-x' in object.spec.containers[0].args))"
`,
    });
    // `in` walks the first container's 40,000 args natively: the units run out in milliseconds, far from their time.
    const containers: Array<{ name: string; image: string; args?: string[] }> = Array.from(
      { length: 40_000 },
      (_, i) => ({ name: `c${i}`, image: 'nginx' }),
    );
    containers[0]!.args = containers.map((c) => c.name);
    const review = edited(pod({ owner: 'me' }), { 'request.object.spec.containers': containers });

    const answer = reviewOf(await harness.post('/validate', review));

    assert.equal(answer.response.allowed, false);
    assert.match(
      answer.response.status?.message ?? '',
      /^plugin "require-labels" failed \(cost_exceeded\): matchConditions\[0\] \(quadratic\): the expression exceeded its cost limit/,
    );
  });

  it('reads, in the mutate phase, the object as the earlier steps left it', async function () {
    harness = await startHarness({
      yaml: `
chain:
  - plugin: default-labels
    name: tier
    settings: { labels: { tier: prod } }
    match: ${PODS}
  - plugin: default-labels
    name: prod-extra
    settings: { labels: { extra: 'yes' } }
    match: ${PODS}
    matchConditions:
      - name: prod
        expression: object.metadata.labels.tier == 'prod'
  - plugin: default-labels
    name: dev-extra
    settings: { labels: { dev: 'yes' } }
    match: ${PODS}
    matchConditions:
      - name: dev
        expression: object.metadata.labels.tier == 'dev'
`,
    });

    const answer = reviewOf(await harness.post('/mutate', pod({ app: 'web' })));

    assert.equal(answer.response.allowed, true);
    const labels = patchOf(answer).filter((op) => op.path.startsWith('/metadata/labels/'));
    assert.deepEqual(
      labels.map((op) => op.path),
      ['/metadata/labels/tier', '/metadata/labels/extra'],
    );
    assert.equal(await skipCount(harness, 'dev-extra', 'mutate'), 1);
  });

  it('skips a provider step without calling the provider', async function () {
    fake = await startFakeProvider();
    harness = await startHarness({
      yaml: `
chain:
  - provider: checker
    url: ${fake.url('/deny')}
    caBundle: ${fake.caBundle}
    phases: [validate]
    match: ${PODS}
    matchConditions:
      - name: labelled
        expression: "'checked' in object.metadata.labels"
`,
    });

    const skipped = reviewOf(await harness.post('/validate', pod({ app: 'web' })));
    const called = reviewOf(await harness.post('/validate', pod({ app: 'web', checked: 'yes' })));

    assert.deepEqual(skipped.response, { uid: UID, allowed: true });
    assert.equal(called.response.allowed, false);
    assert.equal(fake.reviews().length, 1);
    assert.equal(await skipCount(harness, 'checker', 'validate'), 1);
  });

  describe('on a policy entry', function () {
    const POLICY = `
explain: { keep: all }
chain:
  - policy: no-privileged
    match: ${PODS}
    matchConditions:
      - name: not-kube-system
        expression: request.namespace != 'kube-system'
    validations:
      - expression: "!object.spec.containers.exists(c, c.?securityContext.?privileged.orValue(false))"
`;

    it('skips the step when a condition is false (counted and traced as skipped, not as allowed)', async function () {
      harness = await startHarness({ yaml: POLICY });

      const answer = reviewOf(await harness.post('/validate', pod({ app: 'web' }, 'kube-system')));

      assert.deepEqual(answer.response, { uid: UID, allowed: true });
      assert.equal(await skipCount(harness, 'no-privileged', 'validate'), 1);
      assert.equal(await skipCount(harness, 'no-privileged', 'validate', 'allowed'), 0);
      const trace = (await harness.ops(`/explain/${UID}`)).body as { steps: Record<string, unknown>[] };
      assert.deepEqual(
        trace.steps.map((s) => [s.step, s.outcome, s.reason]),
        [['no-privileged', 'skipped', 'matchConditions[0] "not-kube-system" is false']],
      );
    });
  });
});
