/**
 * Namespace labels for namespaceSelector in cluster mode: an informer cache, with a GET on a miss (a
 * namespace created a moment ago), as the apiserver's namespace matcher does.
 */
import { CoreV1Api, makeInformer, type KubeConfig, type V1Namespace } from '@kubernetes/client-node';
import type { Labels } from '../chain/label-selector.js';
import type { NamespaceLabelSource } from '../chain/reviewer.js';
import type { Logger } from '../plugin-api/types.js';
import { runInformer, type InformerRunner, type InformerRunnerOptions } from './informer-runner.js';
import { kubeErrorMessage } from './kube-errors.js';

const NAME_LABEL = 'kubernetes.io/metadata.name';

/** Kubernetes 1.21+ sets the name label on every namespace; add it on older clusters so selectors agree. */
function withNameLabel(name: string, labels: Record<string, string> | undefined): Labels {
  return labels?.[NAME_LABEL] === name ? labels : { ...labels, [NAME_LABEL]: name };
}

export interface NamespaceLabelCache extends NamespaceLabelSource {
  readonly runner: InformerRunner;
}

export function createNamespaceLabelCache(
  kc: KubeConfig,
  log: Logger,
  options?: InformerRunnerOptions,
): NamespaceLabelCache {
  const core = kc.makeApiClient(CoreV1Api);
  const informer = makeInformer<V1Namespace>(kc, '/api/v1/namespaces', () => core.listNamespace());
  const runner = runInformer('namespaces', informer, log, options);
  return {
    runner,
    async labels(namespace) {
      const cached = informer.get(namespace);
      if (cached) return withNameLabel(namespace, cached.metadata?.labels);
      try {
        const fetched = await core.readNamespace({ name: namespace });
        return withNameLabel(namespace, fetched.metadata?.labels);
      } catch (err) {
        log.debug({ namespace, err: kubeErrorMessage(err) }, 'namespace lookup failed');
        return undefined;
      }
    },
  };
}
