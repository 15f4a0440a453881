import assert from 'node:assert/strict';
import { core, plain, randomSuffix } from './cluster.js';
import { webAndAgentPod } from './objects.js';
import { anyFailed, metricValue, startE2EGateway, type E2EGateway, podCreateWebhook } from './gateway.js';
import { ORDER_ANNOTATION, SEEN_ANNOTATION_PREFIX } from './plugins.js';

const MIRRORED_NGINX = 'mirror.e2e.example/dockerhub/library/nginx:1.25';

// Three record-order steps interleaved with three shipped mutating plugins: each record-order step
// appends its token to one annotation and notes what it saw, so the stored Pod proves the order.
const CHAIN = `
- plugin: record-order
  name: first
  settings: { token: first }
- plugin: default-labels
  settings:
    labels: { admissiongateway.io/admitted: 'true', tier: e2e }
    annotations: { admissiongateway.io/owner: platform }
- plugin: record-order
  name: second
  settings: { token: second }
- plugin: resource-defaults
  settings:
    requests: { cpu: 100m, memory: 64Mi }
    limits: { memory: 256Mi }
- plugin: image-policy
  settings:
    mirrors: { docker.io: mirror.e2e.example/dockerhub }
- plugin: record-order
  name: third
  settings: { token: third }
`;

describe('the mutating chain through a real kube-apiserver', function () {
  let gw: E2EGateway | undefined;
  let namespace: string;
  let created = 0;

  before(async function () {
    gw = await startE2EGateway({
      suite: 'chain-order',
      chain: CHAIN,
      mutating: [podCreateWebhook('mutate')],
    });
    namespace = await gw.namespace();
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
  });

  it('stores the Pod with every step applied, each step seeing the result of the steps before it', async function () {
    const name = `order-${randomSuffix()}`;
    await core().createNamespacedPod({ namespace, body: webAndAgentPod(name, { app: 'web' }) });
    created++;
    const stored = await core().readNamespacedPod({ name, namespace });

    assert.deepEqual(stored.metadata?.labels, { app: 'web', 'admissiongateway.io/admitted': 'true', tier: 'e2e' });
    assert.deepEqual(stored.metadata?.annotations, {
      'admissiongateway.io/owner': 'platform',
      [ORDER_ANNOTATION]: 'first,second,third',
      [`${SEEN_ANNOTATION_PREFIX}first`]: 'image=nginx:1.25;cpu=none;labels=app',
      [`${SEEN_ANNOTATION_PREFIX}second`]: 'image=nginx:1.25;cpu=none;labels=admissiongateway.io/admitted|app|tier',
      [`${SEEN_ANNOTATION_PREFIX}third`]: `image=${MIRRORED_NGINX};cpu=100m;labels=admissiongateway.io/admitted|app|tier`,
    });
    const [web, agent] = stored.spec?.containers ?? [];
    assert.equal(web?.image, MIRRORED_NGINX);
    assert.deepEqual(plain(web?.resources), { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '256Mi' } });
    assert.equal(agent?.image, 'quay.io/acme/agent:v2', 'only docker.io has a mirror');
    assert.deepEqual(plain(agent?.resources), {
      requests: { cpu: '250m', memory: '64Mi' },
      limits: { cpu: '500m', memory: '256Mi' },
    });
  });

  it('keeps a label value the user set (default-labels does not overwrite)', async function () {
    const name = `user-label-${randomSuffix()}`;
    await core().createNamespacedPod({ namespace, body: webAndAgentPod(name, { app: 'web', tier: 'prod' }) });
    created++;
    const stored = await core().readNamespacedPod({ name, namespace });
    assert.deepEqual(stored.metadata?.labels, { app: 'web', tier: 'prod', 'admissiongateway.io/admitted': 'true' });
    assert.equal(stored.metadata?.annotations?.[ORDER_ANNOTATION], 'first,second,third');
  });

  it('counts one patched call per Pod for each record-order step in /metrics', async function () {
    const text = await gw!.metrics();
    for (const step of ['first', 'second', 'third']) {
      const labels = { step, phase: 'mutate', outcome: 'patched' };
      assert.equal(metricValue(text, 'admission_gateway_step_calls_total', labels), created, step);
    }
  });
});
