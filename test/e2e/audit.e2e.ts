/**
 * `admission-gateway audit` against the real kube-apiserver (README "Auditing existing objects"): the
 * PolicyReport CRDs from manifests/policy-reports/ installed, namespaces and ConfigMaps created with and without
 * the label a `require-labels` step in warn mode wants, the audit run through the CLI in this process, and the
 * PolicyReports and the ClusterPolicyReport read back through the API: their summaries and results are the
 * objects created. A second run is idempotent, a deleted object leaves its report, a namespace without results
 * loses its report, and the periodic audit of cluster mode writes reports too.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import type { PolicyReport, ReportResult } from '../../server/audit/reports.js';
import { runCliCaptured } from '../helpers/cli.js';
import { KUBECONFIG_ENV, core, eventually, randomSuffix } from './cluster.js';
import { anyFailed, registryValue, startE2EGateway, type E2EGateway } from './gateway.js';
import {
  REPORTS,
  configMapsHaveTeam,
  installReportCrds,
  readReport,
  reportObjects,
  reportStatus,
} from './policy-reports.js';

const SUITE = 'audit';
/** Ties this run's namespaces to its steps' selectors, so objects other files left are not audited. */
const RUN_LABEL = 'e2e.admissiongateway.io/audit-run';
const run = randomSuffix();

/** A step in warn mode on ConfigMaps of this run's namespaces, one on this run's namespaces themselves. */
const CHAIN = [
  configMapsHaveTeam(RUN_LABEL, run),
  {
    plugin: 'require-labels',
    name: 'namespaces-have-team',
    mode: 'audit',
    match: {
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['namespaces'] }],
      objectSelector: { matchLabels: { [RUN_LABEL]: run } },
    },
    settings: { labels: ['team'] },
  },
];

const MISSING = 'missing required label: team';

const objects = reportObjects;

async function createNamespace(team: string | undefined): Promise<string> {
  const name = `audit-${randomSuffix()}`;
  const labels = { [RUN_LABEL]: run, ...(team ? { team } : {}) };
  await core().createNamespace({ body: { metadata: { name, labels } } });
  return name;
}

async function createConfigMap(namespace: string, name: string, team: string | undefined): Promise<string> {
  const created = await core().createNamespacedConfigMap({
    namespace,
    body: { metadata: { name, ...(team ? { labels: { team } } : {}) }, data: { k: 'v' } },
  });
  return created.metadata!.uid!;
}

/** A result as the operator reads it: which step, what, which object, why. */
const shortResult = (r: ReportResult) => ({
  policy: r.policy,
  result: r.result,
  name: r.resources[0]!.name,
  ...(r.message !== undefined ? { message: r.message } : {}),
});

/** The results of one policy, short. */
const resultsOf = (report: PolicyReport, policy: string) =>
  report.results.filter((r) => r.policy === policy).map(shortResult);

describe('audit: PolicyReports of the objects that exist', function () {
  this.timeout(120_000);
  let dir: string;
  let configFile: string;
  /** Namespaces: a (team label) and b (none). */
  let nsA: string;
  let nsB: string;
  const uids = new Map<string, string>();

  const audit = async (...args: string[]) => {
    const result = await runCliCaptured(['audit', '--config', configFile, ...args], { cwd: dir });
    return result;
  };

  before(async function () {
    await installReportCrds();
    dir = await mkdtemp(path.join(os.tmpdir(), 'admission-gateway-e2e-audit-'));
    configFile = path.join(dir, 'gateway.yaml');
    await writeFile(
      configFile,
      stringify({
        kube: { kubeconfig: process.env[KUBECONFIG_ENV] ?? '' },
        log: { level: 'warn' },
        chain: CHAIN,
      }),
    );
    nsA = await createNamespace('a');
    nsB = await createNamespace(undefined);
    uids.set('cm-1', await createConfigMap(nsA, 'cm-1', 'a'));
    uids.set('cm-2', await createConfigMap(nsA, 'cm-2', undefined));
    uids.set('cm-3', await createConfigMap(nsB, 'cm-3', 'b'));
    uids.set('cm-4', await createConfigMap(nsB, 'cm-4', undefined));
    uids.set('cm-5', await createConfigMap(nsB, 'cm-5', undefined));
  });

  after(async function () {
    await rm(dir, { recursive: true, force: true });
  });

  it('--dry-run prints the reports and the summary, and writes nothing', async function () {
    const { code, stdout, stderr } = await audit('--dry-run', '-o', 'json');
    assert.equal(code, 0, stderr);
    const out = JSON.parse(stdout) as { reports: PolicyReport[]; summary: string[]; written?: unknown };
    const summaries = new Map(out.reports.map((r) => [r.metadata.namespace, r.summary]));
    assert.deepEqual(
      [summaries.get(nsA), summaries.get(nsB)],
      [
        { pass: 1, fail: 1, warn: 0, error: 0, skip: 0 },
        { pass: 1, fail: 2, warn: 0, error: 0, skip: 0 },
      ],
    );
    assert.equal(out.written, undefined);
    assert.equal(await reportStatus(nsA), 404);
    assert.equal(await reportStatus(nsB), 404);
  });

  it('writes a PolicyReport per namespace and a ClusterPolicyReport whose counts are the objects created', async function () {
    const { code, stdout, stderr } = await audit('--exit-code');
    assert.equal(code, 3, `--exit-code: some objects fail\n${stdout}${stderr}`);
    assert.match(
      stdout,
      /^configmaps-have-team \(mode warn\): 5 objects checked, 2 pass, 3 fail, 0 error: switching it to enforce would refuse 3 objects$/m,
    );
    assert.match(
      stdout,
      /^namespaces-have-team \(mode audit\): 2 objects checked, 1 pass, 1 fail, 0 error: switching it to enforce would refuse 1 object$/m,
    );

    const a = await readReport(nsA);
    const timestamp = a.results[0]!.timestamp;
    const result = (name: string, outcome: 'pass' | 'fail'): ReportResult => ({
      policy: 'configmaps-have-team',
      rule: 'validate',
      result: outcome,
      ...(outcome === 'fail' ? { message: MISSING } : {}),
      source: 'admission-gateway',
      scored: true,
      resources: [{ apiVersion: 'v1', kind: 'ConfigMap', name, namespace: nsA, uid: uids.get(name)! }],
      timestamp,
      properties: { mode: 'warn', failurePolicy: 'Ignore' },
    });
    // The whole report as stored, but the apiserver's own metadata.
    const { metadata, ...stored } = a as PolicyReport & { metadata: Record<string, unknown> };
    assert.deepEqual(
      {
        ...stored,
        metadata: {
          name: metadata.name,
          namespace: metadata.namespace,
          labels: metadata.labels,
          annotations: metadata.annotations,
        },
      },
      {
        apiVersion: 'wgpolicyk8s.io/v1alpha2',
        kind: 'PolicyReport',
        metadata: {
          name: 'admission-gateway',
          namespace: nsA,
          labels: { 'app.kubernetes.io/managed-by': 'admission-gateway' },
          annotations: {
            'admissiongateway.io/audit-summary':
              'configmaps-have-team (mode warn): 2 objects checked, 1 pass, 1 fail, 0 error: switching it to enforce would refuse 1 object',
          },
        },
        summary: { pass: 1, fail: 1, warn: 0, error: 0, skip: 0 },
        results: [result('cm-2', 'fail'), result('cm-1', 'pass')],
      },
    );

    const b = await readReport(nsB);
    assert.deepEqual(b.summary, { pass: 1, fail: 2, warn: 0, error: 0, skip: 0 });
    assert.deepEqual(resultsOf(b, 'configmaps-have-team'), [
      { policy: 'configmaps-have-team', result: 'fail', name: 'cm-4', message: MISSING },
      { policy: 'configmaps-have-team', result: 'fail', name: 'cm-5', message: MISSING },
      { policy: 'configmaps-have-team', result: 'pass', name: 'cm-3' },
    ]);

    const cluster = await readReport(undefined);
    assert.equal(cluster.kind, 'ClusterPolicyReport');
    assert.deepEqual(cluster.summary, { pass: 1, fail: 1, warn: 0, error: 0, skip: 0 });
    assert.deepEqual(cluster.results.map(shortResult), [
      { policy: 'namespaces-have-team', result: 'fail', name: nsB, message: MISSING },
      { policy: 'namespaces-have-team', result: 'pass', name: nsA },
    ]);
    assert.deepEqual(cluster.results[0]!.resources, [
      { apiVersion: 'v1', kind: 'Namespace', name: nsB, uid: cluster.results[0]!.resources[0]!.uid },
    ]);
    assert.deepEqual(cluster.results[0]!.properties, { mode: 'audit', failurePolicy: 'Ignore' });
  });

  it('a second run writes the same reports again, one per namespace', async function () {
    const before = [await readReport(nsA), await readReport(nsB), await readReport(undefined)];
    const { code, stderr } = await audit();
    assert.equal(code, 0, stderr);
    const after = [await readReport(nsA), await readReport(nsB), await readReport(undefined)];
    const content = (r: PolicyReport) => ({ summary: r.summary, results: r.results.map(shortResult) });
    assert.deepEqual(after.map(content), before.map(content));
    assert.deepEqual(
      after.map((r) => (r.metadata as { uid?: string }).uid),
      before.map((r) => (r.metadata as { uid?: string }).uid),
      'the same objects, updated in place',
    );
    const listed = (await objects().listNamespacedCustomObject({
      ...REPORTS,
      plural: 'policyreports',
      namespace: nsB,
    })) as { items: unknown[] };
    assert.equal(listed.items.length, 1);
  });

  it('drops a deleted object from its report, and the report of a namespace left without results', async function () {
    await core().deleteNamespacedConfigMap({ namespace: nsA, name: 'cm-2' });
    for (const name of ['cm-3', 'cm-4', 'cm-5']) await core().deleteNamespacedConfigMap({ namespace: nsB, name });
    const { code, stdout, stderr } = await audit();
    assert.equal(code, 0, stderr);
    const a = await readReport(nsA);
    assert.deepEqual(a.summary, { pass: 1, fail: 0, warn: 0, error: 0, skip: 0 });
    assert.deepEqual(a.results.map(shortResult), [{ policy: 'configmaps-have-team', result: 'pass', name: 'cm-1' }]);
    assert.equal(await reportStatus(nsB), 404);
    assert.match(stdout, new RegExp(`^reports deleted \\(no results any more\\): .*\\b${nsB}\\b`, 'm'));
  });

  describe('the periodic audit of cluster mode', function () {
    let gw: E2EGateway | undefined;

    after(async function () {
      await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    });

    it('writes the reports on its own, and exports their counts', async function () {
      const nsC = await createNamespace('c');
      await createConfigMap(nsC, 'cm-6', 'c');
      await createConfigMap(nsC, 'cm-7', undefined);
      gw = await startE2EGateway({
        suite: SUITE,
        chain: stringify(CHAIN),
        clusterMode: {},
        audit: { intervalSeconds: 1 },
      });
      const c = await eventually('the periodic audit to write the PolicyReport of a new namespace', async () =>
        (await reportStatus(nsC)) === 200 ? readReport(nsC) : undefined,
      );
      assert.deepEqual(c.summary, { pass: 1, fail: 1, warn: 0, error: 0, skip: 0 });
      assert.deepEqual(resultsOf(c, 'configmaps-have-team'), [
        { policy: 'configmaps-have-team', result: 'fail', name: 'cm-7', message: MISSING },
        { policy: 'configmaps-have-team', result: 'pass', name: 'cm-6' },
      ]);
      // cm-1 in a and cm-6 in c pass, cm-7 fails; a, c pass as namespaces and b fails.
      const registry = gw.gateway.metrics.registry;
      const value = (step: string, result: string) =>
        registryValue(registry, 'admission_gateway_audit_results', { step, result });
      await eventually('the audit metrics of a complete run', async () =>
        (await value('configmaps-have-team', 'pass')) === 2 ? true : undefined,
      );
      assert.deepEqual(
        [
          await value('configmaps-have-team', 'fail'),
          await value('namespaces-have-team', 'pass'),
          await value('namespaces-have-team', 'fail'),
        ],
        [1, 2, 1],
      );
      // The audit's reviews are not admission requests: the gateway's review metrics never saw them (this
      // file's namespaces are not selected by its webhooks).
      assert.equal(
        await registryValue(registry, 'admission_gateway_step_calls_total', {
          step: 'configmaps-have-team',
          phase: 'validate',
        }),
        undefined,
      );
      assert.ok(
        ((await registryValue(registry, 'admission_gateway_audit_last_run_timestamp_seconds', {
          outcome: 'complete',
        })) ?? 0) > 0,
      );
    });
  });
});
