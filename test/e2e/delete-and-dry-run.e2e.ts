import assert from 'node:assert/strict';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { apiError, core, randomSuffix, readStatus, statusOf } from './cluster.js';
import { anyFailed, metricValue, startE2EGateway, type E2EGateway, podCreateWebhook } from './gateway.js';
import { ORDER_ANNOTATION } from './plugins.js';
import { pausePod } from './objects.js';

// `side-effects` declares sideEffects: Some, so the gateway skips it on dry-run requests (the webhook
// registration itself says sideEffects: None, which the apiserver requires for dry-run).
const CHAIN = `
- plugin: default-labels
  settings: { labels: { admissiongateway.io/admitted: 'true' } }
- plugin: record-order
  name: side-effects
  sideEffects: Some
  settings: { token: side-effects }
- plugin: protect-configmaps
`;

function configMap(name: string, labels: Record<string, string>): V1ConfigMap {
  return { metadata: { name, labels }, data: { key: 'value' } };
}

describe('DELETE and server-side dry-run through a real kube-apiserver', function () {
  let gw: E2EGateway | undefined;
  let namespace: string;

  before(async function () {
    gw = await startE2EGateway({
      suite: 'delete-dry-run',
      chain: CHAIN,
      mutating: [podCreateWebhook('mutate')],
      validating: [
        {
          name: 'validate',
          route: 'validate',
          rules: [{ operations: ['DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
        },
      ],
    });
    namespace = await gw.namespace();
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
  });

  it('refuses to delete a protected ConfigMap with the plugin message, and the ConfigMap is still there', async function () {
    const name = `protected-${randomSuffix()}`;
    await core().createNamespacedConfigMap({ namespace, body: configMap(name, { protected: 'true' }) });
    const err = await apiError(core().deleteNamespacedConfigMap({ name, namespace }));
    assert.equal(err.code, 403);
    assert.equal(
      statusOf(err).message,
      `admission webhook "${gw!.webhookName('validate')}" denied the request: ` +
        `protect-configmaps: configmap ${name} is protected; remove the label protected=true first`,
    );
    const stored = await core().readNamespacedConfigMap({ name, namespace });
    assert.equal(stored.metadata?.labels?.protected, 'true');
    assert.deepEqual(stored.data, { key: 'value' });
  });

  it('deletes an unprotected ConfigMap after the gateway allowed the DELETE', async function () {
    const name = `unprotected-${randomSuffix()}`;
    await core().createNamespacedConfigMap({ namespace, body: configMap(name, { protected: 'false' }) });
    await core().deleteNamespacedConfigMap({ name, namespace });
    assert.equal(await readStatus(() => core().readNamespacedConfigMap({ name, namespace })), 404);
    const text = await gw!.metrics();
    const calls = (outcome: string) =>
      metricValue(text, 'admission_gateway_step_calls_total', {
        step: 'protect-configmaps',
        phase: 'validate',
        outcome,
      });
    assert.equal(calls('denied'), 1, 'the protected ConfigMap of the previous test');
    assert.equal(calls('allowed'), 1, 'this DELETE went through the gateway');
    assert.equal(
      metricValue(text, 'admission_gateway_requests_total', {
        phase: 'validate',
        operation: 'DELETE',
        allowed: 'true',
      }),
      1,
    );
  });

  it('answers a dry-run create with the mutations applied but stores nothing', async function () {
    const name = `dry-run-${randomSuffix()}`;
    const answered = await core().createNamespacedPod({ namespace, body: pausePod(name), dryRun: 'All' });
    assert.deepEqual(answered.metadata?.labels, { 'admissiongateway.io/admitted': 'true' });
    assert.equal(
      answered.metadata?.annotations?.[ORDER_ANNOTATION],
      undefined,
      'the step with side effects is skipped on dry-run',
    );
    assert.equal(await readStatus(() => core().readNamespacedPod({ name, namespace })), 404);
  });

  it('runs the step with side effects on a real create', async function () {
    const name = `real-${randomSuffix()}`;
    await core().createNamespacedPod({ namespace, body: pausePod(name) });
    const stored = await core().readNamespacedPod({ name, namespace });
    assert.deepEqual(stored.metadata?.labels, { 'admissiongateway.io/admitted': 'true' });
    assert.equal(stored.metadata?.annotations?.[ORDER_ANNOTATION], 'side-effects');
  });
});
