import assert from 'node:assert/strict';
import { apiError, apps, randomSuffix, readStatus, statusOf } from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';
import { pauseDeployment } from './objects.js';

const CHAIN = `
- plugin: require-labels
  settings: { labels: [team, cost-center] }
- plugin: pod-security
`;

// Not `privileged: true` for the pod-security denial: this apiserver runs without --allow-privileged,
// so its own validation (which runs before validating webhooks) refuses privileged containers first.
const withCapability = (capability: string) => ({
  container: { securityContext: { capabilities: { add: [capability] } } },
});

describe('validating plugins in enforce mode through a real kube-apiserver', function () {
  let gw: E2EGateway | undefined;
  let namespace: string;
  let denied: string;

  before(async function () {
    gw = await startE2EGateway({
      suite: 'refusal',
      chain: CHAIN,
      validating: [
        {
          name: 'validate',
          route: 'validate',
          rules: [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }],
        },
      ],
    });
    namespace = await gw.namespace();
    denied = `admission webhook "${gw.webhookName('validate')}" denied the request: `;
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
  });

  it('refuses a Deployment without the team label with require-labels message, and stores nothing', async function () {
    const name = `no-team-${randomSuffix()}`;
    const err = await apiError(
      apps().createNamespacedDeployment({ namespace, body: pauseDeployment(name, { 'cost-center': 'c42' }) }),
    );
    assert.equal(err.code, 403);
    const status = statusOf(err);
    assert.equal(status.message, `${denied}require-labels: missing required label: team`);
    assert.equal(status.code, 403);
    assert.equal(await readStatus(() => apps().readNamespacedDeployment({ name, namespace })), 404);
  });

  it('names every missing label in one message', async function () {
    const name = `no-labels-${randomSuffix()}`;
    const err = await apiError(apps().createNamespacedDeployment({ namespace, body: pauseDeployment(name, {}) }));
    assert.equal(statusOf(err).message, `${denied}require-labels: missing required labels: team, cost-center`);
    assert.equal(await readStatus(() => apps().readNamespacedDeployment({ name, namespace })), 404);
  });

  it('reports the denials of all validating steps, each prefixed with its step, in chain order', async function () {
    const name = `two-denials-${randomSuffix()}`;
    const err = await apiError(
      apps().createNamespacedDeployment({
        namespace,
        body: pauseDeployment(name, { 'cost-center': 'c42' }, withCapability('NET_ADMIN')),
      }),
    );
    assert.equal(
      statusOf(err).message,
      `${denied}require-labels: missing required label: team; ` +
        'pod-security: spec.template.spec.containers[0].securityContext.capabilities.add: ' +
        'capability NET_ADMIN is not allowed',
    );
    assert.equal(await readStatus(() => apps().readNamespacedDeployment({ name, namespace })), 404);
  });

  it('creates the Deployment once the team and cost-center labels are set', async function () {
    const name = `with-team-${randomSuffix()}`;
    await apps().createNamespacedDeployment({
      namespace,
      body: pauseDeployment(name, { team: 'payments', 'cost-center': 'c42' }),
    });
    const stored = await apps().readNamespacedDeployment({ name, namespace });
    assert.deepEqual(stored.metadata?.labels, { team: 'payments', 'cost-center': 'c42' });
  });
});
