import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { PROVIDER_API_VERSION } from '../../server/kube/admission-provider.js';
import { FORCE_DELETE_ANNOTATION } from '../../server/kube/provider-finalizer.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import {
  GROUP,
  customObjects,
  deleteProviderCrd,
  deleteProvider,
  ensureCrd,
  mergePatchProvider,
  patchingProviderSpec,
  providerGone,
  readProvider,
} from './admission-providers.js';
import {
  SUITE_LABEL,
  apiError,
  core,
  eventually,
  randomSuffix,
  readStatus,
  statusOf,
  warningTexts,
} from './cluster.js';
import { anyFailed, metricValue, startE2EGateway, type E2EGateway } from './gateway.js';
import { getChain } from './http.js';
import { pausePod } from './objects.js';

// A gateway in cluster mode with two opt-in AdmissionProviders of one conflict group, both the fake provider's
// `patch` (the label provider=patched): `sidecar` runs only for the Pods whose namespace or own annotation
// admissiongateway.io/extensions names it, and `other-sidecar` is its alternative. The chain has no entry of
// its own besides the registration probes.
const SUITE = 'opt-in-extensions';
const REFERENCES = 'admissiongateway.io/extensions';
const APPLIED = 'admissiongateway.io/extensions-applied';
const POD_RULE = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };

/** An opt-in provider of conflict group `sidecars`, patching Pods at the fake's /<name>/patch. */
function optInProvider(fake: FakeProvider, name: string, order: number): Record<string, unknown> {
  return {
    apiVersion: PROVIDER_API_VERSION,
    kind: 'AdmissionProvider',
    metadata: { name },
    spec: {
      ...patchingProviderSpec(fake, name, order),
      attach: 'OptIn',
      conflictGroup: 'sidecars',
      match: { rules: [POD_RULE] },
    },
  };
}

/** A namespace selected by this file's webhooks whose own annotation references `references`. */
async function referencingNamespace(references: string): Promise<string> {
  const name = `${SUITE}-ns-${randomSuffix()}`;
  await core().createNamespace({
    body: { metadata: { name, labels: { [SUITE_LABEL]: SUITE }, annotations: { [REFERENCES]: references } } },
  });
  return name;
}

/** A Pod labelled app=e2e, its own annotation referencing `references` when given. */
function pod(references?: string): V1Pod {
  const body = pausePod(`pod-${randomSuffix()}`, { app: 'e2e' });
  if (references !== undefined) body.metadata!.annotations = { [REFERENCES]: references };
  return body;
}

describe('opt-in AdmissionProviders through a real kube-apiserver', function () {
  let fake: FakeProvider;
  let gw: E2EGateway | undefined;
  let crdCreated = false;
  /** Referenced by nothing. */
  let plain: string;
  /** Its annotation references sidecar. */
  let referencing: string;

  before(async function () {
    crdCreated = await ensureCrd();
    fake = await startFakeProvider();
    gw = await startE2EGateway({
      suite: SUITE,
      chain: '[]',
      mutating: [{ name: 'mutate', route: 'mutate', rules: [POD_RULE] }],
      validating: [{ name: 'validate', route: 'validate', rules: [POD_RULE] }],
      clusterMode: { backoff: { initialMs: 200, maxMs: 1000 }, statusIntervalMs: 200, servedFlushMs: 200 },
    });
    for (const [name, order] of [
      ['sidecar', 100],
      ['other-sidecar', 110],
    ] as const) {
      await customObjects().createClusterCustomObject({ ...GROUP, body: optInProvider(fake, name, order) });
    }
    await eventually('both opt-in providers in the chain', async () => {
      const chain = await getChain(gw!.gateway.opsUrl);
      const names = chain.mutate.filter((s) => s.source === 'provider').map((s) => s.name);
      return names.includes('sidecar') && names.includes('other-sidecar') ? true : undefined;
    });
    plain = await gw.namespace();
    referencing = await referencingNamespace('sidecar');
  });

  after(async function () {
    // A namespace still references sidecar, so the gateway holds it with its finalizer: force it out while the
    // gateway runs to give the finalizer up, so no provider (and no CRD) is left Terminating for later files.
    const providers = ['sidecar', 'other-sidecar'];
    await Promise.all(
      providers.map((name) =>
        mergePatchProvider(name, { metadata: { annotations: { [FORCE_DELETE_ANNOTATION]: 'true' } } }).catch(
          () => undefined,
        ),
      ),
    );
    await Promise.all(providers.map(deleteProvider));
    await eventually('the opt-in providers to be gone', async () =>
      (await Promise.all(providers.map(providerGone))).every(Boolean) ? true : undefined,
    );
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    await fake?.close();
    // The cluster as this file found it: a CRD created here goes (with whatever AdmissionProviders are left).
    if (crdCreated) await deleteProviderCrd();
  });

  const calls = (name: string) => fake.reviews().filter((c) => c.path === `/${name}/patch`).length;

  /** Creates the Pod and returns what the apiserver stored, with the warnings it answered. */
  async function create(namespace: string, body: V1Pod): Promise<{ stored: V1Pod; warnings: string[] }> {
    const { headers } = await core().createNamespacedPodWithHttpInfo({ namespace, body });
    const stored = await core().readNamespacedPod({ namespace, name: body.metadata!.name! });
    return { stored, warnings: warningTexts(headers) };
  }

  it('shows the providers opt-in, with their conflict group, in /chain', async function () {
    const chain = await getChain(gw!.gateway.opsUrl);
    const shown = chain.mutate
      .filter((s) => s.source === 'provider')
      .map(({ name, attach, conflictGroup }) => [name, attach, conflictGroup]);
    assert.deepEqual(shown, [
      ['sidecar', 'OptIn', 'sidecars'],
      ['other-sidecar', 'OptIn', 'sidecars'],
    ]);
  });

  it('runs for the Pods of a namespace that references it, and stores extensions-applied on them', async function () {
    const before = calls('sidecar');
    for (let i = 0; i < 2; i++) {
      const { stored, warnings } = await create(referencing, pod());
      assert.deepEqual(stored.metadata?.labels, { app: 'e2e', provider: 'patched' });
      assert.deepEqual(stored.metadata?.annotations, { [APPLIED]: 'sidecar' });
      assert.deepEqual(warnings, []);
    }
    assert.equal(calls('sidecar') - before, 2);
  });

  it('runs for a Pod in another namespace that references it itself, and for no other Pod there', async function () {
    const before = { sidecar: calls('sidecar'), other: calls('other-sidecar') };

    const own = await create(plain, pod('sidecar'));
    const none = await create(plain, pod());

    assert.deepEqual(own.stored.metadata?.labels, { app: 'e2e', provider: 'patched' });
    assert.deepEqual(own.stored.metadata?.annotations, { [REFERENCES]: 'sidecar', [APPLIED]: 'sidecar' });
    assert.deepEqual(none.stored.metadata?.labels, { app: 'e2e' });
    assert.equal(none.stored.metadata?.annotations, undefined);
    assert.deepEqual(
      { sidecar: calls('sidecar') - before.sidecar, other: calls('other-sidecar') - before.other },
      { sidecar: 1, other: 0 },
    );
    // Counted once per object, in the mutate phase; the validating webhook saw the Pods too.
    const metrics = await gw!.metrics();
    assert.equal(
      metricValue(metrics, 'admission_gateway_extension_reviews_total', { extension: 'sidecar', phase: 'mutate' }),
      3,
    );
    assert.equal(
      metricValue(metrics, 'admission_gateway_extension_reviews_total', { extension: 'sidecar', phase: 'validate' }),
      undefined,
    );
    // The same three objects in the provider's status, with the one namespace that references it.
    await eventually('sidecar’s status to count its namespace and the three objects it served', async () => {
      const references = (await readProvider('sidecar')).status?.references;
      const served = (references?.objects ?? 0) + (references?.previousWindowObjects ?? 0);
      return references?.namespaces === 1 && served === 3 ? true : undefined;
    });
  });

  it('warns the user, once, about a reference to no entry of the chain', async function () {
    const { stored, warnings } = await create(plain, pod('sidecars'));

    assert.deepEqual(warnings, [
      'admissiongateway.io/extensions: the object references "sidecars", which is no entry of the gateway\'s ' +
        'chain (did you mean "sidecar"?): nothing runs for it',
    ]);
    assert.deepEqual(stored.metadata?.labels, { app: 'e2e' });
    assert.deepEqual(stored.metadata?.annotations, { [REFERENCES]: 'sidecars' });
  });

  it("applies the Pod's choice in the conflict group over its namespace's, and says so", async function () {
    const { stored, warnings } = await create(referencing, pod('other-sidecar'));

    assert.deepEqual(stored.metadata?.annotations, { [REFERENCES]: 'other-sidecar', [APPLIED]: 'other-sidecar' });
    assert.deepEqual(warnings, [
      `admissiongateway.io/extensions: namespace "${referencing}" references "sidecar", which is not applied: the ` +
        'object references "other-sidecar" of the same conflict group "sidecars", and the object\'s choice wins',
    ]);
  });

  it('refuses a Pod that references two providers of one conflict group, with the message', async function () {
    const body = pod('sidecar,other-sidecar');
    const before = calls('sidecar') + calls('other-sidecar');

    const err = await apiError(core().createNamespacedPod({ namespace: plain, body }));

    assert.equal(err.code, 400);
    assert.equal(
      statusOf(err).message,
      `admission webhook "${gw!.webhookName('mutate')}" denied the request: the object's annotation ` +
        'admissiongateway.io/extensions references "sidecar" and "other-sidecar", both of conflict group ' +
        '"sidecars", and one object may use only one entry of a conflict group: keep one of them in the ' +
        "object's admissiongateway.io/extensions",
    );
    assert.equal(
      await readStatus(() => core().readNamespacedPod({ namespace: plain, name: body.metadata!.name! })),
      404,
    );
    assert.equal(calls('sidecar') + calls('other-sidecar'), before, 'neither provider was called');
  });
});
