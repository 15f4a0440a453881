import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { core, randomSuffix, warningTexts } from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway, podCreateWebhook } from './gateway.js';
import { pausePod } from './objects.js';

const CHAIN = `
- plugin: pod-security
  mode: warn
- plugin: require-labels
  mode: warn
  settings: { labels: [team] }
`;

const HOST_PATH_WARNING =
  'pod-security: spec.volumes[0].hostPath: hostPath volumes are not allowed (volume "host") (mode warn: not enforced)';

// A hostPath volume rather than `privileged: true`: this apiserver runs without --allow-privileged, so
// its own validation refuses privileged containers (422) before any validating webhook is called.
function hostPathPod(name: string, labels: Record<string, string>): V1Pod {
  return pausePod(name, labels, {
    pod: { securityContext: { runAsNonRoot: true }, volumes: [{ name: 'host', hostPath: { path: '/var/log' } }] },
    container: { volumeMounts: [{ name: 'host', mountPath: '/host/var/log', readOnly: true }] },
  });
}

// client-node's `...WithHttpInfo` calls return the response headers next to the body; the apiserver
// sends each admission warning as one `Warning: 299 - "<text>"` header.
describe('validating plugins in warn mode through a real kube-apiserver', function () {
  let gw: E2EGateway | undefined;
  let namespace: string;

  before(async function () {
    gw = await startE2EGateway({
      suite: 'warnings',
      chain: CHAIN,
      validating: [podCreateWebhook('validate')],
    });
    namespace = await gw.namespace();
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
  });

  it('lets a Pod with a hostPath volume through and the apiserver returns the pod-security warning', async function () {
    const name = `host-path-${randomSuffix()}`;
    const { data, headers } = await core().createNamespacedPodWithHttpInfo({
      namespace,
      body: hostPathPod(name, { team: 'infra' }),
    });
    assert.equal(data.metadata?.name, name);
    assert.deepEqual(warningTexts(headers), [HOST_PATH_WARNING]);
    const stored = await core().readNamespacedPod({ name, namespace });
    assert.equal(stored.spec?.volumes?.[0]?.hostPath?.path, '/var/log');
  });

  it('returns one warning per step that would have denied', async function () {
    const name = `two-warnings-${randomSuffix()}`;
    const { headers } = await core().createNamespacedPodWithHttpInfo({ namespace, body: hostPathPod(name, {}) });
    assert.deepEqual(warningTexts(headers).sort(), [
      HOST_PATH_WARNING,
      'require-labels: missing required label: team (mode warn: not enforced)',
    ]);
    assert.equal((await core().readNamespacedPod({ name, namespace })).metadata?.name, name);
  });

  it('returns no warning for a compliant Pod', async function () {
    const name = `compliant-${randomSuffix()}`;
    const body: V1Pod = {
      metadata: { name, labels: { team: 'infra' } },
      spec: {
        securityContext: { runAsNonRoot: true },
        containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.9' }],
      },
    };
    const { headers } = await core().createNamespacedPodWithHttpInfo({ namespace, body });
    assert.deepEqual(warningTexts(headers), []);
  });
});
