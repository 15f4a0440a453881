/**
 * Remote authorize providers (`phases: [authorize]`) through the running gateway: each is sent a v1
 * SubjectAccessReview over HTTPS, its denial is the gateway's (its reason in the 403), its `allowed: true` is
 * no opinion (the gateway never grants), and a provider that does not answer fails through its
 * failurePolicy, its breaker opening after the configured failures.
 */
import assert from 'node:assert/strict';
import { SAR_DENY_REASON, startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { startHarness, type Harness } from '../helpers/gateway-harness.js';

const V1 = 'authorization.k8s.io/v1';

const review = (verb: string, namespace = 'team-a') => ({
  apiVersion: V1,
  kind: 'SubjectAccessReview',
  spec: {
    resourceAttributes: { namespace, verb, version: 'v1', resource: 'configmaps', name: 'settings' },
    user: 'alice',
    groups: ['system:authenticated'],
    uid: 'u-1',
  },
});

const NO_OPINION = { apiVersion: V1, kind: 'SubjectAccessReview', status: { allowed: false } };

describe('remote authorize providers', () => {
  let fake: FakeProvider;
  let harness: Harness | undefined;

  before(async () => {
    fake = await startFakeProvider();
  });
  after(async () => {
    await fake.close();
  });
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
    fake.reset();
  });

  const start = (entries: string) =>
    startHarness({ yaml: `chain:\n${entries}` }).then((h) => {
      harness = h;
      return h;
    });
  const entry = (name: string, behaviour: string, more = '') => `  - provider: ${name}
    url: ${fake.url(`/${behaviour}`)}
    caBundle: ${fake.caBundle}
    phases: [authorize]
    authorizeMatch: { verbs: [get, update], resources: [configmaps] }
${more}`;

  it('sends a v1 SubjectAccessReview and forbids with the provider’s reason', async () => {
    const h = await start(entry('remote-policy', 'sar-deny'));
    const answer = await h.post('/authorize', review('get'));
    assert.deepEqual(answer.body, {
      apiVersion: V1,
      kind: 'SubjectAccessReview',
      status: { allowed: false, denied: true, reason: `remote-policy: ${SAR_DENY_REASON}` },
    });
    const [call] = fake.reviews();
    assert.equal(call?.path, '/sar-deny');
    assert.match(call?.timeout ?? '', /^\d+ms$/);
    assert.deepEqual(call?.review, {
      apiVersion: V1,
      kind: 'SubjectAccessReview',
      spec: {
        resourceAttributes: {
          namespace: 'team-a',
          verb: 'get',
          group: '',
          version: 'v1',
          resource: 'configmaps',
          subresource: '',
          name: 'settings',
        },
        user: 'alice',
        groups: ['system:authenticated'],
        uid: 'u-1',
      },
    });
  });

  it('takes no opinion and an allowed answer alike as no opinion, and is not asked outside its match', async () => {
    const h = await start(entry('silent', 'sar-none') + entry('grants', 'sar-allow'));
    assert.deepEqual((await h.post('/authorize', review('get'))).body, NO_OPINION);
    assert.deepEqual((await h.post('/authorize', review('delete'))).body, NO_OPINION);
    assert.deepEqual(
      fake.reviews().map((c) => c.path),
      ['/sar-none', '/sar-allow'],
    );
  });

  it('forbids when a Fail provider answers garbage, naming the reason', async () => {
    const h = await start(entry('broken', 'garbage'));
    const answer = (await h.post('/authorize', review('get'))).body as { status: { reason: string } };
    assert.match(
      answer.status.reason,
      /^provider "broken" failed \(invalid_response\): https:\/\/127\.0\.0\.1:\d+\/garbage: the answer is not JSON$/,
    );
  });

  it('leaves a hanging Ignore provider after its timeout to RBAC, and opens its breaker', async () => {
    const h = await start(
      entry(
        'hanging',
        'hang',
        `    failurePolicy: Ignore
    timeoutSeconds: 0.1
    circuitBreaker: { volumeThreshold: 2, errorThresholdPercentage: 50, resetTimeoutSeconds: 600 }
`,
      ),
    );
    for (let i = 0; i < 2; i++) assert.deepEqual((await h.post('/authorize', review('get'))).body, NO_OPINION);
    const calls = (outcome: string) =>
      h.metric('admission_gateway_step_calls_total', { step: 'hanging', phase: 'authorize', outcome });
    assert.equal(await calls('timeout'), 2);
    assert.equal(await h.metric('admission_gateway_breaker_state', { provider: 'hanging' }), 2);

    // Open: no call is made, the answer is at once no opinion.
    const before = fake.reviews().length;
    assert.deepEqual((await h.post('/authorize', review('update'))).body, NO_OPINION);
    assert.equal(fake.reviews().length, before);
    assert.equal(await calls('circuit_open'), 1);
    assert.equal(await h.metric('admission_gateway_fail_open_total', { step: 'hanging' }), 3);
    const chain = (await h.ops('/chain')).body as { authorize: Array<{ name: string; breaker: { state: string } }> };
    assert.deepEqual(
      chain.authorize.map((s) => [s.name, s.breaker.state]),
      [['hanging', 'open']],
    );
  });

  it('refuses an authorize provider without authorizeMatch at start, naming the field', async () => {
    await assert.rejects(
      startHarness({
        yaml: `chain:\n  - provider: nomatch\n    url: ${fake.url('/sar-none')}\n    phases: [authorize]\n`,
      }),
      { message: /chain\[0\]\.authorizeMatch: expected the requests the authorize phase sees/ },
    );
  });
});
