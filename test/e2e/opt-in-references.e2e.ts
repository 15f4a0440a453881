/**
 * The cluster side of opt-in extensions (issue 17) against the real apiserver, with two gateways in cluster
 * mode watching the same AdmissionProviders — two replicas, as the Deployment runs them:
 *  - status.references.namespaces follows namespaces adding and dropping the annotation
 *    admissiongateway.io/extensions, exactly, and the printer column shows it;
 *  - status.references.objects is the exact sum of what both replicas counted (their onExtensionServed, called
 *    here through each replica's cluster-mode wiring: the request path that calls it is not part of this file);
 *  - the finalizer admissiongateway.io/referenced holds the deletion of a referenced opt-in provider (Terminating,
 *    still in the chain, a Deleting condition naming the namespaces) until the last reference goes, or at once
 *    with the force annotation; another party's finalizer stays throughout.
 */
import assert from 'node:assert/strict';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import {
  PROVIDER_GROUP,
  PROVIDER_PLURAL,
  PROVIDER_VERSION,
  deletionRequested,
  type AdmissionProvider,
  type Condition,
} from '../../server/kube/admission-provider.js';
import { EXTENSIONS_ANNOTATION } from '../../server/extensions/extension-references.js';
import {
  FORCE_DELETE_ANNOTATION,
  GATEWAY_FIELD_MANAGER,
  REFERENCED_FINALIZER,
  finalizerApplier,
} from '../../server/kube/provider-finalizer.js';
import { kubeServedStore } from '../../server/kube/served-counter.js';
import { formatTime } from '../../server/kube/usage-window.js';
import {
  createProvider,
  deleteProvider,
  deleteProviderCrd,
  ensureCrd,
  jsonPatchProvider,
  mergePatchProvider,
  providerGone,
  readProvider,
} from './admission-providers.js';
import { apiError, core, createNamespace, eventually, kubeConfig, statusOf } from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';
import { apiserverGet, getChain } from './http.js';

const SUITE = 'opt-in-references';
/** Another party's finalizer on a provider: the gateway's applies must leave it alone. */
const FOREIGN_FINALIZER = 'e2e.admissiongateway.io/keep';
const CLUSTER_MODE = { backoff: { initialMs: 200, maxMs: 1000 }, statusIntervalMs: 200, servedFlushMs: 200 };

/** An opt-in provider (validate, Pods) that no webhook ever sends a request to: only its resource matters here. */
const OPT_IN_SPEC = {
  url: 'https://127.0.0.1:1/never-called',
  phases: ['validate'],
  attach: 'OptIn',
  failurePolicy: 'Ignore',
  match: { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }] },
};

/** Sets (or with null removes) the namespace's admissiongateway.io/extensions annotation. */
async function annotate(namespace: string, value: string | null): Promise<void> {
  await core().patchNamespace(
    { name: namespace, body: { metadata: { annotations: { [EXTENSIONS_ANNOTATION]: value } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

async function annotatedNamespace(value: string): Promise<string> {
  const namespace = await createNamespace(SUITE);
  await annotate(namespace, value);
  return namespace;
}

/** Waits until the stored provider satisfies `check` (which throws to say why not); returns it. */
function providerWhere(name: string, what: string, check: (p: AdmissionProvider) => void): Promise<AdmissionProvider> {
  return eventually(`${name} ${what}`, async () => {
    const provider = await readProvider(name);
    check(provider);
    return provider;
  });
}

const namespacesCount = (count: number) => (p: AdmissionProvider) =>
  assert.equal(p.status?.references?.namespaces, count, `status.references.namespaces`);

const deletingCondition = (p: AdmissionProvider): Omit<Condition, 'lastTransitionTime'> | undefined => {
  const found = p.status?.conditions?.find((c) => c.type === 'Deleting');
  if (!found) return undefined;
  const { lastTransitionTime, ...rest } = found;
  assert.ok(!Number.isNaN(Date.parse(lastTransitionTime)), lastTransitionTime);
  return rest;
};

function heldMessage(count: number, named: string): string {
  return (
    `held by the finalizer ${REFERENCED_FINALIZER}: ${count} namespace(s) reference it in ${EXTENSIONS_ANNOTATION} ` +
    `(${named}) and it keeps serving them; it is deleted once none does, or at once with the annotation ` +
    `${FORCE_DELETE_ANNOTATION}: "true"`
  );
}

/** The managedFields entries of the gateway's field manager that apply the finalizer. */
const gatewayApplies = (p: AdmissionProvider) =>
  (p.metadata.managedFields ?? []).filter((m) => m.manager === GATEWAY_FIELD_MANAGER && m.operation === 'Apply');

describe('opt-in AdmissionProviders: references, objects served and deletion safety (two replicas)', function () {
  let replicas: E2EGateway[] = [];
  let crdCreated = false;
  const providers = new Set<string>();

  before(async function () {
    this.timeout(120_000);
    crdCreated = await ensureCrd();
    for (const replica of ['a', 'b']) {
      replicas.push(await startE2EGateway({ suite: `${SUITE}-${replica}`, chain: '[]', clusterMode: CLUSTER_MODE }));
    }
  });

  after(async function () {
    this.timeout(120_000);
    const failed = anyFailed(this.test!.parent!);
    for (const replica of replicas) await replica.close({ keepDir: failed });
    replicas = [];
    // Nothing may stay held by a finalizer no gateway removes any more (the CRD could not be deleted).
    for (const name of providers) {
      await jsonPatchProvider(name, [{ op: 'replace', path: '/metadata/finalizers', value: [] }]).catch(
        () => undefined,
      );
      await deleteProvider(name);
    }
    if (crdCreated) await deleteProviderCrd();
  });

  async function newProvider(name: string): Promise<void> {
    providers.add(name);
    await createProvider(name, OPT_IN_SPEC);
  }

  /** Every replica has the provider in its chain (validate phase), or none has. */
  async function inChains(name: string, present: boolean): Promise<void> {
    await eventually(`${name} ${present ? 'in' : 'gone from'} every replica's chain`, async () => {
      for (const replica of replicas) {
        const chain = await getChain(replica.gateway.opsUrl);
        if (chain.validate.some((s) => s.name === name) !== present) throw new Error(`/chain is ${chain.order}`);
      }
      return true;
    });
  }

  it('counts the namespaces that reference a provider, exactly, as they add and drop the annotation', async function () {
    await newProvider('counted');
    await inChains('counted', true);
    await providerWhere('counted', 'has references.namespaces 0', namespacesCount(0));

    const first = await annotatedNamespace('counted');
    const second = await annotatedNamespace('other, counted');
    const plain = await createNamespace(SUITE);
    // Hostile or mistaken values reference nothing: another spelling, a name past the first 16, a huge value.
    const names = Array.from({ length: 16 }, (_, i) => `filler-${i}`);
    await annotatedNamespace(`Counted,${names.join(',')},counted`);
    await annotatedNamespace(`${'x'.repeat(2000)},counted`);
    await providerWhere('counted', 'has references.namespaces 2', namespacesCount(2));

    await annotate(plain, 'counted');
    await providerWhere('counted', 'has references.namespaces 3', namespacesCount(3));
    await annotate(first, null);
    await annotate(second, 'other');
    const last = await providerWhere('counted', 'has references.namespaces 1', namespacesCount(1));
    assert.deepEqual(last.metadata.finalizers, [REFERENCED_FINALIZER], 'referenced: the finalizer is set');
    assert.equal(gatewayApplies(last).length, 1, 'both replicas apply it as the same field manager');

    await annotate(plain, '');
    const unreferenced = await providerWhere('counted', 'has references.namespaces 0', namespacesCount(0));
    await providerWhere('counted', 'has lost its finalizer', (p) => assert.equal(p.metadata.finalizers, undefined));
    assert.equal(unreferenced.status?.conditions?.[0]?.reason, 'InChain');
  });

  it('shows the namespaces (and, wide, the objects served) as printer columns', async function () {
    await newProvider('columns');
    const namespace = await annotatedNamespace('columns');
    await providerWhere('columns', 'has references.namespaces 1', namespacesCount(1));
    (await replicas[0]!.cluster!.prepare()).onExtensionServed('columns');
    await providerWhere('columns', 'has served 1 object', (p) => assert.equal(p.status?.references?.objects, 1));

    const table = await apiserverGet(
      `/apis/${PROVIDER_GROUP}/${PROVIDER_VERSION}/${PROVIDER_PLURAL}`,
      'application/json;as=Table;v=v1;g=meta.k8s.io',
    );
    assert.equal(table.status, 200);
    const body = table.body as {
      columnDefinitions: { name: string; type: string; priority?: number }[];
      rows: { cells: unknown[] }[];
    };
    const columns = body.columnDefinitions.map((c) => [c.name, c.type, c.priority ?? 0]);
    assert.deepEqual(
      columns.filter(([name]) => name === 'Namespaces' || name === 'Objects'),
      [
        ['Namespaces', 'integer', 0],
        ['Objects', 'integer', 1],
      ],
    );
    const row = body.rows.find((r) => r.cells[0] === 'columns');
    assert.ok(row, 'a row for the provider');
    const cell = (name: string) => row.cells[columns.findIndex(([n]) => n === name)];
    assert.deepEqual([cell('Namespaces'), cell('Objects')], [1, 1]);
    await annotate(namespace, null);
  });

  it('stores the exact sum of the objects both replicas served, across their status writes and conflicts', async function () {
    await newProvider('served');
    await inChains('served', true);
    const start = Date.now();
    const hooks = await Promise.all(replicas.map(async (r) => (await r.cluster!.prepare()).onExtensionServed));
    const namespace = await createNamespace(SUITE);
    let total = 0;
    for (let round = 0; round < 8; round++) {
      hooks.forEach((served, i) => {
        for (let n = 0; n < 3 + round + i; n++, total++) served('served');
      });
      // The status writers write too (references.namespaces changes): the counts must survive them.
      await annotate(namespace, round % 2 === 0 ? 'served' : null);
      await eventually(`round ${round} to be written by both replicas`, async () => {
        const references = (await readProvider('served')).status?.references;
        return (references?.objects ?? 0) + (references?.previousWindowObjects ?? 0) === total ? true : undefined;
      });
    }
    const stored = await providerWhere('served', 'has references.namespaces 0', namespacesCount(0));
    const { objects, windowStart, previousWindowObjects } = stored.status?.references ?? {};
    // The window is the hour (UTC) the counts were written in; a run across the hour splits them.
    const hour = (ms: number) => new Date(Math.floor(ms / 3_600_000) * 3_600_000).toISOString().replace('.000Z', 'Z');
    assert.ok([hour(start), hour(Date.now())].includes(windowStart!), `windowStart ${windowStart}`);
    assert.equal(objects! + previousWindowObjects!, total);
    if (windowStart === hour(start)) assert.deepEqual([objects, previousWindowObjects], [total, 0]);
  });

  it('refuses a count written from a resourceVersion that moved on: the precondition the replicas rely on', async function () {
    // The writes of served-counter.ts, as they go to the apiserver, from an informer that has not caught up.
    const stale = await readProvider('served');
    const store = kubeServedStore(kubeConfig(), { get: () => stale, list: () => [stale] });
    await mergePatchProvider('served', { metadata: { labels: { 'e2e.admissiongateway.io/touched': 'yes' } } });
    // In the stored window, so that the replicas (which rotate a window that ended as soon as they see it) leave it.
    const { objects, windowStart, previousWindowObjects } = stale.status!.references!;
    const counts = {
      objects: objects! + 1_000_000,
      windowStart: windowStart!,
      previousWindowObjects: previousWindowObjects!,
    };
    const refused = await apiError(store.write('served', stale.metadata.resourceVersion!, counts));
    assert.equal(refused.code, 409);
    const fresh = await store.read('served');
    assert.deepEqual(fresh?.status?.references, stale.status?.references, 'nothing written');
    await store.write('served', fresh!.metadata.resourceVersion!, counts);
    const written = (await readProvider('served')).status?.references;
    // (A run across the hour may see it rotated already: the sum stays.)
    assert.equal(written!.objects! + written!.previousWindowObjects!, counts.objects + counts.previousWindowObjects);
    assert.equal(await store.read('no-such-provider'), undefined);
  });

  it('rotates a window that has ended once a replica sees it: the last hour becomes previousWindowObjects', async function () {
    const hourMs = 3_600_000;
    const lastHour = Math.floor(Date.now() / hourMs) * hourMs - hourMs;
    const stored = await readProvider('served');
    const ended = { objects: 5, windowStart: formatTime(lastHour), previousWindowObjects: 2 };
    await kubeServedStore(kubeConfig(), { get: () => stored, list: () => [stored] }).write(
      'served',
      stored.metadata.resourceVersion!,
      ended,
    );
    const rotated = await providerWhere('served', 'has its window rotated', (p) =>
      assert.notEqual(p.status?.references?.windowStart, ended.windowStart),
    );
    const { windowStart, objects, previousWindowObjects } = rotated.status!.references!;
    // The window after the one written — or, for a run across the hour, the one after that (nothing to carry).
    const next = Date.parse(windowStart!);
    assert.ok(next === lastHour + hourMs || next === lastHour + 2 * hourMs, windowStart);
    assert.deepEqual([objects, previousWindowObjects], [0, next === lastHour + hourMs ? 5 : 0]);
  });

  it('holds the deletion of a referenced opt-in provider, Terminating and still in the chain, until the last reference goes', async function () {
    await newProvider('held');
    const one = await annotatedNamespace('held');
    const two = await annotatedNamespace('held');
    await providerWhere('held', 'has the finalizer', (p) =>
      assert.deepEqual(p.metadata.finalizers, [REFERENCED_FINALIZER]),
    );

    await deleteProvider('held');
    const [a, b] = [one, two].sort();
    await providerWhere('held', 'is Terminating with a Deleting condition naming both namespaces', (p) => {
      assert.ok(deletionRequested(p), 'deletionTimestamp');
      assert.deepEqual(p.metadata.finalizers, [REFERENCED_FINALIZER]);
      assert.deepEqual(deletingCondition(p), {
        type: 'Deleting',
        status: 'True',
        reason: 'Referenced',
        message: heldMessage(2, `${a}, ${b}`),
        observedGeneration: p.metadata.generation,
      });
    });
    await inChains('held', true);

    await annotate(one, null);
    await providerWhere('held', 'names the namespace left', (p) =>
      assert.equal(deletingCondition(p)?.message, heldMessage(1, two)),
    );
    const { uid } = (await readProvider('held')).metadata;
    await annotate(two, 'something-else');
    await eventually('held to be deleted', async () => ((await providerGone('held')) ? true : undefined));
    await inChains('held', false);
    // A replica whose cache is late applies to a provider that is gone: the uid refuses it, nothing is re-created.
    const late = await apiError(finalizerApplier(kubeConfig())('held', uid, false));
    assert.equal(late.code, 409);
    assert.equal(
      statusOf(late).message,
      `Operation cannot be fulfilled on admissionproviders.admissiongateway.io "held": uid mismatch: the provided ` +
        `object specified uid ${uid}, and no existing object was found`,
    );
    assert.ok(await providerGone('held'), 'not re-created');
  });

  it('gives the finalizer up at once with admissiongateway.io/force-delete: "true", leaving others\' finalizers', async function () {
    await newProvider('forced');
    const namespace = await annotatedNamespace('forced');
    await providerWhere('forced', 'has the finalizer', (p) =>
      assert.deepEqual(p.metadata.finalizers, [REFERENCED_FINALIZER]),
    );
    await jsonPatchProvider('forced', [{ op: 'add', path: '/metadata/finalizers/-', value: FOREIGN_FINALIZER }]);
    await deleteProvider('forced');
    await providerWhere('forced', 'is held', (p) => assert.equal(deletingCondition(p)?.reason, 'Referenced'));

    await mergePatchProvider('forced', { metadata: { annotations: { [FORCE_DELETE_ANNOTATION]: 'true' } } });
    const released = await providerWhere('forced', 'has only the foreign finalizer left', (p) =>
      assert.deepEqual(p.metadata.finalizers, [FOREIGN_FINALIZER]),
    );
    assert.equal(released.status?.references?.namespaces, 1, 'still referenced');
    await providerWhere('forced', 'has no Deleting condition', (p) => assert.equal(deletingCondition(p), undefined));
    const warnings = (await Promise.all(replicas.map((r) => r.logLines())))
      .flat()
      .filter((l) => l.provider === 'forced' && l.level === 'warn');
    assert.ok(
      warnings.some(
        (l) => l.msg === 'force-delete annotation: giving up the finalizer of a provider namespaces still reference',
      ),
      'a replica warned',
    );

    await jsonPatchProvider('forced', [
      { op: 'test', path: '/metadata/finalizers', value: [FOREIGN_FINALIZER] },
      { op: 'remove', path: '/metadata/finalizers' },
    ]);
    await eventually('forced to be deleted', async () => ((await providerGone('forced')) ? true : undefined));
    await annotate(namespace, null);
  });

  it('counts references to an Always provider too, but holds no finalizer for it', async function () {
    await newProvider('switched');
    await annotatedNamespace('switched');
    await providerWhere('switched', 'has the finalizer', (p) =>
      assert.deepEqual(p.metadata.finalizers, [REFERENCED_FINALIZER]),
    );
    await mergePatchProvider('switched', { spec: { attach: 'Always' } });
    const always = await providerWhere('switched', 'has lost its finalizer', (p) =>
      assert.equal(p.metadata.finalizers, undefined),
    );
    assert.equal(always.status?.references?.namespaces, 1);
    await deleteProvider('switched');
    await eventually('switched to be deleted at once', async () =>
      (await providerGone('switched')) ? true : undefined,
    );
  });
});
