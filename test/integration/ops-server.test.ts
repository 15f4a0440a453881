import assert from 'node:assert/strict';
import { podCreate } from '../fixtures/reviews/index.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { reviewOf, startHarness, type Harness } from '../helpers/gateway-harness.js';
import { MATCH_EVERYTHING, createTestPlugins, type TestPlugins } from '../helpers/test-plugins.js';

const PODS_ONLY = {
  rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: 'Namespaced' }],
};

const CHAIN = `
chain:
  - plugin: add-label
    name: labeller
    failurePolicy: Ignore
    timeoutSeconds: 2
    reinvocationPolicy: IfNeeded
    settings: { labels: { checked: 'yes' } }
  - plugin: deny-with-reason
    name: gatekeeper
    mode: audit
    settings: { reason: not on a Friday }
    match:
      rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods], scope: Namespaced }]
`;

/** One sample line of the Prometheus text format, keyed by name and sorted labels. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels = [...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)]
      .map(([, k, v]) => `${k}=${v}`)
      .sort();
    out.set(labels.length ? `${match[1]}{${labels.join(',')}}` : match[1]!, Number(match[3]));
  }
  return out;
}

/** `name{a=1,b=2}` with the labels sorted, as `samples` keys them. */
function series(name: string, labels: Record<string, string> = {}): string {
  const pairs = Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .sort();
  return pairs.length ? `${name}{${pairs.join(',')}}` : name;
}

describe('ops server (plain HTTP)', function () {
  let harness: Harness | undefined;
  let test: TestPlugins;
  let provider: FakeProvider | undefined;

  async function start(yaml = CHAIN): Promise<Harness> {
    harness = await startHarness({ yaml, plugins: test.plugins });
    return harness;
  }

  beforeEach(function () {
    test = createTestPlugins();
  });

  afterEach(async function () {
    test.gate.release();
    await harness?.close();
    await provider?.close();
    harness = undefined;
    provider = undefined;
  });

  it('serves /chain: the resolved order, each step with its mode, failurePolicy and match', async function () {
    const h = await start();

    const answer = await h.ops('/chain');

    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, {
      order: 'mutate=[labeller] validate=[gatekeeper]',
      authorize: [],
      mutate: [
        {
          name: 'labeller',
          source: 'plugin',
          plugin: 'add-label',
          phase: 'mutate',
          order: 10,
          mode: 'enforce',
          failurePolicy: 'Ignore',
          timeoutSeconds: 2,
          sideEffects: 'None',
          reinvocationPolicy: 'IfNeeded',
          match: MATCH_EVERYTHING,
          level: 0,
        },
      ],
      validate: [
        {
          name: 'gatekeeper',
          source: 'plugin',
          plugin: 'deny-with-reason',
          phase: 'validate',
          order: 20,
          mode: 'audit',
          failurePolicy: 'Fail',
          timeoutSeconds: 10,
          sideEffects: 'None',
          reinvocationPolicy: 'Never',
          match: PODS_ONLY,
        },
      ],
      providers: [],
    });
  });

  it('lists a remote provider in /chain at its position, with its URL and a closed breaker', async function () {
    provider = await startFakeProvider();
    const h = await start(`
chain:
  - { plugin: add-label, name: labeller, settings: { labels: { checked: 'yes' } } }
  - provider: scanner
    url: ${provider.url('/allow')}
    caBundle: ${provider.caBundle}
    phases: [mutate]
    failurePolicy: Ignore
    timeoutSeconds: 2
`);

    const body = (await h.ops('/chain')).body as { order: string; mutate: Array<Record<string, unknown>> };

    assert.equal(body.order, 'mutate=[labeller,scanner] validate=[]');
    const { breaker, ...step } = body.mutate[1] ?? {};
    assert.deepEqual(step, {
      name: 'scanner',
      source: 'provider',
      provider: 'scanner',
      phase: 'mutate',
      order: 20,
      url: provider.url('/allow'),
      admissionReviewVersion: 'admission.k8s.io/v1',
      mode: 'enforce',
      failurePolicy: 'Ignore',
      timeoutSeconds: 2,
      sideEffects: 'None',
      reinvocationPolicy: 'Never',
      match: MATCH_EVERYTHING,
      level: 1,
    });
    assert.equal((breaker as { state?: string } | undefined)?.state, 'closed');
  });

  it('exposes the gateway metrics and the process metrics, with exact values after known traffic', async function () {
    const h = await start();
    reviewOf(await h.post('/mutate', podCreate()));
    reviewOf(await h.post('/mutate', podCreate()));
    reviewOf(await h.post('/validate', podCreate()));
    await h.post('/validate', 'not json', { 'content-type': 'text/plain' });

    const answer = await h.ops('/metrics');

    assert.equal(answer.status, 200);
    assert.match(String(answer.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    const types = new Set(
      [...answer.text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name, type]) => `${name} ${type}`),
    );
    for (const expected of [
      'admission_gateway_requests_total counter',
      'admission_gateway_request_duration_seconds histogram',
      'admission_gateway_step_calls_total counter',
      'admission_gateway_step_duration_seconds histogram',
      'admission_gateway_fail_open_total counter',
      'admission_gateway_breaker_state gauge',
      'admission_gateway_patch_conflicts_total counter',
      'admission_gateway_inflight_requests gauge',
      'admission_gateway_process_cpu_seconds_total counter',
      'admission_gateway_process_resident_memory_bytes gauge',
      'admission_gateway_nodejs_eventloop_lag_seconds gauge',
    ]) {
      assert.ok(types.has(expected), `missing # TYPE ${expected}`);
    }
    const values = samples(answer.text);
    const expected: Array<[string, number]> = [
      [series('admission_gateway_requests_total', { phase: 'mutate', operation: 'CREATE', allowed: 'true' }), 2],
      [series('admission_gateway_requests_total', { phase: 'validate', operation: 'CREATE', allowed: 'true' }), 1],
      [series('admission_gateway_request_duration_seconds_count', { phase: 'mutate' }), 2],
      [series('admission_gateway_request_duration_seconds_count', { phase: 'validate' }), 1],
      [series('admission_gateway_step_calls_total', { step: 'labeller', phase: 'mutate', outcome: 'patched' }), 2],
      [series('admission_gateway_step_calls_total', { step: 'gatekeeper', phase: 'validate', outcome: 'denied' }), 1],
      [series('admission_gateway_step_duration_seconds_count', { step: 'labeller', phase: 'mutate' }), 2],
      [series('admission_gateway_step_duration_seconds_count', { step: 'gatekeeper', phase: 'validate' }), 1],
      [series('admission_gateway_invalid_requests_total', { code: '415' }), 1],
      [series('admission_gateway_inflight_requests'), 0],
      [series('admission_gateway_chain_steps', { phase: 'mutate' }), 1],
      [series('admission_gateway_chain_steps', { phase: 'validate' }), 1],
    ];
    assert.deepEqual(
      expected.map(([key]) => [key, values.get(key)]),
      expected,
    );
    const requestSeries = [...values.keys()].filter((key) => key.startsWith('admission_gateway_requests_total{'));
    assert.equal(requestSeries.length, 2, `unexpected series: ${requestSeries.join(' ')}`);
    assert.ok(values.get('admission_gateway_process_cpu_seconds_total')! > 0);
  });

  it('never uses a uid, name or namespace as a label value', async function () {
    const h = await start();
    await h.post('/mutate', podCreate());
    await h.post('/validate', podCreate());

    const text = (await h.ops('/metrics')).text;

    for (const value of ['0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21', '"web"', '"team-a"', 'alice@example.com']) {
      assert.ok(!text.includes(value), `metrics contain ${value}`);
    }
  });

  it('answers 405 to a POST and 404 naming the endpoints to an unknown path', async function () {
    const h = await start();

    const posted = await h.ops('/metrics', 'POST');
    const unknown = await h.ops('/debug/vars');

    assert.deepEqual({ status: posted.status, allow: posted.headers.allow }, { status: 405, allow: 'HEAD, GET' });
    assert.deepEqual(
      { status: unknown.status, body: unknown.body },
      {
        status: 404,
        body: { error: 'not found; try /metrics, /chain, /openapi/v3, /explain (probes: server.healthPort)' },
      },
    );
  });
});
