import assert from 'node:assert/strict';
import { startTracedProvider, type TracedProvider } from '../helpers/traced-provider.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { core, randomSuffix, requireKube, restartApiserver } from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';
import { pausePod } from './objects.js';

// Tracing through the real kube-apiserver: a Pod created with client-node goes through a mutating webhook
// (default-labels, in process) and a validating one (a remote provider built with the SDK, require-labels,
// with its own `tracing` option); an OTLP/HTTP receiver in the test process receives the gateway's review and
// step spans and the provider's spans, children of the gateway's step span. Without tracing configured the
// apiserver sends no `traceparent` (1.20 has no tracing at all), so each review starts its own trace; with
// apiserver tracing (1.34+, sampled at 100 %, exporting over OTLP/gRPC to the same receiver) the gateway's
// review span is the child of the apiserver's call of the webhook, in the apiserver's trace.
const GATEWAY_CHAIN = (provider: TracedProvider) => `
- plugin: default-labels
  settings: { labels: { team: payments } }
- provider: labels
  url: ${provider.server.url}
  caBundle: ${provider.caBundle}
  discovery: true
`;
const POD_RULE = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };
const SPAN_KIND_CLIENT = 3;

describe('tracing through a real kube-apiserver', function () {
  let receiver: OtlpReceiver;
  let provider: TracedProvider;
  let gw: E2EGateway | undefined;
  let namespace: string;

  before(async function () {
    receiver = await startOtlpReceiver();
    provider = await startTracedProvider(receiver.endpoint);
    gw = await startE2EGateway({
      suite: 'tracing',
      chain: GATEWAY_CHAIN(provider),
      mutating: [{ name: 'mutate', route: 'mutate', rules: [POD_RULE] }],
      validating: [{ name: 'validate', route: 'validate', rules: [POD_RULE] }],
      tracing: { otlpEndpoint: receiver.endpoint, exportDelaySeconds: 0.05 },
    });
    namespace = await gw.namespace();
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    await provider?.server.close();
    await receiver?.close();
  });

  it('exports the review and step spans of a Pod create, with the provider’s spans below its step span', async function () {
    const name = `traced-${randomSuffix()}`;
    const created = await core().createNamespacedPod({ namespace, body: pausePod(name) });
    assert.equal(created.metadata?.labels?.team, 'payments');

    const ofPod = (s: ReceivedSpan) =>
      s.name === 'admission.review' && s.attributes['admission.name'] === name && s.service === 'admission-gateway';
    const reviewOf = (phase: string) =>
      receiver.spans.find((s) => ofPod(s) && s.attributes['admission.phase'] === phase);
    const inTrace = (review: ReceivedSpan | undefined) =>
      review ? receiver.spans.filter((s) => s.traceId === review.traceId) : [];
    // mutate: review + default-labels (+ the probe steps' spans); validate: review, labels step, provider review + step.
    await receiver.until('the Pod’s spans are exported', () => {
      const validate = inTrace(reviewOf('validate'));
      return (
        inTrace(reviewOf('mutate')).length >= 2 &&
        validate.some((s) => s.service === 'admission-provider' && s.name === 'admission.step')
      );
    });

    const mutate = reviewOf('mutate')!;
    assert.equal(mutate.parentSpanId, '', 'the apiserver sent no traceparent: the review starts the trace');
    assert.deepEqual(
      [
        mutate.attributes['admission.operation'],
        mutate.attributes['admission.kind'],
        mutate.attributes['admission.namespace'],
        mutate.attributes['admission.allowed'],
        mutate.attributes['admission.dry_run'],
      ],
      ['CREATE', 'v1/Pod', namespace, true, false],
    );
    const labelsStep = inTrace(mutate).find((s) => s.attributes['admission.step.name'] === 'default-labels');
    assert.equal(labelsStep?.parentSpanId, mutate.spanId);
    assert.equal(labelsStep.attributes['admission.step.outcome'], 'patched');

    const validate = reviewOf('validate')!;
    const spans = inTrace(validate);
    const step = spans.find((s) => s.attributes['admission.step.name'] === 'require-labels.labels');
    assert.equal(step?.parentSpanId, validate.spanId);
    assert.equal(step.kind, SPAN_KIND_CLIENT);
    assert.deepEqual(
      [step.attributes['admission.step.source'], step.attributes['admission.step.outcome']],
      ['provider', 'allowed'],
    );
    const providerReview = spans.find((s) => s.service === 'admission-provider' && s.name === 'admission.review');
    assert.equal(providerReview?.parentSpanId, step.spanId, 'the provider continued the step’s traceparent');
    assert.equal(providerReview.attributes['admission.name'], name);
    const providerStep = spans.find((s) => s.service === 'admission-provider' && s.name === 'admission.step');
    assert.equal(providerStep?.parentSpanId, providerReview.spanId);
    assert.equal(providerStep.attributes['admission.step.name'], 'require-labels');
  });
});

describe('tracing from kube-apiserver through the gateway to its provider (apiserver tracing)', function () {
  let receiver: OtlpReceiver | undefined;
  let provider: TracedProvider | undefined;
  let gw: E2EGateway | undefined;
  let restarted = false;

  before(async function () {
    requireKube(this, 34, 'kube-apiserver tracing that sends traceparent to webhooks');
    receiver = await startOtlpReceiver({ grpc: true });
    provider = await startTracedProvider(receiver.endpoint);
    restarted = true;
    await restartApiserver({ tracingEndpoint: receiver.grpcEndpoint! });
    gw = await startE2EGateway({
      suite: 'apiserver-tracing',
      chain: GATEWAY_CHAIN(provider),
      mutating: [{ name: 'mutate', route: 'mutate', rules: [POD_RULE] }],
      validating: [{ name: 'validate', route: 'validate', rules: [POD_RULE] }],
      tracing: { otlpEndpoint: receiver.endpoint, exportDelaySeconds: 0.05 },
    });
  });

  after(async function () {
    if (restarted) await restartApiserver();
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    await provider?.server.close();
    await receiver?.close();
  });

  it('makes the gateway’s review span a child of the apiserver’s webhook call, the provider’s spans below it', async function () {
    this.timeout(90_000);
    const namespace = await gw!.namespace();
    const name = `traced-${randomSuffix()}`;
    await core().createNamespacedPod({ namespace, body: pausePod(name) });
    const spans = receiver!.spans;
    const review = () =>
      spans.find(
        (s) =>
          s.service === 'admission-gateway' &&
          s.name === 'admission.review' &&
          s.attributes['admission.name'] === name &&
          s.attributes['admission.phase'] === 'validate',
      );
    const byId = (id: string) => spans.find((s) => s.spanId === id);
    // The apiserver exports in batches: wait for its spans of the Pod's create as well as the gateway's.
    await receiver!.until(
      'the apiserver’s span above the gateway’s review, and the provider’s below',
      () => {
        const r = review();
        return (
          r !== undefined &&
          byId(r.parentSpanId) !== undefined &&
          spans.some((s) => s.traceId === r.traceId && s.service === 'admission-provider')
        );
      },
      60_000,
    );
    const gatewayReview = review()!;
    const call = byId(gatewayReview.parentSpanId)!;
    assert.equal(call.service, 'apiserver');
    assert.equal(call.kind, SPAN_KIND_CLIENT, 'the apiserver’s outgoing call of the webhook');
    assert.equal(call.traceId, gatewayReview.traceId);
    // Up from the call: the apiserver's own spans, to the root of the request it served.
    const ancestors = [];
    for (let span = call; span.parentSpanId !== '';) {
      const parent = byId(span.parentSpanId);
      if (!parent) break;
      ancestors.push(parent);
      span = parent;
    }
    assert.ok(ancestors.length > 0, 'the call has the apiserver’s request span above it');
    assert.deepEqual([...new Set(ancestors.map((s) => s.service))], ['apiserver']);
    // Down from the review: the gateway's provider step, then the provider's review, one trace throughout.
    const step = spans.find(
      (s) => s.parentSpanId === gatewayReview.spanId && s.attributes['admission.step.name'] === 'require-labels.labels',
    );
    const providerReview = spans.find((s) => s.service === 'admission-provider' && s.parentSpanId === step?.spanId);
    assert.equal(providerReview?.name, 'admission.review');
    assert.equal(providerReview.traceId, gatewayReview.traceId);
  });
});
