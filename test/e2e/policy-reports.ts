/**
 * The PolicyReport API the audit writes (wgpolicyk8s.io/v1alpha2): its CRDs from manifests/policy-reports/
 * installed unless there, the reports read back as an operator reads them, and a step to audit with.
 */
import path from 'node:path';
import { ApiextensionsV1Api, CustomObjectsApi, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import type { PolicyReport } from '../../server/audit/reports.js';
import { eventually, kubeConfig, readStatus } from './cluster.js';
import { manifestDocuments, toModel } from './manifests.js';

export const REPORTS = { group: 'wgpolicyk8s.io', version: 'v1alpha2' };

/**
 * The chain entry both audit files audit with: require-labels (`team`) in warn mode on the ConfigMaps of the
 * namespaces labelled `label=value`, so objects other files left are not audited.
 */
export function configMapsHaveTeam(label: string, value: string) {
  return {
    plugin: 'require-labels',
    name: 'configmaps-have-team',
    mode: 'warn',
    match: {
      rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
      namespaceSelector: { matchLabels: { [label]: value } },
    },
    settings: { labels: ['team'] },
  };
}

export const reportObjects = () => kubeConfig().makeApiClient(CustomObjectsApi);

/** Creates the PolicyReport and ClusterPolicyReport CRDs unless they exist, and waits until both are served. */
export async function installReportCrds(): Promise<void> {
  const api = kubeConfig().makeApiClient(ApiextensionsV1Api);
  for (const file of ['crd-policyreports.yaml', 'crd-clusterpolicyreports.yaml']) {
    const [crd] = (await manifestDocuments(path.join('policy-reports', file))) as [Record<string, unknown>];
    const name = (crd.metadata as { name: string }).name;
    if ((await readStatus(() => api.readCustomResourceDefinition({ name }))) === 404) {
      await api.createCustomResourceDefinition({
        body: toModel<V1CustomResourceDefinition>(crd, 'V1CustomResourceDefinition'),
      });
    }
  }
  await eventually('PolicyReports and ClusterPolicyReports to be served', async () =>
    (await readStatus(() => reportObjects().listClusterCustomObject({ ...REPORTS, plural: 'policyreports' }))) ===
      200 &&
    (await readStatus(() =>
      reportObjects().listClusterCustomObject({ ...REPORTS, plural: 'clusterpolicyreports' }),
    )) === 200
      ? true
      : undefined,
  );
}

/** The gateway's report of `namespace`, or its ClusterPolicyReport (namespace undefined). */
export async function readReport(namespace: string | undefined): Promise<PolicyReport> {
  const report: unknown =
    namespace === undefined
      ? await reportObjects().getClusterCustomObject({
          ...REPORTS,
          plural: 'clusterpolicyreports',
          name: 'admission-gateway',
        })
      : await reportObjects().getNamespacedCustomObject({
          ...REPORTS,
          plural: 'policyreports',
          namespace,
          name: 'admission-gateway',
        });
  return report as PolicyReport;
}

/** 200 when the gateway's report of `namespace` exists, else the error code (404). */
export const reportStatus = (namespace: string) =>
  readStatus(() =>
    reportObjects().getNamespacedCustomObject({
      ...REPORTS,
      plural: 'policyreports',
      namespace,
      name: 'admission-gateway',
    }),
  );
