/**
 * Remote providers in the large-review lane: a large review whose chain calls a provider runs in a worker, and the
 * provider's calls go through the process's one breaker and connection pool. What the user sees — the whole answer
 * and its patch, warnings and audit annotations, the decision trace, the metrics, the trace context the provider
 * is sent — is what the same review gets in the main lane; failures through either lane count into the one
 * breaker; a deadline in the worker ends the main thread's exchange.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { podCreate } from '../../fixtures/reviews/index.js';
import { startFakeProvider, type FakeProvider } from '../../helpers/fake-provider.js';
import type { Harness, HttpAnswer } from '../../helpers/gateway-harness.js';
import {
  PODS,
  counts,
  explained,
  gateway,
  heldInWorker,
  laneTook,
  largePod,
  largePodSized,
  spanShape,
  removeTempDirs,
  tempDir,
  timeless,
  type Extra,
  type Lanes,
} from '../../helpers/large-reviews.js';
import { startOtlpReceiver, type OtlpReceiver } from '../../helpers/otlp-receiver.js';

const STATE = 'admission_gateway_breaker_state';
const CALLS = 'admission_gateway_step_calls_total';
/** OTLP's SpanKind CLIENT: a provider step's span. */
const SPAN_KIND_CLIENT = 3;

/** The discovery document of the `hooks` provider: one validating handler that warns. */
const DOCUMENT = { handlers: [{ name: 'warn', phase: 'validate' }] };

/** A provider entry at `fake`'s `path`. */
const provider = (fake: FakeProvider, name: string, path: string, more: object = {}) => ({
  provider: name,
  url: fake.url(path),
  caBundle: fake.caBundle,
  ...more,
});

/** A plugin that patches, a provider that patches, one that warns, a discovered handler and a shadow step. */
const withProviders = (fake: FakeProvider) => [
  {
    plugin: 'default-labels',
    failurePolicy: 'Ignore',
    settings: { labels: { 'admissiongateway.io/admitted': 'true' } },
  },
  provider(fake, 'labeller', '/patch', { phases: ['mutate'] }),
  provider(fake, 'scanner', '/warn', { phases: ['validate'] }),
  provider(fake, 'hooks', '/hooks', { discovery: true }),
  { plugin: 'require-labels', name: 'shadow-labels', shadow: true, settings: { labels: ['cost-center'] } },
];

/** A validating provider at `path` whose breaker opens after two calls of which one failed. */
const breakingAt = (fake: FakeProvider, path: string, more: object = {}) => [
  provider(fake, 'flaky', path, {
    phases: ['validate'],
    failurePolicy: 'Ignore',
    circuitBreaker: { volumeThreshold: 2, errorThresholdPercentage: 50, resetTimeoutSeconds: 600 },
    ...more,
  }),
];

/** Two large reviews through the lane, each failing open for `reason`: the breaker of `flaky` is open then. */
async function opensThroughLane(h: Harness, reason: string): Promise<void> {
  for (const uid of ['e1a2d3e4-4a5b-4c6d-8e7f-901234567890', 'e2a2d3e4-4a5b-4c6d-8e7f-901234567890']) {
    const answer = await h.post('/validate', largePod(uid));
    assert.ok(JSON.stringify(answer.body).includes(`flaky: failed open (${reason})`), `failed open (${reason})`);
  }
  assert.equal(await h.metric(STATE, { provider: 'flaky' }), 2, 'the breaker opened');
  assert.equal(await laneTook(h, 'validate'), 2, 'through the lane');
}

/** The review's answer with its uid set aside (a large and an ordinary review compared). */
const uidless = (answer: HttpAnswer): unknown => {
  const { response } = answer.body as { response: Record<string, unknown> };
  return { ...answer.body!, response: { ...response, uid: '' } };
};

after(removeTempDirs);
describe('the large-review lane with remote providers', function () {
  this.timeout(60_000);
  const open: Array<{ close(): Promise<void> }> = [];
  const fake = async (): Promise<FakeProvider> => {
    const started = await startFakeProvider({ discovery: { document: DOCUMENT } });
    open.push(started);
    return started;
  };
  const start = async (chain: object[], lanes: Lanes, extra?: Extra): Promise<Harness> => {
    const h = await gateway(chain, lanes, extra);
    open.unshift(h);
    return h;
  };
  afterEach(async () => {
    for (const o of open.splice(0)) await o.close();
  });

  it('answers, patches, warns, counts and traces a large review with providers as the main lane does', async () => {
    const receivers = { lane: await startOtlpReceiver(), main: await startOtlpReceiver() };
    open.push(receivers.lane, receivers.main);
    const extra = (receiver: OtlpReceiver): Extra => ({
      yaml: { tracing: { otlpEndpoint: receiver.endpoint, exportDelaySeconds: 0.05 } },
    });
    const [laneFake, mainFake] = [await fake(), await fake()];
    const [lane, main] = await Promise.all([
      start(withProviders(laneFake), { workers: 1 }, extra(receivers.lane)),
      start(withProviders(mainFake), { workers: 0 }, extra(receivers.main)),
    ]);
    const uid = 'c1a2d3e4-4a5b-4c6d-8e7f-901234567890';
    const caller = '4bf92f3577b34da6a3ce929d0e0e4736';
    const traceparent = `00-${caller}-00f067aa0ba902b7-01`;
    const answers: Array<{ patch?: string; warnings?: string[] }> = [];
    for (const route of ['/mutate', '/validate']) {
      const [inLane, inMain] = await Promise.all([
        lane.post(route, largePod(uid), { traceparent }),
        main.post(route, largePod(uid), { traceparent }),
      ]);
      assert.equal(inLane.status, 200);
      assert.deepEqual(inLane.body, inMain.body, `the answers of ${route}`);
      answers.push((inLane.body as { response: { patch?: string; warnings?: string[] } }).response);
    }
    const [mutated, validated] = answers;
    const patch = JSON.parse(Buffer.from(mutated!.patch!, 'base64').toString('utf8')) as Array<{ path: string }>;
    assert.ok(
      patch.some((op) => op.path === '/metadata/labels/provider'),
      'the provider’s patch is applied',
    );
    assert.equal(validated!.warnings?.filter((w) => w.includes('image is old')).length, 2, 'the providers’ warnings');
    assert.deepEqual(
      timeless(await explained(lane, uid, 1)),
      timeless(await explained(main, uid, 1)),
      'the decision traces, shadow entries included',
    );
    // labeller on /mutate; scanner and the discovered handler on /validate.
    assert.equal(laneFake.reviews().length, 3, 'each provider was called once per review');
    assert.equal(mainFake.reviews().length, 3);
    // Two reviews, each with its span and one per step that ran (a plugin and labeller; scanner and hooks/warn).
    const spansOf = (receiver: OtlpReceiver) => receiver.spans.filter((span) => span.traceId === caller);
    for (const receiver of [receivers.lane, receivers.main]) {
      await receiver.until('every span is exported', () => spansOf(receiver).length >= 2 + 2 + 2);
    }
    assert.deepEqual(spanShape(spansOf(receivers.lane)), spanShape(spansOf(receivers.main)), 'the spans');
    // Each provider was called as a child of its step's span.
    for (const [receiver, provided] of [
      [receivers.lane, laneFake],
      [receivers.main, mainFake],
    ] as const) {
      const clientSpans = spansOf(receiver).filter((span) => span.kind === SPAN_KIND_CLIENT);
      assert.deepEqual(
        provided
          .reviews()
          .map((call) => String(call.headers.traceparent))
          .sort(),
        clientSpans.map((span) => `00-${caller}-${span.spanId}-01`).sort(),
      );
    }
    // Less what the exporter has sent so far, which depends on when its batches went.
    const counted = async (h: Harness) =>
      Object.fromEntries(Object.entries(await counts(h)).filter(([key]) => !key.includes('tracing_spans')));
    assert.deepEqual(
      [await laneTook(lane, 'mutate'), await laneTook(lane, 'validate'), await laneTook(main, 'validate')],
      [1, 1, 0],
    );
    const laneCounts = await counted(lane);
    assert.ok(laneCounts[`${CALLS}{"step":"labeller","phase":"mutate","outcome":"patched"}`]);
    assert.deepEqual(laneCounts, await counted(main));
  });

  it('holds a worker, not the event loop, while a large review calls a provider', async () => {
    const release = join(await tempDir(), 'release');
    const provided = await fake();
    const chain = [
      {
        plugin: 'spins-until',
        match: { ...PODS, objectSelector: { matchLabels: { size: 'large' } } },
        settings: { file: release, maxMs: 10_000 },
      },
      provider(provided, 'labeller', '/patch', { phases: ['mutate'] }),
    ];
    const lane = await start(chain, { workers: 1 });
    const large = largePodSized('d1a2d3e4-4a5b-4c6d-8e7f-901234567890', 'large');
    const held = await heldInWorker(lane, large, release);
    const { response } = held.body as { response: { patch?: string } };
    assert.ok(response.patch, 'the provider patched it from the worker');
    assert.equal(provided.reviews().length, 2);
  });

  it('opens the one breaker on failures through the lane; both lanes then fail fast alike', async () => {
    const failing = await fake();
    const h = await start(breakingAt(failing, '/500'), { workers: 1 });
    await opensThroughLane(h, 'http_status');
    assert.equal(failing.reviews().length, 2);
    const uid = 'e3a2d3e4-4a5b-4c6d-8e7f-901234567890';
    const ordinary = podCreate();
    ordinary.request!.uid = uid;
    const inMain = await h.post('/validate', ordinary);
    assert.match(JSON.stringify(inMain.body), /flaky: failed open \(breaker_open\)/);
    const inLane = await h.post('/validate', largePod(uid));
    assert.deepEqual(uidless(inLane), uidless(inMain), 'the lane answers behind the open breaker as the main lane');
    assert.equal(failing.reviews().length, 2, 'no call went out behind the open breaker');
    assert.equal(await h.metric(CALLS, { step: 'flaky', phase: 'validate', outcome: 'circuit_open' }), 2);
  });

  it('counts an invalid answer through the lane as a failure of the breaker', async () => {
    const lying = await fake();
    const h = await start(breakingAt(lying, '/wrong-uid'), { workers: 1 });
    await opensThroughLane(h, 'invalid_response');
  });

  it('ends the main thread’s exchange at the worker’s deadline, not at the provider’s answer', async () => {
    // The provider answers half a second after the step's time is up, sooner than the main thread's own bound.
    const late = await fake();
    const h = await start(breakingAt(late, '/slow-1500', { timeoutSeconds: 1 }), { workers: 1 });
    const answer = await h.post('/validate', largePod('a9a2d3e4-4a5b-4c6d-8e7f-901234567890'));
    assert.match(JSON.stringify(answer.body), /flaky: failed open \(timeout\)/);
    assert.equal(await laneTook(h, 'validate'), 1, 'through the lane');
    await late.until('the exchange was aborted', () => late.reviews()[0]?.clientClosed === true);
  });
});
