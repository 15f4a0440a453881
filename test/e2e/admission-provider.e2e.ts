import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import {
  ApiException,
  AuthorizationV1Api,
  RbacAuthorizationV1Api,
  type V1ClusterRole,
  type V1ClusterRoleBinding,
  type V1CustomResourceDefinition,
  type V1Pod,
} from '@kubernetes/client-node';
import jsonpatch from 'fast-json-patch';
import {
  PROVIDER_GROUP,
  PROVIDER_PLURAL,
  PROVIDER_VERSION,
  type AdmissionProvider,
  type AdmissionProviderStatus,
} from '../../server/kube/admission-provider.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import {
  SUITE_LABEL,
  apiError,
  core,
  eventually,
  kubeAtLeast,
  kubeConfig,
  randomSuffix,
  readStatus,
  startApiserver,
  statusOf,
  stopApiserver,
} from './cluster.js';
import { anyFailed, metricValue, startE2EGateway, type E2EGateway } from './gateway.js';
import { apiserverGet, getChain, getReadiness, mutateOrder, postReview, type ChainView } from './http.js';
import { manifestDocuments, toModel, toWire } from './manifests.js';
import { ORDER_ANNOTATION, SEEN_ANNOTATION_PREFIX } from './plugins.js';
import {
  CRD_NAME,
  apiextensions,
  createProvider,
  deleteProviderCrd,
  deleteProvider,
  mergePatchProvider,
  patchingProviderSpec,
  readProvider,
} from './admission-providers.js';
import { pausePod } from './objects.js';

// A gateway in cluster mode (as `serve` runs with a kubeconfig) whose chain is two `record-order` steps
// at orders 10 and 20 (each records the label keys it saw); AdmissionProviders pointing at a fake provider
// that adds the label `provider: patched` are created, moved, broken and deleted while it runs.
const SUITE = 'admission-provider';
const POD_LABEL = 'e2e-provider';
const pod = (name: string, provider: string) => pausePod(name, { [POD_LABEL]: provider });
const CHAIN = `
- plugin: record-order
  name: first
  settings: { token: first }
- plugin: record-order
  name: second
  settings: { token: second }
`;
const PROBES: [string, number][] = [
  ['e2e-probe-fail', 30],
  ['e2e-probe-ignore', 40],
];
const POD_RULE = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };

const rbac = () => kubeConfig().makeApiClient(RbacAuthorizationV1Api);
const authorization = () => kubeConfig().makeApiClient(AuthorizationV1Api);

/** The spec of a provider named `name` at `order`: the fake's /<name>/patch, for Pods labelled e2e-provider=<name>. */
function providerSpec(fake: FakeProvider, name: string, order: number): Record<string, unknown> {
  return {
    ...patchingProviderSpec(fake, name, order),
    match: {
      rules: [POD_RULE],
      namespaceSelector: { matchLabels: { [SUITE_LABEL]: SUITE } },
      objectSelector: { matchLabels: { [POD_LABEL]: name } },
    },
  };
}

/** The status without the condition timestamps (checked to be RFC 3339 times, then dropped). */
function comparable(status: AdmissionProviderStatus | undefined): unknown {
  if (!status) return undefined;
  return {
    ...status,
    conditions: status.conditions?.map(({ lastTransitionTime, ...rest }) => {
      assert.ok(!Number.isNaN(Date.parse(lastTransitionTime)), `lastTransitionTime ${lastTransitionTime}`);
      return rest;
    }),
  };
}

/** The status a valid provider in the chain with a closed breaker has at `generation`. */
function readyStatus(generation: number): unknown {
  return {
    observedGeneration: generation,
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'InChain',
        message: 'the provider is part of the chain',
        observedGeneration: generation,
      },
      {
        type: 'Discovered',
        status: 'True',
        reason: 'NotRequired',
        message: 'discovery is off; the configured phases are served',
        observedGeneration: generation,
      },
      {
        type: 'CircuitOpen',
        status: 'False',
        reason: 'Closed',
        message: 'calls go to the provider',
        observedGeneration: generation,
      },
      currentVersions(generation),
    ],
    handlers: [],
    breaker: 'closed',
    references: { namespaces: 0 },
  };
}

/** The Deprecated condition of a provider called in admission.k8s.io/v1 only. */
function currentVersions(generation: number): unknown {
  return {
    type: 'Deprecated',
    status: 'False',
    reason: 'CurrentVersions',
    message: 'calls are made in admission.k8s.io/v1',
    observedGeneration: generation,
  };
}

/** Waits until the provider's status is `expected` (timestamps aside); returns the resource. */
async function statusBecomes(name: string, expected: unknown, what: string): Promise<AdmissionProvider> {
  return eventually(`the status of ${name} to be ${what}`, async () => {
    const resource = await readProvider(name);
    assert.deepEqual(comparable(resource.status), expected);
    return resource;
  });
}

async function chainWhere(opsUrl: string, what: string, check: (chain: ChainView) => boolean): Promise<ChainView> {
  return eventually(`/chain to show ${what}`, async () => {
    const chain = await getChain(opsUrl);
    if (!check(chain)) throw new Error(`/chain is ${chain.order}`);
    return chain;
  });
}

const hasStep = (name: string) => (chain: ChainView) => chain.mutate.some((s) => s.name === name);

/** What `record-order` writes for a Pod of pod() when it saw these label keys. */
const seen = (...labels: string[]) => `image=registry.k8s.io/pause:3.9;cpu=none;labels=${labels.sort().join('|')}`;

describe('AdmissionProvider resources watched live by a gateway in cluster mode', function () {
  let fake: FakeProvider;
  let gw: E2EGateway | undefined;
  let namespace: string;
  let crdWire: Record<string, unknown>;

  before(async function () {
    // The readiness test needs the gateway to start while the CRD does not exist (the cluster is fresh
    // on every run; a CRD left by a kept cluster is removed first).
    await deleteProviderCrd();
    [crdWire] = (await manifestDocuments('crd-admissionprovider.yaml')) as [Record<string, unknown>];
    fake = await startFakeProvider();
    gw = await startE2EGateway({
      suite: SUITE,
      chain: CHAIN,
      mutating: [{ name: 'mutate', route: 'mutate', rules: [POD_RULE], timeoutSeconds: 10 }],
      clusterMode: { backoff: { initialMs: 200, maxMs: 1000 }, statusIntervalMs: 200 },
    });
    namespace = await gw.namespace();
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    await fake?.close();
    // Deleting the CRD deletes the AdmissionProviders left with it.
    await deleteProviderCrd();
  });

  const opsUrl = () => gw!.gateway.opsUrl;
  const healthUrl = () => gw!.gateway.healthUrl;
  const providerCalls = (name: string) => fake.reviews().filter((c) => c.path === `/${name}/patch`).length;

  async function createPod(provider: string): Promise<V1Pod> {
    const name = `${provider}-${randomSuffix()}`;
    await core().createNamespacedPod({ namespace, body: pod(name, provider) });
    return core().readNamespacedPod({ name, namespace });
  }

  it('is not ready until the AdmissionProvider list has synced, and ready once the CRD is served', async function () {
    const unsynced = await getReadiness(healthUrl());
    assert.equal(unsynced.status, 503);
    assert.equal(unsynced.body.ready, false);
    assert.deepEqual(
      unsynced.body.checks.map((c) => [c.name, c.ready]),
      [
        ['config', true],
        ['certificate', true],
        ['shutdown', true],
        ['providers', false],
      ],
    );
    assert.match(
      unsynced.body.checks[3]?.detail ?? '',
      /^AdmissionProvider list not synced: .*404/,
      'names the failing list (the resource is not served yet)',
    );

    // Apply the CRD for real and wait until it is served.
    await apiextensions().createCustomResourceDefinition({
      body: toModel<V1CustomResourceDefinition>(crdWire, 'V1CustomResourceDefinition'),
    });
    const crd = await eventually('the CRD to be Established', async () => {
      const read = await apiextensions().readCustomResourceDefinition({ name: CRD_NAME });
      return read.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ? read : undefined;
    });
    // Stored as written: the schema (list types, defaults, the aliased selector) and the printer columns.
    const wireSpec = crdWire.spec as { versions: Record<string, unknown>[] };
    assert.deepEqual(toWire(crd.spec.versions[0]?.schema, 'V1CustomResourceValidation'), wireSpec.versions[0]?.schema);
    assert.deepEqual(
      toWire(crd.spec.versions[0]?.additionalPrinterColumns, 'Array<V1CustomResourceColumnDefinition>'),
      wireSpec.versions[0]?.additionalPrinterColumns,
    );

    await eventually('/readyz to answer 200', async () =>
      (await getReadiness(healthUrl())).status === 200 ? true : undefined,
    );
    const synced = await getReadiness(healthUrl());
    assert.deepEqual(synced.body, {
      ready: true,
      checks: [
        { name: 'config', ready: true },
        { name: 'certificate', ready: true },
        { name: 'shutdown', ready: true },
        { name: 'providers', ready: true },
      ],
    });
  });

  it('refuses through the CRD schema what the gateway would refuse', async function () {
    const valid = providerSpec(fake, 'never-created', 50);
    const cases: [Record<string, unknown>, string][] = [
      [
        { timeoutSeconds: 31 },
        'spec.timeoutSeconds: Invalid value: 31: spec.timeoutSeconds in body should be less than or equal to 30',
      ],
      [
        { url: 'http://127.0.0.1:1/plain' },
        `spec.url: Invalid value: "http://127.0.0.1:1/plain": spec.url in body should match '^https://[^?#\\s]+$'`,
      ],
      [
        { phases: ['admit'] },
        // 1.20 (the floor) names the list, newer apiservers the item.
        `spec.phases${kubeAtLeast(21) ? '[0]' : ''}: Unsupported value: "admit": supported values: "mutate", "validate", "authorize"`,
      ],
      [
        { failurePolicy: 'Retry' },
        'spec.failurePolicy: Unsupported value: "Retry": supported values: "Fail", "Ignore"',
      ],
      [
        { service: { namespace: 'providers', name: 'scanner' } },
        '<nil>: Invalid value: "": "spec" must validate one and only one schema (oneOf). Found 2 valid alternatives',
      ],
      [
        { circuitBreaker: { volumeThreshold: 0 } },
        'spec.circuitBreaker.volumeThreshold: Invalid value: 0: spec.circuitBreaker.volumeThreshold in body should be greater than or equal to 1',
      ],
      [
        { match: { rules: [{ ...POD_RULE, resources: ['pods/a/b'] }] } },
        kubeAtLeast(21)
          ? `spec.match.rules[0].resources[0]: Invalid value: "pods/a/b": spec.match.rules[0].resources[0] in body should match '^[^/]+(/[^/]+)?$'`
          : `spec.match.rules.resources: Invalid value: "pods/a/b": spec.match.rules.resources in body should match '^[^/]+(/[^/]+)?$'`,
      ],
    ];
    for (const [change, expected] of cases) {
      const name = `invalid-${randomSuffix()}`;
      const err = await apiError(createProvider(name, { ...valid, ...change }));
      assert.equal(err.code, 422, JSON.stringify(change));
      assert.equal(statusOf(err).message, `AdmissionProvider.admissiongateway.io "${name}" is invalid: ${expected}`);
    }
    assert.deepEqual(
      (await getChain(opsUrl())).mutate.filter((s) => s.source === 'provider'),
      [],
      'nothing reached the gateway',
    );
  });

  it('puts a new AdmissionProvider into the chain at its order and reports it Ready', async function () {
    await createProvider('patcher', providerSpec(fake, 'patcher', 15));
    const chain = await chainWhere(opsUrl(), 'patcher', hasStep('patcher'));
    assert.deepEqual(mutateOrder(chain), [['first', 10], ['patcher', 15], ['second', 20], ...PROBES]);
    const step = chain.mutate.find((s) => s.name === 'patcher');
    assert.equal(step?.source, 'provider');
    assert.equal(step?.url, fake.url('/patcher/patch'));
    assert.equal(step?.failurePolicy, 'Fail');
    assert.equal(step?.breaker?.state, 'closed');
    assert.equal(
      chain.validate.some((s) => s.name === 'patcher'),
      false,
      'phases: [mutate] only',
    );

    const stored = await createPod('patcher');
    assert.deepEqual(stored.metadata?.labels, { [POD_LABEL]: 'patcher', provider: 'patched' });
    assert.equal(stored.metadata?.annotations?.[ORDER_ANNOTATION], 'first,second');
    assert.equal(stored.metadata?.annotations?.[`${SEEN_ANNOTATION_PREFIX}first`], seen(POD_LABEL));
    assert.equal(stored.metadata?.annotations?.[`${SEEN_ANNOTATION_PREFIX}second`], seen(POD_LABEL, 'provider'));
    assert.equal(providerCalls('patcher'), 1);

    const resource = await statusBecomes('patcher', readyStatus(1), 'Ready (generation 1)');
    assert.equal(resource.metadata.generation, 1);
  });

  it('lists AdmissionProviders with the printer columns kubectl shows', async function () {
    const table = await apiserverGet(
      `/apis/${PROVIDER_GROUP}/${PROVIDER_VERSION}/${PROVIDER_PLURAL}`,
      'application/json;as=Table;v=v1;g=meta.k8s.io',
    );
    assert.equal(table.status, 200);
    const body = table.body as {
      kind?: string;
      columnDefinitions: { name: string; type: string; priority?: number }[];
      rows: { cells: unknown[] }[];
    };
    assert.equal(body.kind, 'Table');
    assert.deepEqual(
      body.columnDefinitions.map((c) => [c.name, c.type, c.priority ?? 0]),
      [
        ['Name', 'string', 0],
        ['Order', 'integer', 0],
        ['Phases', 'string', 0],
        ['Ready', 'string', 0],
        ['Breaker', 'string', 0],
        ['Namespaces', 'integer', 0],
        ['Deprecated', 'string', 1],
        ['Objects', 'integer', 1],
        ['URL', 'string', 1],
        ['Age', 'date', 0],
      ],
    );
    const row = body.rows.find((r) => r.cells[0] === 'patcher');
    assert.ok(row, `a row for patcher in ${JSON.stringify(body.rows.map((r) => r.cells[0]))}`);
    // No namespace references it; it never served as an opt-in extension (no count yet: an empty cell).
    assert.deepEqual(row.cells.slice(0, 9), [
      'patcher',
      15,
      '["mutate"]',
      'True',
      'closed',
      0,
      'False',
      null,
      fake.url('/patcher/patch'),
    ]);
    assert.equal(typeof row.cells[9], 'string', 'Age');
  });

  it('moves the provider when spec.order changes, and the steps after it see its label', async function () {
    await mergePatchProvider('patcher', { spec: { order: 5 } });
    const chain = await chainWhere(opsUrl(), 'patcher at order 5', (c) => c.mutate[0]?.name === 'patcher');
    assert.deepEqual(mutateOrder(chain), [['patcher', 5], ['first', 10], ['second', 20], ...PROBES]);

    const stored = await createPod('patcher');
    assert.deepEqual(stored.metadata?.labels, { [POD_LABEL]: 'patcher', provider: 'patched' });
    assert.equal(stored.metadata?.annotations?.[`${SEEN_ANNOTATION_PREFIX}first`], seen(POD_LABEL, 'provider'));
    assert.equal(stored.metadata?.annotations?.[`${SEEN_ANNOTATION_PREFIX}second`], seen(POD_LABEL, 'provider'));

    const resource = await statusBecomes('patcher', readyStatus(2), 'Ready (generation 2)');
    assert.equal(resource.metadata.generation, 2);
  });

  it('reports a spec the schema accepts but the gateway refuses, and keeps the last good spec running', async function () {
    const before = await getChain(opsUrl());
    await mergePatchProvider('patcher', { spec: { caBundle: Buffer.from('not a cert').toString('base64') } });
    const resource = await statusBecomes(
      'patcher',
      {
        observedGeneration: 3,
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'InvalidSpec',
            message: 'spec.caBundle: expected base64 of PEM certificates. The last valid spec keeps running.',
            observedGeneration: 3,
          },
          {
            type: 'Discovered',
            status: 'True',
            reason: 'NotRequired',
            message: 'discovery is off; the configured phases are served',
            observedGeneration: 3,
          },
          {
            type: 'CircuitOpen',
            status: 'False',
            reason: 'Closed',
            message: 'calls go to the provider',
            observedGeneration: 3,
          },
          currentVersions(3),
        ],
        handlers: [],
        lastError: 'spec.caBundle: expected base64 of PEM certificates',
        breaker: 'closed',
        references: { namespaces: 0 },
      },
      'InvalidSpec (generation 3)',
    );
    assert.equal(resource.metadata.generation, 3);

    const after = await getChain(opsUrl());
    assert.deepEqual(mutateOrder(after), [['patcher', 5], ['first', 10], ['second', 20], ...PROBES]);
    assert.deepEqual(
      after.mutate.find((s) => s.name === 'patcher'),
      before.mutate.find((s) => s.name === 'patcher'),
      'the step is the one before the change',
    );
    const calls = providerCalls('patcher');
    const stored = await createPod('patcher');
    assert.deepEqual(stored.metadata?.labels, { [POD_LABEL]: 'patcher', provider: 'patched' });
    assert.equal(providerCalls('patcher'), calls + 1, 'still called, with the trust of the last good spec');
  });

  it('drops a deleted provider from the chain', async function () {
    await deleteProvider('patcher');
    const chain = await chainWhere(opsUrl(), 'no patcher', (c) => !hasStep('patcher')(c));
    assert.deepEqual(mutateOrder(chain), [['first', 10], ['second', 20], ...PROBES]);
    assert.deepEqual(chain.providers, []);

    const calls = providerCalls('patcher');
    const stored = await createPod('patcher');
    assert.deepEqual(stored.metadata?.labels, { [POD_LABEL]: 'patcher' }, 'not patched any more');
    assert.equal(stored.metadata?.annotations?.[`${SEEN_ANNOTATION_PREFIX}first`], seen(POD_LABEL));
    assert.equal(providerCalls('patcher'), calls, 'not called');
  });

  it('calls a provider that speaks only admission.k8s.io/v1beta1 in it, stores its patch, and reports it Deprecated=True', async function () {
    await createProvider('legacy', {
      ...providerSpec(fake, 'legacy', 25),
      url: fake.url('/legacy/v1beta1-patch'),
      admissionReviewVersions: ['v1beta1'],
    });
    await chainWhere(opsUrl(), 'legacy', hasStep('legacy'));

    const stored = await createPod('legacy');
    assert.deepEqual(stored.metadata?.labels, { [POD_LABEL]: 'legacy', provider: 'patched' });
    assert.deepEqual(
      fake
        .reviews()
        .filter((c) => c.path === '/legacy/v1beta1-patch')
        .map((c) => c.apiVersion),
      ['admission.k8s.io/v1beta1'],
    );
    const notice =
      'legacy (mutate) called in admission.k8s.io/v1beta1 is deprecated since admission-gateway 0.1.0 and spoken ' +
      'until at least 0.4.0: serve admission.k8s.io/v1 and list v1 first in admissionReviewVersions';
    const ready = readyStatus(1) as { conditions: unknown[] };
    await statusBecomes(
      'legacy',
      {
        ...ready,
        conditions: [
          ...ready.conditions.slice(0, 3),
          { type: 'Deprecated', status: 'True', reason: 'DeprecatedVersion', message: notice, observedGeneration: 1 },
        ],
      },
      'Deprecated',
    );
    const deprecated = async () =>
      metricValue(await gw!.metrics(), 'admission_gateway_provider_deprecated_version', {
        provider: 'legacy',
        version: 'admission.k8s.io/v1beta1',
      });
    assert.equal(await deprecated(), 1);

    await deleteProvider('legacy');
    await chainWhere(opsUrl(), 'no legacy', (c) => !hasStep('legacy')(c));
    assert.equal(await deprecated(), undefined, 'the gauge goes with the provider');
  });

  it("reports a provider's open circuit breaker in its status", async function () {
    await createProvider('flaky', {
      ...providerSpec(fake, 'flaky', 30),
      url: fake.url('/flaky/hang'),
      failurePolicy: 'Ignore',
      timeoutSeconds: 1,
      circuitBreaker: { volumeThreshold: 1, errorThresholdPercentage: 50, resetTimeoutSeconds: 300 },
    });
    await chainWhere(opsUrl(), 'flaky', hasStep('flaky'));
    await statusBecomes('flaky', readyStatus(1), 'Ready');

    // One timed-out call opens it (volumeThreshold 1); the Pod is stored all the same (Ignore).
    const stored = await createPod('flaky');
    assert.deepEqual(stored.metadata?.labels, { [POD_LABEL]: 'flaky' });
    await statusBecomes(
      'flaky',
      {
        observedGeneration: 1,
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'InChain',
            message: 'the provider is part of the chain',
            observedGeneration: 1,
          },
          {
            type: 'Discovered',
            status: 'True',
            reason: 'NotRequired',
            message: 'discovery is off; the configured phases are served',
            observedGeneration: 1,
          },
          {
            type: 'CircuitOpen',
            status: 'True',
            reason: 'Open',
            message: 'calls fail fast through the failurePolicy',
            observedGeneration: 1,
          },
          currentVersions(1),
        ],
        handlers: [],
        breaker: 'open',
        references: { namespaces: 0 },
      },
      'CircuitOpen',
    );
    const step = (await getChain(opsUrl())).mutate.find((s) => s.name === 'flaky');
    assert.equal(step?.breaker?.state, 'open');
    assert.equal(providerCalls('flaky'), 0, 'its path is /flaky/hang, not /flaky/patch');
    assert.equal(fake.reviews().filter((c) => c.path === '/flaky/hang').length, 1);

    await deleteProvider('flaky');
    await chainWhere(opsUrl(), 'no flaky', (c) => !hasStep('flaky')(c));
  });

  it('keeps serving the last good chain while the apiserver is down, and resyncs when it is back', async function () {
    this.timeout(180_000);
    await createProvider('keeper', providerSpec(fake, 'keeper', 25));
    await chainWhere(opsUrl(), 'keeper', hasStep('keeper'));
    await statusBecomes('keeper', readyStatus(1), 'Ready');

    const watchFailures = async () =>
      (await gw!.logLines()).filter(
        (l) => l.informer === 'admissionproviders' && l.msg === 'list/watch failed; retrying',
      ).length;
    const failuresBefore = await watchFailures();
    try {
      await stopApiserver();
      await eventually('the AdmissionProvider watcher to report the lost connection', async () =>
        (await watchFailures()) > failuresBefore ? true : undefined,
      );
      assert.equal(
        (await getReadiness(healthUrl())).status,
        200,
        'stays ready on its synced cache while the apiserver is away',
      );

      // The apiserver cannot call anyone now: review a Pod straight through the gateway's webhook server.
      // Its namespace's labels (the provider's namespaceSelector) come from the informer's cache.
      const object = pod(`keeper-${randomSuffix()}`, 'keeper');
      const uid = randomUUID();
      const calls = providerCalls('keeper');
      const { status, answer } = await postReview(gw!.gateway, gw!.dir, 'mutate', {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: {
          uid,
          kind: { group: '', version: 'v1', kind: 'Pod' },
          resource: { group: '', version: 'v1', resource: 'pods' },
          requestKind: { group: '', version: 'v1', kind: 'Pod' },
          requestResource: { group: '', version: 'v1', resource: 'pods' },
          name: object.metadata?.name,
          namespace,
          operation: 'CREATE',
          userInfo: { username: 'admin', groups: ['system:masters', 'system:authenticated'] },
          object,
          oldObject: null,
          dryRun: false,
          options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
        },
      });
      assert.equal(status, 200);
      assert.equal(answer.response?.uid, uid);
      assert.equal(answer.response?.allowed, true);
      assert.equal(answer.response?.patchType, 'JSONPatch');
      const ops = JSON.parse(
        Buffer.from(answer.response?.patch ?? '', 'base64').toString('utf8'),
      ) as jsonpatch.Operation[];
      const patched = jsonpatch.applyPatch(structuredClone(object), ops, true, false).newDocument;
      assert.deepEqual(patched.metadata?.labels, { [POD_LABEL]: 'keeper', provider: 'patched' });
      assert.equal(patched.metadata?.annotations?.[ORDER_ANNOTATION], 'first,second');
      assert.equal(providerCalls('keeper'), calls + 1);
    } finally {
      await startApiserver();
    }

    // Created after the restart: only a watcher that reconnected can see it.
    await eventually('creating an AdmissionProvider after the restart', async () => {
      await createProvider('after-restart', providerSpec(fake, 'after-restart', 26)).catch((err: unknown) => {
        if (!(err instanceof ApiException && err.code === 409)) throw err;
      });
      return true;
    });
    const chain = await chainWhere(opsUrl(), 'after-restart', hasStep('after-restart'));
    assert.deepEqual(mutateOrder(chain), [
      ['first', 10],
      ['second', 20],
      ['keeper', 25],
      ['after-restart', 26],
      ...PROBES,
    ]);
    await statusBecomes('after-restart', readyStatus(1), 'Ready');
    await statusBecomes('keeper', readyStatus(1), 'still Ready');

    // The apiserver's own webhook informer may need a moment after its start: retry with fresh names.
    const stored = await eventually('the apiserver to admit a Pod after its restart', () => createPod('after-restart'));
    assert.deepEqual(stored.metadata?.labels, { [POD_LABEL]: 'after-restart', provider: 'patched' });
    assert.equal(providerCalls('after-restart'), 1);
  });

  it('ships RBAC the apiserver accepts and that grants exactly what cluster mode uses', async function () {
    const [roleWire, bindingWire] = (await manifestDocuments('rbac.yaml')) as [
      Record<string, unknown>,
      Record<string, unknown>,
    ];
    const role = toModel<V1ClusterRole>(roleWire, 'V1ClusterRole');
    const binding = toModel<V1ClusterRoleBinding>(bindingWire, 'V1ClusterRoleBinding');
    const dryRole = await rbac().createClusterRole({ body: role, dryRun: 'All' });
    const dryBinding = await rbac().createClusterRoleBinding({ body: binding, dryRun: 'All' });
    assert.deepEqual(toWire(dryRole.rules, 'Array<V1PolicyRule>'), roleWire.rules);
    assert.deepEqual(toWire(dryBinding.subjects, 'Array<RbacV1Subject>'), bindingWire.subjects);
    assert.equal(await readStatus(() => rbac().readClusterRole({ name: role.metadata!.name! })), 404, 'dry run');

    // Then for real, and ask the apiserver what the gateway's ServiceAccount may do.
    await rbac().createClusterRole({ body: role });
    await rbac().createClusterRoleBinding({ body: binding });
    try {
      const subject = dryBinding.subjects![0]!;
      const may = async (verb: string, resource: string, group: string, subresource?: string) => {
        const review = await authorization().createSubjectAccessReview({
          body: {
            spec: {
              user: `system:serviceaccount:${subject.namespace}:${subject.name}`,
              groups: ['system:serviceaccounts', `system:serviceaccounts:${subject.namespace}`, 'system:authenticated'],
              resourceAttributes: { verb, resource, group, ...(subresource ? { subresource } : {}) },
            },
          },
        });
        return review.status?.allowed === true;
      };
      const needed: [string, string, string, string?][] = [
        ['list', PROVIDER_PLURAL, PROVIDER_GROUP],
        ['watch', PROVIDER_PLURAL, PROVIDER_GROUP],
        ['get', PROVIDER_PLURAL, PROVIDER_GROUP],
        // The finalizer admissiongateway.io/referenced, by server-side apply of metadata.finalizers.
        ['patch', PROVIDER_PLURAL, PROVIDER_GROUP],
        ['patch', PROVIDER_PLURAL, PROVIDER_GROUP, 'status'],
        ['list', 'namespaces', ''],
        ['watch', 'namespaces', ''],
        ['get', 'namespaces', ''],
      ];
      await eventually('the ClusterRole to take effect', async () => {
        for (const [verb, resource, group, subresource] of needed) {
          if (!(await may(verb, resource, group, subresource))) {
            throw new Error(`not allowed: ${verb} ${resource}${subresource ? `/${subresource}` : ''}`);
          }
        }
        return true;
      });
      const notNeeded: [string, string, string, string?][] = [
        ['update', PROVIDER_PLURAL, PROVIDER_GROUP],
        // An apply that would create a provider deleted meanwhile is refused.
        ['create', PROVIDER_PLURAL, PROVIDER_GROUP],
        ['delete', PROVIDER_PLURAL, PROVIDER_GROUP],
        ['update', PROVIDER_PLURAL, PROVIDER_GROUP, 'status'],
        ['update', 'namespaces', ''],
        ['list', 'secrets', ''],
        ['create', 'pods', ''],
      ];
      for (const [verb, resource, group, subresource] of notNeeded) {
        assert.equal(await may(verb, resource, group, subresource), false, `${verb} ${resource}${subresource ?? ''}`);
      }
    } finally {
      await rbac().deleteClusterRoleBinding({ name: binding.metadata!.name! });
      await rbac().deleteClusterRole({ name: role.metadata!.name! });
    }
  });
});
