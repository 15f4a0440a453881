/**
 * The main thread's side of a lane worker's provider calls (provider-host.ts), with a real provider, client and
 * breaker, and the worker played by the test: a worker that dies before its verdict leaves no breaker fire
 * pending, and malformed messages are answered or dropped, never thrown.
 */
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { createLogger } from '../../../server/base/log.js';
import { createProviderHost, type HostedProvider } from '../../../server/lane/provider-host.js';
import type { ProviderFromWorker, ToWorker } from '../../../server/lane/lane-messages.js';
import { createMetrics } from '../../../server/metrics/metrics.js';
import { createProviderBreaker } from '../../../server/providers/provider-breaker.js';
import { createProviderClient } from '../../../server/providers/provider-client.js';
import { startFakeProvider, type FakeProvider } from '../../helpers/fake-provider.js';
import { eventually } from '../../helpers/wait.js';

describe('provider calls of lane workers, on the main thread', function () {
  let fake: FakeProvider;
  let provider: HostedProvider;
  let replies: ToWorker[];
  const reply = (message: ToWorker) => void replies.push(message);

  beforeEach(async () => {
    fake = await startFakeProvider();
    replies = [];
    const config = {
      errorThresholdPercentage: 50,
      volumeThreshold: 1,
      resetTimeoutMs: 60_000,
      rollingWindowMs: 10_000,
    };
    const deps = { metrics: createMetrics(new Registry(), { defaultMetrics: false }), log: createLogger('silent') };
    provider = {
      name: 'scanner',
      client: createProviderClient({ url: fake.url('/allow'), ca: fake.caPem, apiVersion: 'admission.k8s.io/v1' }),
      breaker: createProviderBreaker('scanner', config, deps),
    };
  });
  afterEach(async () => {
    provider.breaker.shutdown();
    await provider.client.close();
    await fake.close();
  });

  const host = () => createProviderHost({ providers: () => [provider], stepStarted: () => undefined });
  const call = (body: string): ProviderFromWorker => ({
    type: 'provider-call',
    call: 1,
    provider: 'scanner',
    path: '/allow?timeout=200ms',
    body: new Uint8Array(Buffer.from(body)),
    timeoutMs: 200,
  });

  it('settles the breaker’s fire as a failure when the worker never says whether the answer was valid', async () => {
    host().handle(
      call(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: {} })),
      reply,
    );
    await eventually('the answer went to the worker', () => replies.some((r) => r.type === 'provider-bytes'));
    // The worker died: no verdict comes. The call's own time and a second later the fire has failed.
    await eventually('the fire settled', () => provider.breaker.stats().failures === 1, { timeoutMs: 3000 });
    assert.equal(provider.breaker.state(), 'open');
    assert.equal(fake.reviews().length, 1);
  });

  it('answers a call it cannot make, and drops a message it cannot read, without throwing', () => {
    const served = host();
    const malformed: unknown[] = [
      { type: 'provider-call', call: 'one' },
      { type: 'provider-call', call: 2, provider: 'scanner', path: 42, body: 'text', timeoutMs: 'soon' },
      { type: 'provider-call', call: 3, provider: 'nobody', path: '/', body: new Uint8Array(1), timeoutMs: 10 },
      { type: 'provider-verdict', call: 99, failure: { reason: {}, message: [] } },
      { type: 'provider-cancel', call: 98 },
      { type: 'provider-rejected', provider: {} },
      { type: 'provider-get', call: 4, provider: 'scanner', path: null, timeoutMs: 10 },
    ];
    for (const message of malformed) served.handle(message as ProviderFromWorker, reply);
    assert.deepEqual(
      replies.map((r) => (r.type === 'provider-failed' ? [r.call, r.failure.reason] : r.type)),
      [
        [2, 'connection'],
        [3, 'connection'],
        [4, 'connection'],
      ],
    );
    assert.equal(fake.reviews().length, 0);
    assert.equal(provider.breaker.stats().fires, 0);
  });
});
