import assert from 'node:assert/strict';
import { apiError, core, plain, randomSuffix, readStatus, statusOf, warningTexts } from './cluster.js';
import { anyFailed, metricValue, startE2EGateway, type E2EGateway } from './gateway.js';
import { EXPLOSION, ORDER_ANNOTATION } from './plugins.js';
import { pausePod } from './objects.js';

// Two webhooks split by failure policy (routes /mutate/fail and /mutate/ignore). The same throwing
// plugin runs twice: as `explode-fail` (failurePolicy Fail) for Pods labelled e2e-explode=fail and as
// `explode-ignore` (Ignore) for e2e-explode=ignore, between steps that mutate.
const CHAIN = `
- plugin: default-labels
  settings: { labels: { admissiongateway.io/admitted: 'true' } }
- plugin: explode
  name: explode-fail
  failurePolicy: Fail
  match:
    rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] }]
    objectSelector: { matchLabels: { e2e-explode: fail } }
- plugin: record-order
  name: before-explosion
  failurePolicy: Ignore
  settings: { token: before-explosion }
- plugin: explode
  name: explode-ignore
  failurePolicy: Ignore
  match:
    rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] }]
    objectSelector: { matchLabels: { e2e-explode: ignore } }
- plugin: resource-defaults
  failurePolicy: Ignore
  settings:
    requests: { cpu: 50m, memory: 32Mi }
    limits: { memory: 128Mi }
`;

const POD_RULE = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };

const pod = (name: string, explode: string) => pausePod(name, { 'e2e-explode': explode });

describe('failurePolicy of a failing step through a real kube-apiserver', function () {
  let gw: E2EGateway | undefined;
  let namespace: string;

  before(async function () {
    gw = await startE2EGateway({
      suite: 'failure-policy',
      chain: CHAIN,
      mutating: [
        { name: 'fail', route: 'mutate/fail', failurePolicy: 'Fail', rules: [POD_RULE] },
        { name: 'ignore', route: 'mutate/ignore', failurePolicy: 'Ignore', rules: [POD_RULE] },
      ],
    });
    namespace = await gw.namespace();
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
  });

  it('refuses the Pod when the throwing step has failurePolicy Fail, naming the step and the reason', async function () {
    const name = `fail-${randomSuffix()}`;
    const err = await apiError(core().createNamespacedPod({ namespace, body: pod(name, 'fail') }));
    assert.equal(err.code, 500);
    assert.equal(
      statusOf(err).message,
      `admission webhook "${gw!.webhookName('fail')}" denied the request: ` +
        `plugin "explode-fail" failed (error): ${EXPLOSION}`,
    );
    assert.equal(await readStatus(() => core().readNamespacedPod({ name, namespace })), 404);
  });

  it('creates the Pod when the throwing step has failurePolicy Ignore, with the other steps mutations and a warning', async function () {
    const name = `ignore-${randomSuffix()}`;
    const { headers } = await core().createNamespacedPodWithHttpInfo({ namespace, body: pod(name, 'ignore') });
    assert.deepEqual(warningTexts(headers), [`explode-ignore: failed open (error): ${EXPLOSION}`]);

    const stored = await core().readNamespacedPod({ name, namespace });
    assert.deepEqual(stored.metadata?.labels, { 'e2e-explode': 'ignore', 'admissiongateway.io/admitted': 'true' });
    assert.equal(stored.metadata?.annotations?.[ORDER_ANNOTATION], 'before-explosion', 'the step before it');
    assert.deepEqual(
      plain(stored.spec?.containers[0]?.resources),
      { requests: { cpu: '50m', memory: '32Mi' }, limits: { memory: '128Mi' } },
      'the step after it',
    );
  });

  it('stays ready and counts the failures it caused in /metrics', async function () {
    const ready = await fetch(`${gw!.gateway.healthUrl}/readyz`);
    assert.equal(ready.status, 200);
    const text = await gw!.metrics();
    const steps = (step: string, outcome: string) =>
      metricValue(text, 'admission_gateway_step_calls_total', { step, phase: 'mutate', outcome });
    assert.equal(steps('explode-fail', 'error'), 1);
    assert.equal(steps('explode-ignore', 'error'), 1);
    assert.equal(steps('before-explosion', 'patched'), 1, 'only the Pod the Fail webhook let through');
    assert.equal(metricValue(text, 'admission_gateway_fail_open_total', { step: 'explode-ignore' }), 1);
    assert.equal(metricValue(text, 'admission_gateway_fail_open_total', { step: 'explode-fail' }), undefined);
    assert.equal(
      metricValue(text, 'admission_gateway_requests_total', { phase: 'mutate', operation: 'CREATE', allowed: 'false' }),
      1,
    );
  });
});
