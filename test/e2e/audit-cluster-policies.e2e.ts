/**
 * `admission-gateway audit` with an `admissionPolicies` entry with `fromCluster: true` (and no files): the
 * cluster's ValidatingAdmissionPolicy, its binding and the ConfigMap its paramRef names are read from the cluster
 * once, and the existing objects are audited against them, as the policy would judge them once bound with Deny.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import type { PolicyReport } from '../../server/audit/reports.js';
import { runCliCaptured } from '../helpers/cli.js';
import { KUBECONFIG_ENV, core, randomSuffix, requireKube } from './cluster.js';
import { installReportCrds } from './policy-reports.js';
import { apiserverRequest, apiserverSend as send } from './server-side-apply.js';

const SUFFIX = randomSuffix();
const POLICY = `audited-${SUFFIX}`;
const GROUP = '/apis/admissionregistration.k8s.io/v1';

describe('audit: a fromCluster entry audits with the cluster’s policies, bindings and params', function () {
  this.timeout(120_000);
  let dir = '';
  let namespace = '';
  const created: string[] = [];

  before(async function () {
    requireKube(this, 30, 'ValidatingAdmissionPolicy GA');
    await installReportCrds();
    namespace = `audit-vap-${SUFFIX}`;
    await core().createNamespace({ body: { metadata: { name: namespace } } });
    created.push(`/api/v1/namespaces/${namespace}`);
    const configMaps = `/api/v1/namespaces/${namespace}/configmaps`;
    await send('POST', configMaps, { metadata: { name: 'params' }, data: { prefix: 'bad-' } });
    for (const name of ['good-one', 'bad-one', 'bad-two']) await send('POST', configMaps, { metadata: { name } });
    await send('POST', `${GROUP}/validatingadmissionpolicies`, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: POLICY },
      spec: {
        failurePolicy: 'Fail',
        paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
        matchConstraints: {
          resourceRules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
        },
        validations: [{ expression: '!object.metadata.name.startsWith(params.data.prefix)' }],
      },
    });
    created.push(`${GROUP}/validatingadmissionpolicies/${POLICY}`);
    // Bound with Deny after the objects exist: the audit says which of them it would refuse now.
    await send('POST', `${GROUP}/validatingadmissionpolicybindings`, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: POLICY },
      spec: {
        policyName: POLICY,
        validationActions: ['Deny'],
        paramRef: { name: 'params', namespace, parameterNotFoundAction: 'Deny' },
        matchResources: {
          namespaceSelector: {
            matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [namespace] }],
          },
        },
      },
    });
    created.push(`${GROUP}/validatingadmissionpolicybindings/${POLICY}`);
    dir = await mkdtemp(path.join(os.tmpdir(), 'admission-gateway-e2e-audit-vap-'));
    await writeFile(
      path.join(dir, 'gateway.yaml'),
      stringify({
        kube: { kubeconfig: process.env[KUBECONFIG_ENV] ?? '' },
        log: { level: 'warn' },
        chain: [{ admissionPolicies: 'native', fromCluster: true }],
      }),
    );
  });

  after(async function () {
    if (dir) await rm(dir, { recursive: true, force: true });
    for (const objectPath of created.reverse()) await apiserverRequest('DELETE', objectPath);
  });

  it('reports what the cluster’s binding would refuse, judged with the params it names', async function () {
    const { code, stdout, stderr } = await runCliCaptured(
      ['audit', '--config', path.join(dir, 'gateway.yaml'), '--dry-run', '-o', 'json'],
      { cwd: dir },
    );
    assert.equal(code, 0, stderr);
    assert.doesNotMatch(stderr, /reads nothing from the cluster/);
    const out = JSON.parse(stdout) as { reports: PolicyReport[] };
    const report = out.reports.find((r) => r.metadata.namespace === namespace);
    assert.deepEqual(
      report?.results
        .map((r) => ({ policy: r.policy, result: r.result, name: r.resources[0]!.name }))
        .sort((a, b) => (a.name < b.name ? -1 : 1)),
      [
        { policy: `native/${POLICY}/${POLICY}`, result: 'fail', name: 'bad-one' },
        { policy: `native/${POLICY}/${POLICY}`, result: 'fail', name: 'bad-two' },
        { policy: `native/${POLICY}/${POLICY}`, result: 'pass', name: 'good-one' },
        { policy: `native/${POLICY}/${POLICY}`, result: 'pass', name: 'params' },
      ],
    );
  });
});
