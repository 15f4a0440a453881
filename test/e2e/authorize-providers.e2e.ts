/**
 * Remote authorize providers behind the gateway, which is the apiserver's authorization webhook (before RBAC):
 * a provider's denial reaches the user in the 403, and a provider that hangs under `failurePolicy: Ignore`
 * leaves RBAC in charge after its timeout while its breaker opens, so the apiserver stops waiting for it.
 */
import assert from 'node:assert/strict';
import type { CoreV1Api } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { SAR_DENY_REASON, startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import {
  TEST_USERS,
  apiError,
  core,
  coreAs,
  createNamespace,
  deleteNamespace,
  eventually,
  grant,
  randomSuffix,
  revokeGrant,
  statusOf,
} from './cluster.js';
import { anyFailed, metricValue, startE2EGateway, type E2EGateway } from './gateway.js';

const SUITE = 'authz-providers';
const READERS_GROUP = 'e2e:readers';
const CONFIG_MAP = 'settings';

describe('remote authorize providers behind the gateway (authorization webhook before RBAC)', function () {
  let reader: CoreV1Api;
  let fake: FakeProvider | undefined;
  let gw: E2EGateway | undefined;
  const role = `e2e-authz-configmap-reader-${randomSuffix()}`;
  let denied = '';
  let hanging = '';

  before(async function () {
    reader = coreAs(TEST_USERS.reader);
    denied = await createNamespace(SUITE);
    hanging = await createNamespace(SUITE);
    for (const namespace of [denied, hanging]) {
      await core().createNamespacedConfigMap({ namespace, body: { metadata: { name: CONFIG_MAP }, data: { a: 'b' } } });
    }
    await grant(
      role,
      [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
      [READERS_GROUP],
      [denied, hanging],
    );
    fake = await startFakeProvider();
    const provider = (name: string, behaviour: string, namespace: string, more: object = {}) => ({
      provider: name,
      url: fake!.url(`/${behaviour}`),
      caBundle: fake!.caBundle,
      phases: ['authorize'],
      authorizeMatch: { verbs: ['get'], resources: ['configmaps'], namespaces: [namespace] },
      ...more,
    });
    gw = await startE2EGateway({
      suite: SUITE,
      authorizationWebhook: true,
      chain: stringify([
        provider('remote-policy', 'sar-deny', denied),
        provider('stuck-policy', 'hang', hanging, {
          failurePolicy: 'Ignore',
          timeoutSeconds: 1,
          circuitBreaker: { volumeThreshold: 2, errorThresholdPercentage: 50, resetTimeoutSeconds: 600 },
        }),
      ]),
      mutating: [{ name: 'mutate', route: 'mutate', rules: [] }],
    });
    await eventually('RBAC to let the reader read ConfigMaps', async () => {
      await reader.readNamespacedConfigMap({ name: CONFIG_MAP, namespace: hanging });
      return true;
    });
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    await fake?.close();
    await revokeGrant(role, [denied, hanging]);
    for (const namespace of [denied, hanging]) if (namespace !== '') await deleteNamespace(namespace);
  });

  it('refuses what the provider denies, with its reason, though RBAC would allow it', async function () {
    const err = await apiError(reader.readNamespacedConfigMap({ name: CONFIG_MAP, namespace: denied }));
    assert.equal(err.code, 403);
    assert.equal(
      statusOf(err).message,
      `configmaps "${CONFIG_MAP}" is forbidden: User "${TEST_USERS.reader.name}" cannot get resource "configmaps" ` +
        `in API group "" in the namespace "${denied}": remote-policy: ${SAR_DENY_REASON}`,
    );
    const sent = fake!.reviews().filter((c) => c.path === '/sar-deny');
    assert.ok(sent.length >= 1);
    const spec = (sent[0]!.review as unknown as { spec: { user: string; resourceAttributes: object } }).spec;
    assert.equal(spec.user, TEST_USERS.reader.name);
    assert.deepEqual(spec.resourceAttributes, {
      namespace: denied,
      verb: 'get',
      group: '',
      version: 'v1',
      resource: 'configmaps',
      subresource: '',
      name: CONFIG_MAP,
    });
  });

  it('leaves a hanging Ignore provider to RBAC after its timeout, and its breaker opens', async function () {
    const stepCalls = async (outcome: string) =>
      metricValue(await gw!.metrics(), 'admission_gateway_step_calls_total', {
        step: 'stuck-policy',
        phase: 'authorize',
        outcome,
      }) ?? 0;
    const breaker = async () =>
      metricValue(await gw!.metrics(), 'admission_gateway_breaker_state', { provider: 'stuck-policy' });
    // Each read waits for the provider's timeout, then RBAC allows it; after volumeThreshold (2) timeouts
    // the breaker is open (`before` may have made one of them already).
    for (let i = 0; i < 2 && (await breaker()) !== 2; i++) {
      const read = await reader.readNamespacedConfigMap({ name: CONFIG_MAP, namespace: hanging });
      assert.deepEqual(read.data, { a: 'b' });
    }
    assert.equal(await breaker(), 2);
    assert.equal(await stepCalls('timeout'), 2);
    const calls = fake!.reviews().filter((c) => c.path === '/hang').length;
    const open = await stepCalls('circuit_open');

    // Open: the provider is not called any more, and RBAC decides at once.
    const read = await reader.readNamespacedConfigMap({ name: CONFIG_MAP, namespace: hanging });
    assert.deepEqual(read.data, { a: 'b' });
    assert.equal(fake!.reviews().filter((c) => c.path === '/hang').length, calls);
    assert.equal(await stepCalls('circuit_open'), open + 1);
  });
});
