/**
 * Circuit breakers of remote providers, through the real gateway (startGateway from gateway.yaml) and a
 * real HTTPS fake provider: only failures count, an open breaker fails fast without calling the
 * provider, half-open after resetTimeout, and one probe decides. State is read from the metrics and /chain.
 */
import assert from 'node:assert/strict';
import type { AdmissionReview } from '../../server/admission/types.js';
import { podCreate, requestOf } from '../fixtures/reviews/index.js';
import { DENY_MESSAGE, startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { startHarness, type Harness } from '../helpers/gateway-harness.js';
import { eventually } from '../helpers/wait.js';

const UID = requestOf(podCreate()).uid;
const STATE = 'admission_gateway_breaker_state';
const TRANSITIONS = 'admission_gateway_breaker_transitions_total';
const CALLS = 'admission_gateway_step_calls_total';
const FAIL_OPEN = 'admission_gateway_fail_open_total';

interface BreakerView {
  readonly state: string;
  readonly fires: number;
  readonly failures: number;
  readonly rejects: number;
  readonly successes: number;
}

interface ChainView {
  readonly order: string;
  readonly validate: ReadonlyArray<{ readonly name: string; readonly breaker?: BreakerView }>;
  readonly providers: ReadonlyArray<{ readonly name: string; readonly breaker: string }>;
}

describe('provider circuit breaker (real gateway, real HTTPS provider)', function () {
  let fake: FakeProvider;
  let gw: Harness | undefined;

  before(async function () {
    fake = await startFakeProvider();
  });

  after(async function () {
    await fake.close();
  });

  beforeEach(function () {
    fake.reset();
  });

  afterEach(async function () {
    await gw?.close();
    gw = undefined;
  });

  async function start(failurePolicy: 'Fail' | 'Ignore'): Promise<Harness> {
    gw = await startHarness({
      yaml: `
chain:
  - provider: flaky
    url: ${fake.url('/flaky')}
    caBundle: ${fake.caBundle}
    phases: [validate]
    failurePolicy: ${failurePolicy}
    timeoutSeconds: 2
    circuitBreaker: { volumeThreshold: 2, errorThresholdPercentage: 50, resetTimeoutSeconds: 0.2 }
`,
    });
    return gw;
  }

  const validate = (g: Harness): Promise<AdmissionReview['response'] & object> =>
    g.review('/validate', podCreate()).then((r) => r.response);

  async function chainView(g: Harness): Promise<ChainView> {
    return (await g.ops('/chain')).body as ChainView;
  }

  async function breakerOf(g: Harness): Promise<{ step: BreakerView | undefined; provider: string }> {
    const view = await chainView(g);
    return { step: view.validate[0]?.breaker, provider: view.providers[0]?.breaker ?? '' };
  }

  const failedWith = (message: string) => ({
    uid: UID,
    allowed: false,
    status: { code: 500, reason: 'InternalError', message },
  });

  it('counts a deny as a decision: the breaker stays closed with no failures', async function () {
    fake.route('/flaky', 'deny');
    const g = await start('Fail');

    const answers = [await validate(g), await validate(g), await validate(g)];

    for (const answer of answers) {
      assert.deepEqual(answer, {
        uid: UID,
        allowed: false,
        status: { code: 403, reason: 'Forbidden', message: `flaky: ${DENY_MESSAGE}` },
      });
    }
    assert.equal(fake.reviews().length, 3);
    assert.deepEqual(await breakerOf(g), {
      step: { state: 'closed', fires: 3, failures: 0, rejects: 0, successes: 3 },
      provider: 'closed',
    });
    assert.equal(await g.metric(STATE, { provider: 'flaky' }), 0);
    assert.equal(await g.metric(TRANSITIONS, { provider: 'flaky', state: 'open' }), 0);
    assert.equal(await g.metric(CALLS, { step: 'flaky', phase: 'validate', outcome: 'denied' }), 3);
  });

  it('opens after volumeThreshold failures, fails fast without calling the provider, half-opens, and a successful probe closes it', async function () {
    fake.route('/flaky', '500');
    const g = await start('Fail');
    const http500 = failedWith(`provider "flaky" failed (http_status): ${fake.url('/flaky')} answered HTTP 500`);

    // One failure is under volumeThreshold: still closed.
    assert.deepEqual(await validate(g), http500);
    assert.equal(await g.metric(STATE, { provider: 'flaky' }), 0);
    assert.equal((await breakerOf(g)).provider, 'closed');

    // The second failure: 2 of 2 calls failed (100% > 50%) → open.
    assert.deepEqual(await validate(g), http500);
    assert.equal(await g.metric(STATE, { provider: 'flaky' }), 2);
    assert.equal(await g.metric(TRANSITIONS, { provider: 'flaky', state: 'open' }), 1);
    assert.deepEqual(await breakerOf(g), {
      step: { state: 'open', fires: 2, failures: 2, rejects: 0, successes: 0 },
      provider: 'open',
    });
    assert.equal(fake.reviews().length, 2);

    // Open: the next review fails fast, and no request reaches the provider.
    fake.reset();
    assert.deepEqual(
      await validate(g),
      failedWith('provider "flaky" failed (breaker_open): circuit breaker of "flaky" is open'),
    );
    assert.equal(fake.calls.length, 0);
    assert.equal(await g.metric(CALLS, { step: 'flaky', phase: 'validate', outcome: 'error' }), 2);
    assert.equal(await g.metric(CALLS, { step: 'flaky', phase: 'validate', outcome: 'circuit_open' }), 1);
    // The fast failure counts as a fire and a reject (state not checked: it may be half-open by now).
    const { step } = await breakerOf(g);
    assert.deepEqual([step?.fires, step?.failures, step?.rejects], [3, 2, 1]);

    // After resetTimeout: half-open (awaited through the metric, no fixed sleep).
    await eventually('the breaker is half-open', async () => (await g.metric(STATE, { provider: 'flaky' })) === 1);
    assert.equal(await g.metric(TRANSITIONS, { provider: 'flaky', state: 'half-open' }), 1);
    assert.equal((await breakerOf(g)).provider, 'half-open');

    // The provider recovered: the probe goes through and closes the breaker.
    fake.route('/flaky', 'allow');
    assert.deepEqual(await validate(g), { uid: UID, allowed: true });
    assert.equal(fake.reviews().length, 1);
    assert.equal(await g.metric(STATE, { provider: 'flaky' }), 0);
    assert.equal(await g.metric(TRANSITIONS, { provider: 'flaky', state: 'closed' }), 1);
    assert.equal(await g.metric(TRANSITIONS, { provider: 'flaky', state: 'open' }), 1);
    assert.equal((await breakerOf(g)).provider, 'closed');
    assert.equal((await breakerOf(g)).step?.state, 'closed');
    assert.equal(await g.metric(CALLS, { step: 'flaky', phase: 'validate', outcome: 'allowed' }), 1);
  });

  it('reopens when the half-open probe fails', async function () {
    fake.route('/flaky', '500');
    const g = await start('Fail');
    await validate(g);
    await validate(g);
    assert.equal(await g.metric(STATE, { provider: 'flaky' }), 2);

    await eventually('the breaker is half-open', async () => (await g.metric(STATE, { provider: 'flaky' })) === 1);
    fake.reset();
    assert.deepEqual(
      await validate(g),
      failedWith(`provider "flaky" failed (http_status): ${fake.url('/flaky')} answered HTTP 500`),
    );

    assert.equal(fake.reviews().length, 1, 'exactly one probe reached the provider');
    assert.equal(await g.metric(STATE, { provider: 'flaky' }), 2);
    assert.equal(await g.metric(TRANSITIONS, { provider: 'flaky', state: 'open' }), 2);
    assert.equal(await g.metric(TRANSITIONS, { provider: 'flaky', state: 'half-open' }), 1);
    assert.equal(await g.metric(TRANSITIONS, { provider: 'flaky', state: 'closed' }), 0);
  });

  it('with failurePolicy Ignore an open breaker fails open: allowed, warning, annotation, fail_open_total', async function () {
    fake.route('/flaky', 'garbage');
    const g = await start('Ignore');
    await validate(g);
    await validate(g);
    assert.equal(await g.metric(STATE, { provider: 'flaky' }), 2);
    fake.reset();

    const answer = await validate(g);

    assert.deepEqual(answer, {
      uid: UID,
      allowed: true,
      warnings: ['flaky: failed open (breaker_open): circuit breaker of "flaky" is open'],
      auditAnnotations: { 'flaky.failed-open': 'breaker_open: circuit breaker of "flaky" is open' },
    });
    assert.equal(fake.calls.length, 0);
    assert.equal(await g.metric(FAIL_OPEN, { step: 'flaky' }), 3);
    assert.equal(await g.metric(CALLS, { step: 'flaky', phase: 'validate', outcome: 'error' }), 2);
    assert.equal(await g.metric(CALLS, { step: 'flaky', phase: 'validate', outcome: 'circuit_open' }), 1);

    // Logs: a warn line per real failure and one for the opening; reviews failing fast while it is open add
    // none (each review's own line records circuit_open and failedOpen).
    await validate(g);
    const lines = g.logs.filter((l) => l.level === 'warn' || l.msg === 'review');
    assert.deepEqual(
      lines.map((l) => [l.msg, l.reason ?? null]),
      [
        ['step failed, failing open', 'invalid_response'],
        ['review', null],
        ['circuit breaker open', null],
        ['step failed, failing open', 'invalid_response'],
        ['review', null],
        ['review', null],
        ['review', null],
      ],
    );
    const steps = lines.at(-1)?.steps as { step: string; outcome: string; reason?: string; failedOpen?: boolean }[];
    assert.deepEqual(
      steps.map(({ step, outcome, reason, failedOpen }) => ({ step, outcome, reason, failedOpen })),
      [{ step: 'flaky', outcome: 'circuit_open', reason: 'breaker_open', failedOpen: true }],
    );
  });
});
