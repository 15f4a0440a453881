import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { apiError, core, eventually, plain, randomSuffix, readStatus, statusOf, warningTexts } from './cluster.js';
import {
  anyFailed,
  metricValue,
  registryValue,
  startE2EGateway,
  type E2EGateway,
  podCreateWebhook,
} from './gateway.js';
import { getChain } from './http.js';
import { pausePod } from './objects.js';

// Remote providers in the chain, between in-process plugins, each selected by the Pod label
// `e2e-provider`: `hanging` (/hang, Ignore, 1 s, a breaker that opens after 2 failed calls and stays
// open for 5 minutes), `failing` (/500, Fail) and `patcher` (/patch, after default-labels).
const POD_LABEL = 'e2e-provider';
const pod = (name: string, provider: string) => pausePod(name, { [POD_LABEL]: provider });
const ADMITTED = 'admissiongateway.io/admitted';

function podMatch(value: string): object {
  return {
    rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
    objectSelector: { matchLabels: { [POD_LABEL]: value } },
  };
}

function chain(fake: FakeProvider): string {
  const provider = (name: string, path: string, extra: object) => ({
    provider: name,
    url: fake.url(path),
    caBundle: fake.caBundle,
    phases: ['mutate'],
    match: podMatch(name),
    ...extra,
  });
  return stringify([
    { plugin: 'default-labels', settings: { labels: { [ADMITTED]: 'true' } } },
    provider('hanging', '/hang', {
      failurePolicy: 'Ignore',
      timeoutSeconds: 1,
      circuitBreaker: { volumeThreshold: 2, errorThresholdPercentage: 50, resetTimeoutSeconds: 300 },
    }),
    provider('failing', '/500', { failurePolicy: 'Fail', timeoutSeconds: 2 }),
    provider('patcher', '/patch', { failurePolicy: 'Fail', timeoutSeconds: 2 }),
    {
      plugin: 'resource-defaults',
      failurePolicy: 'Ignore',
      settings: { requests: { cpu: '50m', memory: '32Mi' }, limits: { memory: '128Mi' } },
    },
  ]);
}

const DEFAULTED_RESOURCES = { requests: { cpu: '50m', memory: '32Mi' }, limits: { memory: '128Mi' } };
const BREAKER_OPEN_WARNING = 'hanging: failed open (breaker_open): circuit breaker of "hanging" is open';

describe('remote providers behind circuit breakers through a real kube-apiserver', function () {
  let fake: FakeProvider;
  let gw: E2EGateway | undefined;
  let namespace: string;

  before(async function () {
    fake = await startFakeProvider();
    gw = await startE2EGateway({
      suite: 'providers',
      chain: chain(fake),
      mutating: [podCreateWebhook('mutate', { timeoutSeconds: 5 })],
    });
    namespace = await gw.namespace();
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    await fake?.close();
  });

  const hangCalls = () => fake.reviews().filter((c) => c.path === '/hang').length;
  const breakerState = () =>
    registryValue(gw!.gateway.metrics.registry, 'admission_gateway_breaker_state', { provider: 'hanging' });
  const hangingOutcome = async (outcome: string) =>
    metricValue(await gw!.metrics(), 'admission_gateway_step_calls_total', {
      step: 'hanging',
      phase: 'mutate',
      outcome,
    }) ?? 0;

  /** Creates a Pod for `hanging`; returns its warnings after checking it was stored with the plugins' mutations. */
  async function createThroughHanging(): Promise<string[]> {
    const name = `hang-${randomSuffix()}`;
    const { headers } = await core().createNamespacedPodWithHttpInfo({ namespace, body: pod(name, 'hanging') });
    const stored = await core().readNamespacedPod({ name, namespace });
    assert.deepEqual(stored.metadata?.labels, { [POD_LABEL]: 'hanging', [ADMITTED]: 'true' });
    assert.deepEqual(plain(stored.spec?.containers[0]?.resources), DEFAULTED_RESOURCES);
    return warningTexts(headers);
  }

  it('fails open on a hanging provider until its breaker opens, then stops calling it', async function () {
    assert.equal(await breakerState(), 0, 'closed before the first call');
    const timeoutWarning =
      /^hanging: failed open \(timeout\): (did not answer within \d+ ms|no answer from https:\/\/127\.0\.0\.1:\d+\/hang in time)$/;

    // volumeThreshold 2: the first timeout leaves the breaker closed, the second (2 of 2 failed) opens it.
    const first = await createThroughHanging();
    assert.equal(first.length, 1, `one warning, got ${JSON.stringify(first)}`);
    assert.match(first[0]!, timeoutWarning);
    assert.equal(hangCalls(), 1);
    assert.equal(await breakerState(), 0, 'still closed after one failure');

    const second = await createThroughHanging();
    assert.equal(second.length, 1, `one warning, got ${JSON.stringify(second)}`);
    assert.match(second[0]!, timeoutWarning);
    assert.equal(hangCalls(), 2);
    // The breaker counts the failure when the aborted call settles, just after the answer went out.
    await eventually('the breaker of "hanging" to open', async () => ((await breakerState()) === 2 ? true : undefined));
    assert.equal(await hangingOutcome('timeout'), 2);

    const circuitOpenBefore = await hangingOutcome('circuit_open');
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(await createThroughHanging(), [BREAKER_OPEN_WARNING]);
    }
    assert.equal(hangCalls(), 2, 'the open breaker let no call through to the provider');
    assert.equal((await hangingOutcome('circuit_open')) - circuitOpenBefore, 3);
    assert.equal(
      metricValue(await gw!.metrics(), 'admission_gateway_fail_open_total', { step: 'hanging' }),
      5,
      'every failure failed open',
    );
    assert.equal(await breakerState(), 2, 'still open (resetTimeoutSeconds 300)');

    const step = (await getChain(gw!.gateway.opsUrl)).mutate.find((s) => s.name === 'hanging');
    assert.equal(step?.breaker?.state, 'open', '/chain shows the open breaker');
  });

  it('refuses the object when a failurePolicy Fail provider answers HTTP 500, and stores nothing', async function () {
    const name = `fail-${randomSuffix()}`;
    const before = fake.reviews().filter((c) => c.path === '/500').length;
    const err = await apiError(core().createNamespacedPod({ namespace, body: pod(name, 'failing') }));
    assert.equal(err.code, 500);
    assert.equal(
      statusOf(err).message,
      `admission webhook "${gw!.webhookName('mutate')}" denied the request: ` +
        `provider "failing" failed (http_status): ${fake.url('/500')} answered HTTP 500`,
    );
    assert.equal(await readStatus(() => core().readNamespacedPod({ name, namespace })), 404);
    const calls = fake.reviews().filter((c) => c.path === '/500');
    assert.equal(calls.length - before, 1, 'called once, not retried');
    assert.equal(calls.at(-1)?.review?.request?.name, name);
  });

  it("applies a provider's patch on top of the plugin before it, and the provider sees that plugin's change", async function () {
    const name = `patch-${randomSuffix()}`;
    await core().createNamespacedPod({ namespace, body: pod(name, 'patcher') });

    const stored = await core().readNamespacedPod({ name, namespace });
    assert.deepEqual(stored.metadata?.labels, { [POD_LABEL]: 'patcher', [ADMITTED]: 'true', provider: 'patched' });
    assert.deepEqual(plain(stored.spec?.containers[0]?.resources), DEFAULTED_RESOURCES, 'the plugin after it');

    const calls = fake.reviews().filter((c) => c.path === '/patch');
    assert.equal(calls.length, 1);
    const sent = calls[0]!;
    assert.equal(sent.review?.request?.name, name);
    assert.equal(sent.review?.request?.namespace, namespace);
    assert.equal(sent.operation, 'CREATE');
    const object = sent.object as V1Pod;
    assert.deepEqual(
      object.metadata?.labels,
      { [POD_LABEL]: 'patcher', [ADMITTED]: 'true' },
      'default-labels ran first',
    );
    assert.deepEqual(object.spec?.containers[0]?.resources, {}, 'resource-defaults runs after the provider');
  });
});
