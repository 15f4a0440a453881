/**
 * `matchConditions` on a chain entry through a real kube-apiserver (README "Match conditions"): a plugin step whose
 * condition is false is skipped for a Pod; and, from Kubernetes 1.30, the webhook `manifests` renders for that step
 * carries the condition, so that the apiserver does not call the gateway at all for a Pod it excludes.
 */
import assert from 'node:assert/strict';
import type { V1ValidatingWebhookConfiguration } from '@kubernetes/client-node';
import {
  SUITE_LABEL,
  admissionRegistration,
  apiError,
  core,
  eventually,
  kubeVersion,
  randomSuffix,
  requireKube,
  statusOf,
} from './cluster.js';
import { anyFailed, metricValue, startE2EGateway, type E2EGateway } from './gateway.js';
import { webAndAgentPod } from './objects.js';
import { renderWebhookConfigurations } from '../../server/manifests/render.js';
import { renderStepsOf } from '../../server/manifests/steps.js';

const PODS = `{ rules: [ { operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] } ] }`;
const CHAIN = `
- plugin: require-labels
  settings: { labels: [owner] }
  match: ${PODS}
  matchConditions:
    - name: prod-only
      expression: object.metadata.?labels.?tier.orValue('') == 'prod'
`;
const POD_RULE = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };

/** How many times the gateway ran, skipped or settled the step, whatever the outcome. */
async function stepCalls(gw: E2EGateway): Promise<number> {
  const text = await gw.metrics();
  let total = 0;
  for (const outcome of ['allowed', 'denied', 'skipped', 'error', 'timeout']) {
    total +=
      metricValue(text, 'admission_gateway_step_calls_total', { step: 'require-labels', phase: 'validate', outcome }) ??
      0;
  }
  return total;
}

describe('matchConditions on a plugin step, through a real kube-apiserver', function () {
  describe('behind a webhook without conditions', function () {
    let gw: E2EGateway | undefined;
    let namespace: string;

    before(async function () {
      gw = await startE2EGateway({
        suite: 'match-conditions',
        chain: CHAIN,
        validating: [{ name: 'validate', route: 'validate', rules: [POD_RULE] }],
      });
      namespace = await gw.namespace();
    });

    after(async function () {
      await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    });

    it('skips the step for a Pod its condition excludes: created, and counted as skipped', async function () {
      // The probe's ConfigMaps count as skipped too (the step's rules are for Pods): count what this Pod adds.
      const skipped = async () =>
        metricValue(await gw!.metrics(), 'admission_gateway_step_calls_total', {
          step: 'require-labels',
          phase: 'validate',
          outcome: 'skipped',
        }) ?? 0;
      const before = await skipped();
      const name = `dev-${randomSuffix()}`;
      await core().createNamespacedPod({ namespace, body: webAndAgentPod(name, { tier: 'dev' }) });
      assert.equal((await core().readNamespacedPod({ name, namespace })).metadata?.name, name);
      assert.equal(await skipped(), before + 1);
    });

    it('runs the step for a Pod its condition selects', async function () {
      const name = `prod-${randomSuffix()}`;
      const err = await apiError(
        core().createNamespacedPod({ namespace, body: webAndAgentPod(name, { tier: 'prod' }) }),
      );
      assert.equal(
        statusOf(err).message,
        `admission webhook "${gw!.webhookName('validate')}" denied the request: require-labels: missing required label: owner`,
      );
    });
  });

  describe('behind the webhook `manifests` renders for it', function () {
    let gw: E2EGateway | undefined;
    let namespace: string;
    const configName = `match-conditions-rendered-${randomSuffix()}`;

    before(async function () {
      requireKube(this, 30, 'webhook matchConditions');
      gw = await startE2EGateway({
        suite: 'match-conditions-rendered',
        chain: CHAIN,
        // Only the probe's ConfigMaps: the Pods reach the gateway through the rendered webhook alone.
        validating: [{ name: 'probe', route: 'validate', rules: [] }],
      });
      namespace = await gw.namespace();
      const steps = renderStepsOf(gw.gateway.chain()).filter((s) => s.name === 'require-labels');
      const [rendered] = renderWebhookConfigurations(steps, {
        name: configName,
        target: { kind: 'url', url: gw.gateway.webhookUrl },
        caBundle: gw.caBundle,
        gatewayNamespace: 'admission-gateway',
        namespaceLabels: { [SUITE_LABEL]: 'match-conditions-rendered' },
        deadlineMarginMs: 250,
        defaultTimeoutSeconds: 10,
        kubeVersion: { major: 1, minor: kubeVersion()[1] },
      });
      const body = rendered as unknown as V1ValidatingWebhookConfiguration;
      assert.deepEqual(
        body.webhooks?.[0]?.matchConditions?.map((c) => c.name),
        ['exclude-namespaces', 'exclude-leases', 'steps-match'],
      );
      await admissionRegistration().createValidatingWebhookConfiguration({ body });
      // The configuration reaches the apiserver's admission chain through an informer: wait until it acts.
      await eventually('the rendered webhook to refuse a selected Pod', async () => {
        const err = await apiError(
          core().createNamespacedPod({
            namespace,
            body: webAndAgentPod(`wait-${randomSuffix()}`, { tier: 'prod' }),
            dryRun: 'All',
          }),
        ).catch(() => undefined);
        return err ? true : undefined;
      });
    });

    after(async function () {
      await admissionRegistration()
        .deleteValidatingWebhookConfiguration({ name: configName })
        .catch(() => undefined);
      await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    });

    it('is not called for a Pod the condition excludes: no review reaches the gateway', async function () {
      const before = await stepCalls(gw!);
      const name = `dev-${randomSuffix()}`;
      await core().createNamespacedPod({ namespace, body: webAndAgentPod(name, { tier: 'dev' }) });
      assert.equal((await core().readNamespacedPod({ name, namespace })).metadata?.name, name);
      assert.equal(await stepCalls(gw!), before);
    });

    it('is called for a Pod the condition selects, and the step refuses it', async function () {
      const before = await stepCalls(gw!);
      const err = await apiError(
        core().createNamespacedPod({ namespace, body: webAndAgentPod(`prod-${randomSuffix()}`, { tier: 'prod' }) }),
      );
      assert.match(statusOf(err).message ?? '', /require-labels: missing required label: owner$/);
      assert.equal(await stepCalls(gw!), before + 1);
    });
  });
});
