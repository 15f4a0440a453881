/**
 * Cluster mode: namespace labels from an informer cache, AdmissionProviders watched into the chain, their
 * status written back, and readiness held until the first provider list has synced.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { NamespaceLabelSource } from '../chain/reviewer.js';
import type { GatewayConfig, ProviderEntry } from '../config/types.js';
import type { Gateway } from '../gateway.js';
import type { ReadinessCheck } from '../http/ops-app.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../plugin-api/types.js';
import type { ProviderRuntime } from '../providers/provider-runtime.js';
import type { BackoffOptions } from './informer-runner.js';
import { createNamespaceLabelCache } from './namespace-labels.js';
import { createProviderWatcher, type ProviderWatcher } from './provider-watcher.js';

export interface ClusterModeOptions {
  readonly backoff?: BackoffOptions;
  readonly statusIntervalMs?: number;
  readonly resyncMs?: number;
}

export interface ClusterMode {
  /** What startGateway takes from cluster mode: `startGateway({ ...options, ...cluster.gatewayOptions })`. */
  readonly gatewayOptions: {
    readonly namespaceLabels: NamespaceLabelSource;
    readonly readiness: readonly ReadinessCheck[];
    readonly onProviderChange: (runtime: ProviderRuntime) => void;
  };
  /** Starts the informers against the running gateway's chain; returns at once (readiness tells sync). */
  attach(gateway: Gateway): void;
  stop(): Promise<void>;
}

export function createClusterMode(
  kc: KubeConfig,
  config: GatewayConfig,
  log: Logger,
  options: ClusterModeOptions = {},
): ClusterMode {
  // Metrics exist once the gateway does; the informers only start in attach(), after that.
  let metrics: Metrics | undefined;
  const connection = (resource: string) => (connected: boolean) =>
    metrics?.kubeWatchConnected.set({ resource }, connected ? 1 : 0);
  const namespaces = createNamespaceLabelCache(kc, log, {
    ...(options.backoff ? { backoff: options.backoff } : {}),
    onConnectionChange: connection('namespaces'),
  });
  let watcher: ProviderWatcher | undefined;
  const watching = config.kube.watchProviders;

  const gatewayOptions: ClusterMode['gatewayOptions'] = {
    namespaceLabels: namespaces,
    readiness: watching
      ? [
          {
            name: 'providers',
            ready: () => watcher?.runner.hasSynced() ?? false,
            detail: () =>
              `AdmissionProvider list not synced${watcher?.runner.lastError() ? `: ${watcher.runner.lastError()}` : ''}`,
          },
        ]
      : [],
    onProviderChange: (runtime) => watcher?.providerChanged(runtime.name),
  };

  return {
    gatewayOptions,
    attach(gateway) {
      metrics = gateway.metrics;
      void namespaces.runner.start();
      if (!watching) return;
      watcher = createProviderWatcher({
        kc,
        chains: gateway.chains,
        configProviders: config.chain.filter((e): e is ProviderEntry => e.kind === 'provider'),
        reservedNames: new Set(config.chain.map((e) => e.name)),
        log,
        informer: {
          ...(options.backoff ? { backoff: options.backoff } : {}),
          onConnectionChange: connection('admissionproviders'),
        },
        ...(options.statusIntervalMs !== undefined ? { statusIntervalMs: options.statusIntervalMs } : {}),
        ...(options.resyncMs !== undefined ? { resyncMs: options.resyncMs } : {}),
      });
      void watcher.start();
    },
    async stop() {
      await Promise.all([namespaces.runner.stop(), watcher?.stop()]);
    },
  };
}
