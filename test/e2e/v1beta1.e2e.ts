import assert from 'node:assert/strict';
import { apiError, core, randomSuffix, readStatus, statusOf } from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';
import { pausePod } from './objects.js';

const CHAIN = `
- plugin: default-labels
  settings: { labels: { admissiongateway.io/admitted: 'true' } }
- plugin: require-labels
  settings: { labels: [team] }
`;

const POD_RULE = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };

// The webhooks go through the suite's recording pass-through, so the test sees the AdmissionReview
// versions on the wire, not only the outcome.
describe('a webhook registered with admissionReviewVersions [v1beta1]', function () {
  let gw: E2EGateway | undefined;
  let namespace: string;

  before(async function () {
    gw = await startE2EGateway({
      suite: 'v1beta1',
      chain: CHAIN,
      tap: true,
      mutating: [{ name: 'mutate', route: 'mutate', admissionReviewVersions: ['v1beta1'], rules: [POD_RULE] }],
      validating: [{ name: 'validate', route: 'validate', admissionReviewVersions: ['v1beta1'], rules: [POD_RULE] }],
    });
    namespace = await gw.namespace();
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
  });

  it('is sent admission.k8s.io/v1beta1 reviews, answers in kind, and its patch is applied', async function () {
    const name = `beta-${randomSuffix()}`;
    const before = gw!.exchanges.length;
    await core().createNamespacedPod({ namespace, body: pausePod(name, { team: 'infra' }) });
    const stored = await core().readNamespacedPod({ name, namespace });
    assert.deepEqual(stored.metadata?.labels, { team: 'infra', 'admissiongateway.io/admitted': 'true' });

    const pods = gw!.exchanges.slice(before).filter((x) => x.kind === 'Pod');
    assert.deepEqual(
      pods.map(({ path, requestApiVersion, responseApiVersion, status, allowed }) => ({
        path,
        requestApiVersion,
        responseApiVersion,
        status,
        allowed,
      })),
      ['/mutate', '/validate'].map((path) => ({
        path,
        requestApiVersion: 'admission.k8s.io/v1beta1',
        responseApiVersion: 'admission.k8s.io/v1beta1',
        status: 200,
        allowed: true,
      })),
    );
  });

  it('refuses through a v1beta1 review with the plugin message', async function () {
    const name = `beta-no-team-${randomSuffix()}`;
    const err = await apiError(core().createNamespacedPod({ namespace, body: pausePod(name, {}) }));
    assert.equal(err.code, 403);
    assert.equal(
      statusOf(err).message,
      `admission webhook "${gw!.webhookName('validate')}" denied the request: ` +
        'require-labels: missing required label: team',
    );
    assert.equal(await readStatus(() => core().readNamespacedPod({ name, namespace })), 404);
  });
});
