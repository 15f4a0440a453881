/**
 * Mocha global fixtures for the e2e suite: build the kube-apiserver if needed (instant when built; up to
 * 15 minutes in CI), start etcd + kube-apiserver on the suite's ports, and stop them afterwards.
 * A cluster a previous, interrupted run left up on the same ports is stopped first (by its PID files).
 * E2E_KEEP_CLUSTER=1 leaves the cluster running after the run, for poking at it with kubectl.
 */
import { VersionApi } from '@kubernetes/client-node';
import {
  APISERVER_PORT,
  AUTHZ_URL,
  CLUSTER_DIR,
  ETCD_PORT,
  KUBECONFIG_ENV,
  KUBE_VERSION_ENV,
  RUN_DIR,
  core,
  kubeConfig,
  startCluster,
  stopCluster,
} from './cluster.js';

/** The version the apiserver reports (`v1.37.2` → `1.37.2`), not the one asked for: tests skip by what runs. */
async function serverVersion(): Promise<string> {
  const info = await kubeConfig().makeApiClient(VersionApi).getCode();
  const version = /^v(\d+\.\d+\.\d+)/.exec(info.gitVersion)?.[1];
  if (!version) throw new Error(`the apiserver reports version "${info.gitVersion}"`);
  return version;
}

export async function mochaGlobalSetup(): Promise<void> {
  const started = Date.now();
  const kubeconfig = await startCluster();
  process.env[KUBECONFIG_ENV] = kubeconfig;
  // The client the tests use can authenticate and read (fails here, once, rather than in every file).
  await core().listNamespace({ limit: 1 });
  const version = await serverVersion();
  process.env[KUBE_VERSION_ENV] = version;
  console.log(
    `  kube-apiserver ${version} on https://127.0.0.1:${APISERVER_PORT} (etcd ${ETCD_PORT}) ready in ` +
      `${((Date.now() - started) / 1000).toFixed(1)} s; kubeconfig ${kubeconfig}; logs in ${RUN_DIR}; ` +
      `authorization webhook ${AUTHZ_URL}`,
  );
}

export async function mochaGlobalTeardown(): Promise<void> {
  if (process.env.E2E_KEEP_CLUSTER) {
    console.log(
      `  E2E_KEEP_CLUSTER set: cluster left running; stop it with test/e2e/cluster/stop-cluster.sh ${CLUSTER_DIR}`,
    );
    return;
  }
  await stopCluster();
}
