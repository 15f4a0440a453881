import assert from 'node:assert/strict';
import { apiError, core, randomSuffix, readStatus, statusOf } from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';
import { webAndAgentPod } from './objects.js';
import { MEMORY_LIMITS_CHAIN } from '../fixtures/memory-limits-policy.js';

describe('a policy step written in CEL through a real kube-apiserver', function () {
  let gw: E2EGateway | undefined;
  let namespace: string;
  let denied: string;

  before(async function () {
    gw = await startE2EGateway({
      suite: 'cel-policy',
      chain: MEMORY_LIMITS_CHAIN,
      validating: [
        {
          name: 'validate',
          route: 'validate',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        },
      ],
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
