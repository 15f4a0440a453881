/**
 * Decides whether the gateway runs in cluster mode and loads the credentials: an explicit kubeconfig,
 * then KUBECONFIG, ~/.kube/config, then the in-cluster service account (client-node's order).
 */
import { access } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeConfigSection } from '../config/types.js';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

/** Where credentials would come from, or undefined when there are none. */
export async function findKubeconfig(section: KubeConfigSection, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  if (section.kubeconfig) return section.kubeconfig;
  const fromEnv = env.KUBECONFIG?.split(path.delimiter).find(Boolean);
  if (fromEnv) return (await exists(fromEnv)) ? fromEnv : undefined;
  const home = path.join(env.HOME ?? os.homedir(), '.kube', 'config');
  if (await exists(home)) return home;
  if (env.KUBERNETES_SERVICE_HOST && (await exists(SERVICE_ACCOUNT_TOKEN))) return 'in-cluster';
  return undefined;
}

/**
 * The KubeConfig for cluster mode, or undefined for standalone mode (`enabled: auto` without credentials,
 * or `enabled: false`). `enabled: true` without credentials is an error: the operator asked for a cluster.
 */
export async function loadKubeConfig(
  section: KubeConfigSection,
  env: NodeJS.ProcessEnv,
): Promise<KubeConfig | undefined> {
  if (section.enabled === false) return undefined;
  const source = await findKubeconfig(section, env);
  if (!source) {
    if (section.enabled === true) {
      throw new Error('kube.enabled is true but no kubeconfig or in-cluster service account was found');
    }
    return undefined;
  }
  // client-node is large (tens of MiB of heap): standalone gateways never load it.
  const { KubeConfig: Config } = await import('@kubernetes/client-node');
  const kc = new Config();
  if (source === 'in-cluster') kc.loadFromCluster();
  else kc.loadFromFile(source);
  if (!kc.getCurrentCluster()) throw new Error(`kubeconfig ${source} has no current cluster`);
  return kc;
}
