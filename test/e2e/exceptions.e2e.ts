/**
 * Exceptions through a real kube-apiserver (README "Exceptions"): an AdmissionException lets one Deployment
 * past require-labels in its own namespace only, until its expiresAt, after which the same running gateway
 * refuses it again; /explain names the exception; `audit` reports the Deployment `skip`, naming the exception,
 * while it applies, and `fail` once it expired; the reviews it let through are counted into its status.usage.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApiException, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import type { PolicyReport } from '../../server/audit/reports.js';
import { runCliCaptured } from '../helpers/cli.js';
import { KUBECONFIG_ENV, apps, eventually, readStatus, statusOf } from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';
import { apiextensions, customObjects } from './admission-providers.js';
import { manifestDocuments, toModel } from './manifests.js';
import { pauseDeployment } from './objects.js';

const GROUP = { group: 'admissiongateway.io', version: 'v1alpha1', plural: 'admissionexceptions' };

/** Both exception CRDs as the manifests install them, served. */
async function ensureExceptionCrds(): Promise<void> {
  for (const file of ['crd-admissionexception.yaml', 'crd-clusteradmissionexception.yaml']) {
    const [crd] = (await manifestDocuments(file)) as [Record<string, unknown>];
    await apiextensions()
      .createCustomResourceDefinition({ body: toModel<V1CustomResourceDefinition>(crd, 'V1CustomResourceDefinition') })
      .catch((err: unknown) => {
        if (!(err instanceof ApiException && err.code === 409)) throw err;
      });
  }
  await eventually('AdmissionExceptions to be served', async () =>
    (await readStatus(() => customObjects().listClusterCustomObject(GROUP))) === 200 ? true : undefined,
  );
}

/** The AdmissionException `name` in `namespace`, letting Deployment `object` off require-labels until `expiresAt`. */
async function createException(
  namespace: string,
  expiresAt: Date,
  name = 'web-no-team',
  object = 'web',
): Promise<void> {
  await customObjects().createNamespacedCustomObject({
    ...GROUP,
    namespace,
    body: {
      apiVersion: 'admissiongateway.io/v1alpha1',
      kind: 'AdmissionException',
      metadata: { name, namespace },
      spec: {
        steps: ['require-labels'],
        match: {
          names: [object],
          rules: [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }],
        },
        expiresAt: expiresAt.toISOString().replace(/\.\d+Z$/, 'Z'),
        reason: 'the web team moves to the new labels next quarter',
        ticket: 'PLAT-123',
      },
    },
  });
}

describe('exceptions through a real kube-apiserver', function () {
  let gw: E2EGateway | undefined;
  let namespace: string;
  let other: string;

  before(async function () {
    await ensureExceptionCrds();
    gw = await startE2EGateway({
      suite: 'exceptions',
      chain: '- plugin: require-labels\n  settings: { labels: [team] }\n',
      explain: { keep: 'all' },
      clusterMode: { exceptionUsageFlushMs: 250 },
      kube: { watchProviders: false },
      validating: [
        {
          name: 'validate',
          route: 'validate',
          rules: [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }],
        },
      ],
    });
    namespace = await gw.namespace();
    other = await gw.namespace();
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
  });

  /** What `admission-gateway audit --dry-run` reports of Deployment web in `namespace`, the chain the gateway's. */
  const audited = async (): Promise<Array<{ result: string; message?: string }>> => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'admission-gateway-e2e-exceptions-'));
    try {
      const configFile = path.join(dir, 'gateway.yaml');
      await writeFile(
        configFile,
        stringify({
          kube: { kubeconfig: process.env[KUBECONFIG_ENV] ?? '' },
          log: { level: 'warn' },
          chain: [{ plugin: 'require-labels', settings: { labels: ['team'] } }],
        }),
      );
      const run = await runCliCaptured(['audit', '--config', configFile, '--dry-run', '-o', 'json'], { cwd: dir });
      assert.equal(run.code, 0, run.stderr);
      const { reports } = JSON.parse(run.stdout) as { reports: PolicyReport[] };
      const report = reports.find((r) => r.metadata.namespace === namespace);
      return (report?.results ?? [])
        .filter((r) => r.resources[0]!.name === 'web' && r.resources[0]!.kind === 'Deployment')
        .map((r) => ({ result: r.result, ...(r.message !== undefined ? { message: r.message } : {}) }));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };

  /** Creates Deployment `name` without a team label in dry-run: the error it meets, or undefined when admitted. */
  const tryWeb = async (name = 'web', into = namespace): Promise<ApiException<unknown> | undefined> => {
    try {
      await apps().createNamespacedDeployment({ namespace: into, body: pauseDeployment(name, {}), dryRun: 'All' });
      return undefined;
    } catch (err) {
      if (err instanceof ApiException) return err;
      throw err;
    }
  };

  it('counts the reviews each exception let through in its status.usage, namespaced and cluster-wide', async function () {
    this.timeout(90_000);
    const counted = await gw!.namespace();
    await createException(counted, new Date(Date.now() + 600_000), 'counted', 'counted');
    // Cluster-scoped names outlive a namespace: this run's own, deleted at the end.
    const clusterName = `counted-${Date.now()}`;
    const CLUSTER = { ...GROUP, plural: 'clusteradmissionexceptions' };
    await customObjects().createClusterCustomObject({
      ...CLUSTER,
      body: {
        apiVersion: 'admissiongateway.io/v1alpha1',
        kind: 'ClusterAdmissionException',
        metadata: { name: clusterName },
        spec: {
          steps: ['require-labels'],
          match: { names: ['counted-c'] },
          expiresAt: new Date(Date.now() + 600_000).toISOString().replace(/\.\d+Z$/, 'Z'),
          reason: 'counted across namespaces',
        },
      },
    });
    type Counted = {
      status?: {
        conditions?: Array<{ type: string; status: string }>;
        usage?: { reviews?: number; windowStart?: string; previousWindowReviews?: number; lastUsed?: string };
      };
    };
    const reads = {
      namespaced: async () =>
        (await customObjects().getNamespacedCustomObject({ ...GROUP, namespace: counted, name: 'counted' })) as Counted,
      cluster: async () => (await customObjects().getClusterCustomObject({ ...CLUSTER, name: clusterName })) as Counted,
    };
    try {
      // The Accepted condition is written when the gateway takes the exception in force.
      for (const read of Object.values(reads)) {
        await eventually('the exception to be accepted', async () =>
          (await read()).status?.conditions?.some((c) => c.type === 'Accepted' && c.status === 'True')
            ? true
            : undefined,
        );
      }
      const hour = (ms: number) => new Date(Math.floor(ms / 3_600_000) * 3_600_000).toISOString().replace('.000Z', 'Z');
      const first = Date.now();
      const uses = { namespaced: 3, cluster: 2 };
      for (let i = 0; i < uses.namespaced; i++) assert.equal(await tryWeb('counted', counted), undefined);
      for (let i = 0; i < uses.cluster; i++) assert.equal(await tryWeb('counted-c', counted), undefined);
      const last = Date.now();

      for (const kind of ['namespaced', 'cluster'] as const) {
        const n = uses[kind];
        const usage = await eventually(`the ${kind} exception's usage to be written`, async () => {
          const stored = (await reads[kind]()).status?.usage;
          return stored && (stored.reviews ?? 0) + (stored.previousWindowReviews ?? 0) >= n ? stored : undefined;
        });
        const lastUsed = Date.parse(usage.lastUsed ?? '');
        assert.ok(lastUsed >= Math.floor(first / 1000) * 1000 && lastUsed <= last, `lastUsed ${usage.lastUsed}`);
        // The requests fell in one hour (as nearly always): all of them in the current window.
        if (hour(first) === hour(Date.now())) {
          assert.deepEqual(usage, {
            reviews: n,
            windowStart: hour(first),
            previousWindowReviews: 0,
            lastUsed: usage.lastUsed,
          });
        } else {
          assert.equal(usage.reviews! + usage.previousWindowReviews!, n);
        }
      }
    } finally {
      await customObjects().deleteClusterCustomObject({ ...CLUSTER, name: clusterName });
    }
  });

  it('admits the Deployment only while an exception of its own namespace names it, and refuses it after expiresAt', async function () {
    this.timeout(120_000);
    const refused = `admission webhook "${gw!.webhookName('validate')}" denied the request: require-labels: missing required label: team`;
    assert.equal(statusOf((await tryWeb())!).message, refused);

    // In another namespace it covers nothing here, even once the gateway has seen it.
    await createException(other, new Date(Date.now() + 600_000));
    await eventually('the other namespace exception to be accepted', async () => {
      const object = (await customObjects().getNamespacedCustomObject({
        ...GROUP,
        namespace: other,
        name: 'web-no-team',
      })) as { status?: { conditions?: Array<{ type: string; status: string }> } };
      return object.status?.conditions?.some((c) => c.type === 'Accepted' && c.status === 'True') ? true : undefined;
    });
    assert.equal(statusOf((await tryWeb())!).message, refused);

    // Expiring some seconds ahead: the real clock runs out while the gateway keeps running.
    const expiresAt = new Date(Date.now() + 30_000);
    await createException(namespace, expiresAt);
    await eventually('the exception to admit the Deployment', async () => ((await tryWeb()) ? undefined : true));
    // Created for real, so that the audit finds it: skipped by the exception while it applies.
    await apps().createNamespacedDeployment({ namespace, body: pauseDeployment('web', {}) });
    const until = expiresAt.toISOString().replace(/\.\d+Z$/, 'Z');
    assert.deepEqual(await audited(), [
      { result: 'skip', message: `skipped-by-exception: AdmissionException ${namespace}/web-no-team (until ${until})` },
    ]);

    const listed = (await (await fetch(`${gw!.gateway.opsUrl}/explain?limit=50`)).json()) as {
      reviews: Array<{ uid: string; namespace?: string; name?: string; allowed: boolean }>;
    };
    const admitted = listed.reviews.find((r) => r.namespace === namespace && r.name === 'web' && r.allowed);
    assert.ok(admitted, JSON.stringify(listed.reviews));
    const text = await (await fetch(`${gw!.gateway.opsUrl}/explain/${admitted.uid}?format=text`)).text();
    assert.match(text, new RegExp(`skipped-by-exception: AdmissionException ${namespace}/web-no-team \\(until `));

    // Web exists now: while the exception applies, the dry-run create is admitted and meets AlreadyExists.
    const again = await eventually(
      'the expired exception to stop applying',
      async () => {
        const error = await tryWeb();
        return error && statusOf(error).reason !== 'AlreadyExists' ? error : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    assert.equal(statusOf(again).message, refused);
    assert.deepEqual(await audited(), [{ result: 'fail', message: 'missing required label: team' }]);
  });
});
