/**
 * The cluster's AdmissionExceptions and ClusterAdmissionExceptions, listed once, for a command that runs
 * without the watch cluster mode keeps (`audit`): the same reading as the watcher's (read-exception.ts), an
 * invalid object left out and named. A cluster without the CRDs has none.
 */
import { CustomObjectsApi, type KubeConfig, type KubernetesListObject } from '@kubernetes/client-node';
import {
  CLUSTER_PLURAL,
  EXCEPTION_GROUP,
  EXCEPTION_VERSION,
  NAMESPACED_PLURAL,
  type GatewayException,
} from '../exceptions/exception.js';
import { readException, type ExceptionRules } from '../exceptions/read-exception.js';
import { kubeErrorMessage, statusCode } from './kube-errors.js';

export interface ClusterExceptions {
  readonly exceptions: readonly GatewayException[];
  /** Objects that are not valid exceptions, or a list that failed, each in words. */
  readonly problems: readonly string[];
}

export async function listClusterExceptions(kc: KubeConfig, rules: ExceptionRules): Promise<ClusterExceptions> {
  const api = kc.makeApiClient(CustomObjectsApi);
  const exceptions: GatewayException[] = [];
  const problems: string[] = [];
  for (const plural of [NAMESPACED_PLURAL, CLUSTER_PLURAL]) {
    let list: KubernetesListObject<{ kind?: string; metadata?: { name?: string; namespace?: string } }>;
    try {
      list = (await api.listClusterCustomObject({
        group: EXCEPTION_GROUP,
        version: EXCEPTION_VERSION,
        plural,
      })) as typeof list;
    } catch (err) {
      if (statusCode(err) !== 404) problems.push(`listing ${plural}: ${kubeErrorMessage(err)}`);
      continue;
    }
    for (const object of list.items) {
      try {
        exceptions.push(readException(object, rules));
      } catch (err) {
        const name = `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
        problems.push(`${plural} ${name}: ${(err as Error).message}`);
      }
    }
  }
  return { exceptions, problems };
}
