/**
 * OpenTelemetry tracing, end to end on 127.0.0.1: a gateway with tracing on exports, to a real OTLP/HTTP
 * receiver, a span per review and one per step below it; the review continues the caller's `traceparent`; a
 * remote provider step sends its span's `traceparent`, so the spans of a provider built with the SDK (its
 * `tracing` option) are children of the gateway's step span, in the same trace. With tracing off nothing is
 * exported and providers receive no `traceparent`.
 */
import assert from 'node:assert/strict';
import { podCreate } from '../fixtures/reviews/index.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { startHarness, type Harness } from '../helpers/gateway-harness.js';
import { startTracedProvider, type TracedProvider } from '../helpers/traced-provider.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const OFF_TRACE = '0af7651916cd43dd8448eb211c80319c';
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;
const SPAN_KIND = { internal: 1, server: 2, client: 3 };
const STATUS_ERROR = 2;

describe('tracing: spans over OTLP', function () {
  this.timeout(20_000);
  let receiver: OtlpReceiver;
  let fake: FakeProvider;
  let provider: TracedProvider;

  before(async () => {
    receiver = await startOtlpReceiver();
    fake = await startFakeProvider();
    provider = await startTracedProvider(receiver.endpoint);
  });

  after(async () => {
    await provider.server.close();
    await fake.close();
    await receiver.close();
  });

  /** A chain of an in-process plugin, the SDK provider (discovered) and a fake provider that fails (Ignore). */
  const chainYaml = (tracing: string) => `
${tracing}
explain: { keep: all }
chain:
  - plugin: default-labels
    settings: { labels: { tier: gold } }
  - provider: labels
    url: ${provider.server.url}
    caBundle: ${provider.caBundle}
    discovery: true
  - provider: flaky
    url: ${fake.url('/500')}
    caBundle: ${fake.caBundle}
    phases: [validate]
    failurePolicy: Ignore
  - plugin: default-labels
    name: deployments-only
    settings: { labels: { kind: deployment } }
    match: { rules: [{ apiGroups: [apps], apiVersions: [v1], resources: [deployments], operations: [CREATE] }] }
`;

  const spansOf = (traceId: string) => receiver.spans.filter((s) => s.traceId === traceId);
  const one = (spans: readonly ReceivedSpan[], what: string, pick: (s: ReceivedSpan) => boolean): ReceivedSpan => {
    const found = spans.filter(pick);
    assert.equal(found.length, 1, `expected one ${what}, got ${found.length}: ${JSON.stringify(spans, null, 1)}`);
    return found[0]!;
  };

  describe('on', () => {
    let h: Harness;
    before(async () => {
      h = await startHarness({
        yaml: chainYaml(`tracing:\n  otlpEndpoint: ${receiver.endpoint}\n  exportDelaySeconds: 0.05`),
        discovery: { initialBackoffMs: 20, maxBackoffMs: 200, refreshMs: 60_000 },
      });
    });
    after(() => h.close());

    it('exports the review span, continued from the caller’s traceparent, with a span per step below it', async () => {
      fake.reset();
      const answer = await h.post('/mutate', podCreate(), { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` });
      assert.equal(answer.status, 200);
      await receiver.until('the mutate review and its step are exported', () => spansOf(CALLER_TRACE).length >= 2);
      const spans = spansOf(CALLER_TRACE);
      const review = one(spans, 'review span', (s) => s.name === 'admission.review');
      assert.deepEqual(
        { ...review, spanId: typeof review.spanId },
        {
          service: 'admission-gateway',
          traceId: CALLER_TRACE,
          spanId: 'string',
          parentSpanId: CALLER_SPAN,
          name: 'admission.review',
          kind: SPAN_KIND.server,
          attributes: {
            'admission.uid': podCreate().request!.uid,
            'admission.operation': 'CREATE',
            'admission.kind': 'v1/Pod',
            'admission.namespace': 'team-a',
            'admission.name': 'web',
            'admission.phase': 'mutate',
            'admission.route': 'mutate',
            'admission.dry_run': false,
            'admission.allowed': true,
            'admission.patch_ops': 1,
          },
          status: { code: 0 },
          events: [
            {
              name: 'step skipped',
              attributes: {
                'admission.step.name': 'deployments-only',
                'admission.step.skip_reason': 'rules do not match',
              },
            },
          ],
        },
      );
      const step = one(spans, 'step span', (s) => s.name === 'admission.step');
      assert.equal(step.parentSpanId, review.spanId);
      assert.equal(step.kind, SPAN_KIND.internal);
      assert.deepEqual(step.attributes, {
        'admission.step.name': 'default-labels',
        'admission.step.source': 'plugin',
        'admission.step.extension': 'default-labels',
        'admission.step.phase': 'mutate',
        'admission.step.failure_policy': 'Fail',
        'admission.step.mode': 'enforce',
        'admission.step.outcome': 'patched',
        'admission.step.round': 0,
      });
    });

    it('sends each provider its step span’s traceparent: the SDK provider’s spans are its children', async () => {
      fake.reset();
      const before = receiver.spans.length;
      const answer = await h.review('/validate', podCreate());
      assert.equal(answer.response.allowed, true);
      // Four spans of the gateway (review, two provider steps) and two of the provider (review, step).
      await receiver.until('the validate review is exported', () => receiver.spans.length - before >= 5);
      const review = one(
        receiver.spans,
        'validate review span',
        (s) => s.service === 'admission-gateway' && s.attributes['admission.phase'] === 'validate',
      );
      assert.equal(review.parentSpanId, '', 'a review without a traceparent starts a trace');
      const spans = spansOf(review.traceId);
      const labels = one(
        spans,
        'labels step span',
        (s) => s.attributes['admission.step.name'] === 'require-labels.labels',
      );
      assert.equal(labels.parentSpanId, review.spanId);
      assert.equal(labels.kind, SPAN_KIND.client);
      assert.equal(labels.attributes['admission.step.outcome'], 'allowed');

      const providerReview = one(
        spans,
        'provider review span',
        (s) => s.service === 'admission-provider' && s.name === 'admission.review',
      );
      assert.equal(providerReview.parentSpanId, labels.spanId);
      assert.equal(providerReview.attributes['admission.route'], 'require-labels');
      const providerStep = one(
        spans,
        'provider step span',
        (s) => s.service === 'admission-provider' && s.name === 'admission.step',
      );
      assert.equal(providerStep.parentSpanId, providerReview.spanId);
      assert.equal(providerStep.attributes['admission.step.outcome'], 'allowed');

      const flaky = one(spans, 'flaky step span', (s) => s.attributes['admission.step.name'] === 'flaky');
      assert.equal(flaky.parentSpanId, review.spanId);
      assert.deepEqual(
        [
          flaky.status.code,
          flaky.attributes['admission.step.outcome'],
          flaky.attributes['admission.step.failure_reason'],
        ],
        [STATUS_ERROR, 'error', 'http_status'],
      );
      assert.equal(flaky.attributes['admission.step.failed_open'], true);
      const [call] = fake.reviews();
      const sent = TRACEPARENT.exec(String(call!.headers.traceparent));
      assert.deepEqual(sent?.slice(1), [review.traceId, flaky.spanId]);
    });

    it('gives the decision trace the same trace id: GET /explain/<trace id> finds the review', async () => {
      const answer = await h.ops(`/explain/${CALLER_TRACE}`);
      assert.equal(answer.status, 200);
      const body = answer.body as { traceId: string; reviews: { uid: string; route: string }[] };
      assert.deepEqual(
        body.reviews.map((r) => [r.uid, r.route]),
        [[podCreate().request!.uid, 'mutate']],
      );
    });

    it('starts a trace of its own for a malformed traceparent', async () => {
      const before = receiver.spans.length;
      await h.post('/mutate', podCreate(), { traceparent: `00-${'0'.repeat(32)}-${CALLER_SPAN}-01` });
      await receiver.until('the review is exported', () =>
        receiver.spans.slice(before).some((s) => s.name === 'admission.review'),
      );
      const review = one(receiver.spans.slice(before), 'review span', (s) => s.name === 'admission.review');
      assert.equal(review.parentSpanId, '');
      assert.match(review.traceId, /^[0-9a-f]{32}$/);
      assert.notEqual(review.traceId, '0'.repeat(32));
    });

    it('counts the spans exported', async () => {
      assert.ok((await h.metric('admission_gateway_tracing_spans_total', { result: 'exported' })) >= 3);
    });
  });

  it('records only traces a sampled caller started, with sampleRatio 0', async () => {
    const h = await startHarness({
      yaml: `
tracing: { otlpEndpoint: "${receiver.endpoint}", sampleRatio: 0, exportDelaySeconds: 0.05 }
chain:
  - plugin: default-labels
    settings: { labels: { tier: gold } }
  - provider: allowing
    url: ${fake.url('/allow')}
    caBundle: ${fake.caBundle}
    phases: [validate]
`,
    });
    const sampledTrace = 'aaaabbbbccccddddeeeeffff00001111';
    const before = receiver.spans.length;
    try {
      fake.reset();
      await h.post('/validate', podCreate());
      await h.post('/mutate', podCreate());
      await h.post('/mutate', podCreate(), { traceparent: `00-${sampledTrace}-${CALLER_SPAN}-01` });
    } finally {
      await h.close();
    }
    // The unsampled review tells the provider its trace, not sampled (flags 00).
    assert.match(String(fake.reviews()[0]?.headers.traceparent), /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    // The caller's review and its step; nothing of the review that started its own trace.
    assert.deepEqual(
      receiver.spans.slice(before).map((s) => [s.traceId, s.name]),
      [
        [sampledTrace, 'admission.step'],
        [sampledTrace, 'admission.review'],
      ],
    );
  });

  it('with tracing off, exports nothing and sends providers no traceparent', async () => {
    const fromGateway = () => receiver.spans.filter((s) => s.service === 'admission-gateway').length;
    const exported = fromGateway();
    const h = await startHarness({
      yaml: chainYaml(''),
      discovery: { initialBackoffMs: 20, maxBackoffMs: 200, refreshMs: 60_000 },
    });
    try {
      // The decision trace still carries the caller's trace id.
      await h.post('/mutate', podCreate(), { traceparent: `00-${OFF_TRACE}-${CALLER_SPAN}-01` });
      const explained = (await h.ops(`/explain/${OFF_TRACE}`)).body as { reviews: { route: string }[] };
      assert.deepEqual(
        explained.reviews.map((r) => r.route),
        ['mutate'],
      );
      fake.reset();
      const answer = await h.review('/validate', podCreate());
      assert.equal(answer.response.allowed, true);
      assert.deepEqual(
        fake.reviews().map((call) => call.headers.traceparent),
        [undefined],
      );
    } finally {
      await h.close();
    }
    assert.equal(fromGateway(), exported);
    assert.equal(await h.metric('admission_gateway_tracing_spans_total', { result: 'exported' }), 0);
  });
});
