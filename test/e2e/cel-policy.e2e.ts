import assert from 'node:assert/strict';
import { apiError, core, randomSuffix, readStatus, statusOf } from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway, podCreateWebhook } from './gateway.js';
import { webAndAgentPod } from './objects.js';
import { MEMORY_LIMITS_CHAIN } from '../fixtures/memory-limits-policy.js';
import { LOG_SHIPPER_CHAIN, TEAM_LABEL_CHAIN } from '../fixtures/mutation-policies.js';

describe('a policy step written in CEL through a real kube-apiserver', function () {
  let gw: E2EGateway | undefined;
  let namespace: string;
  let denied: string;

  before(async function () {
    gw = await startE2EGateway({
      suite: 'cel-policy',
      chain: MEMORY_LIMITS_CHAIN,
      validating: [podCreateWebhook('validate')],
    });
    namespace = await gw.namespace();
    denied = `admission webhook "${gw.webhookName('validate')}" denied the request: `;
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
  });

  it('refuses a Pod whose containers lack memory limits, naming them, as Invalid (422), and stores nothing', async function () {
    const name = `no-limits-${randomSuffix()}`;
    const err = await apiError(core().createNamespacedPod({ namespace, body: webAndAgentPod(name, {}) }));
    assert.equal(err.code, 422);
    const status = statusOf(err);
    assert.equal(status.message, `${denied}memory-limits: every container needs a memory limit: web, agent`);
    assert.equal(status.reason, 'Invalid');
    assert.equal(await readStatus(() => core().readNamespacedPod({ name, namespace })), 404);
  });

  it('creates a Pod whose every container has a memory limit', async function () {
    const name = `with-limits-${randomSuffix()}`;
    const body = webAndAgentPod(name, {});
    for (const c of body.spec!.containers) c.resources = { limits: { memory: '64Mi' } };
    await core().createNamespacedPod({ namespace, body });
    const stored = await core().readNamespacedPod({ name, namespace });
    assert.equal(stored.metadata?.name, name);
  });
});

describe('mutating policy steps written in CEL through a real kube-apiserver', function () {
  let gw: E2EGateway | undefined;
  let namespace: string;

  before(async function () {
    gw = await startE2EGateway({
      suite: 'cel-policy-mutations',
      chain: `${TEAM_LABEL_CHAIN}${LOG_SHIPPER_CHAIN}`,
      mutating: [podCreateWebhook('mutate')],
    });
    namespace = await gw.namespace();
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
  });

  it('stores a Pod with the JSONPatch label and the ApplyConfiguration container merged by name', async function () {
    const name = `mutated-${randomSuffix()}`;
    const body = webAndAgentPod(name, { app: 'web' });
    body.metadata!.annotations = { 'acme.io/ship-logs': 'true' };
    body.spec!.containers.push({ name: 'log-shipper', image: 'ghcr.io/acme/log-shipper:2.1.0', args: ['--v=1'] });
    await core().createNamespacedPod({ namespace, body });
    const stored = await core().readNamespacedPod({ name, namespace });

    assert.deepEqual(stored.metadata?.labels, { app: 'web', 'acme.io/team': namespace });
    const shipper = stored.spec?.containers.find((c) => c.name === 'log-shipper');
    assert.deepEqual(
      [stored.spec?.containers.map((c) => c.name), shipper?.args, shipper?.env?.map((e) => [e.name, e.value])],
      [['web', 'agent', 'log-shipper'], ['--v=1'], [['POD_NAME', name]]],
    );
  });

  it('stores a Pod that does not ask for the log shipper with the label only', async function () {
    const name = `plain-${randomSuffix()}`;
    await core().createNamespacedPod({ namespace, body: webAndAgentPod(name, {}) });
    const stored = await core().readNamespacedPod({ name, namespace });

    assert.deepEqual(stored.metadata?.labels, { 'acme.io/team': namespace });
    assert.deepEqual(
      stored.spec?.containers.map((c) => c.name),
      ['web', 'agent'],
    );
  });
});
