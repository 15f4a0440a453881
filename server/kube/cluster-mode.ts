/**
 * Cluster mode: namespace labels (and the extensions namespaces reference) from an informer cache,
 * AdmissionProviders watched into the chain, their status written back — references and the objects the
 * replicas served included — and their finalizers kept, AdmissionExceptions and ClusterAdmissionExceptions
 * watched into the exceptions in force and their status written back — the reviews they let off included —, the
 * cluster's admission policies and their params watched into `fromCluster` entries (native-policy-watcher.ts),
 * readiness held until the first provider list has synced, (with kube.certificate.secretName) the serving
 * certificate kept and rotated in a Secret, (with audit.intervalSeconds) the periodic audit writing
 * PolicyReports — on the one replica elected leader with the Lease of kube.leaderElection — and (server.opsAuth
 * kube, the default here) the ops port's callers authenticated and authorized by the apiserver.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { startPeriodicAudit } from '../audit/periodic.js';
import type { NamespaceLabelSource } from '../dispatch/reviewer.js';
import type { GatewayConfig, ProviderEntry } from '../config/types.js';
import { isClusterEntry } from '../providers/configured-chain.js';
import type { ReadinessCheck } from '../http/health-app.js';
import type { OpsAccessOptions } from '../http/ops-access.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../base/log.js';
import type { ProviderChains } from '../providers/configured-chain.js';
import type { ProviderRuntime } from '../providers/provider-runtime.js';
import type { CertificateSource } from '../tls/certificate-source.js';
import { loadClientCA } from '../tls/serving-certificate.js';
import { createKubeAccessReviewer } from './access-reviewer.js';
import type { BackoffOptions } from './informer-runner.js';
import { startLeaderDuties, type LeaderDuties, type LeaderDuty } from './leader-duties.js';
import { createManagedCertificate, type RotationStep } from './managed-certificate.js';
import { createNamespaceLabelCache } from './namespace-labels.js';
import { createProviderWatcher, type ProviderWatcher } from './provider-watcher.js';
import { createExceptionWatcher, type ExceptionWatcher } from './exception-watcher.js';
import { createNativePolicyWatcher, type NativePolicyWatcher } from './native-policy-watcher.js';
import type { WatchedExceptions } from '../exceptions/watched-exceptions.js';
import type { GatewayException } from '../exceptions/exception.js';

export interface ClusterModeOptions {
  readonly backoff?: BackoffOptions;
  readonly statusIntervalMs?: number;
  readonly resyncMs?: number;
  /** Minimum time between two writes of a provider's objects served. Default 5 s. */
  readonly servedFlushMs?: number;
  /** Minimum time between two writes of an exception's usage. Default 5 s. */
  readonly exceptionUsageFlushMs?: number;
}

/** What startGateway takes from cluster mode: `startGateway({ ...options, ...(await cluster.prepare()) })`. */
export interface ClusterGatewayOptions {
  readonly namespaceLabels: NamespaceLabelSource;
  readonly readiness: readonly ReadinessCheck[];
  readonly onProviderChange: (runtime: ProviderRuntime) => void;
  /** An opt-in extension served an object: counted into its AdmissionProvider's status.references. */
  readonly onExtensionServed: (extension: string) => void;
  /** A review used an exception: counted into the AdmissionException's or ClusterAdmissionException's status.usage. */
  readonly onExceptionUsed: (exception: GatewayException) => void;
  /** With kube.certificate.secretName: the managed certificate. */
  readonly certificates?: CertificateSource;
  /** With server.opsAuth kube (its default in cluster mode): the apiserver checks the ops port's callers. */
  readonly opsAccess?: OpsAccessOptions;
}

/** What cluster mode takes from the running gateway (its Gateway is one). */
export interface RunningGateway {
  readonly metrics: Metrics;
  /** The chain AdmissionProviders are set into. */
  readonly chains: ProviderChains;
  /** Where the cluster's AdmissionExceptions and ClusterAdmissionExceptions are set. */
  readonly exceptions?: WatchedExceptions;
}

export interface ClusterMode {
  /**
   * Before startGateway, and what it needs from cluster mode. With kube.certificate.secretName, this first
   * creates or reads the certificate Secret (retrying while the apiserver is unreachable).
   */
  prepare(): Promise<ClusterGatewayOptions>;
  /** Starts the informers against the running gateway's chain; returns at once (readiness tells sync). */
  attach(gateway: RunningGateway): void;
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
  let leaderDuties: LeaderDuties | undefined;
  let exceptionWatcher: ExceptionWatcher | undefined;
  let policyWatcher: NativePolicyWatcher | undefined;
  const watching = config.kube.watchProviders;
  const clusterEntries = config.chain.filter(isClusterEntry);

  // prepare() may create the Secret before the gateway (and its metrics) exist: counted at attach().
  const stepsBeforeAttach: RotationStep[] = [];
  const managed = config.kube.certificate.secretName
    ? createManagedCertificate({
        kc,
        config: config.kube.certificate,
        sans: { dnsNames: [...config.server.tls.dnsNames], ipAddresses: [...config.server.tls.ipAddresses] },
        log,
        ...(options.backoff ? { backoff: options.backoff } : {}),
        onStep: (step) => {
          if (metrics) metrics.certificateRotationSteps.inc({ step });
          else stepsBeforeAttach.push(step);
        },
        onConnectionChange: connection('secrets'),
      })
    : undefined;
  let certificates: CertificateSource | undefined;

  const gatewayOptions: ClusterGatewayOptions = {
    namespaceLabels: namespaces,
    readiness: [
      ...(watching
        ? [
            {
              name: 'providers',
              ready: () => watcher?.runner.hasSynced() ?? false,
              detail: () =>
                `AdmissionProvider list not synced${watcher?.runner.lastError() ? `: ${watcher.runner.lastError()}` : ''}`,
            },
          ]
        : []),
      ...(clusterEntries.length > 0
        ? [
            {
              name: 'admissionPolicies',
              ready: () => policyWatcher?.hasSynced() ?? false,
              detail: () =>
                `admission policies list not synced${policyWatcher?.lastError() ? `: ${policyWatcher.lastError()}` : ''}`,
            },
          ]
        : []),
    ],
    onProviderChange: (runtime) => watcher?.providerChanged(runtime.name),
    onExtensionServed: (extension) => watcher?.served(extension),
    onExceptionUsed: (exception) => exceptionWatcher?.used(exception),
    ...((config.server.opsAuth ?? 'kube') === 'kube' ? { opsAccess: { reviewer: createKubeAccessReviewer(kc) } } : {}),
  };

  return {
    async prepare() {
      if (!managed) return gatewayOptions;
      const file = config.server.tls.clientCAFile;
      certificates ??= await managed.prepare(file ? await loadClientCA(file) : undefined);
      return { ...gatewayOptions, certificates };
    },
    attach(gateway) {
      metrics = gateway.metrics;
      for (const step of stepsBeforeAttach.splice(0)) metrics.certificateRotationSteps.inc({ step });
      managed?.start();
      void namespaces.runner.start();
      // Work one replica does for all: elected only when there is some, so no replica writes a Lease for nothing.
      const duties: LeaderDuty[] = [];
      if (config.audit.intervalSeconds > 0) {
        duties.push({
          name: 'periodic-audit',
          start: () =>
            startPeriodicAudit({
              kc,
              config,
              chain: () => gateway.chains.current(),
              namespaceLabels: namespaces,
              metrics: gateway.metrics,
              log,
              exceptions: gateway.exceptions,
            }),
        });
      }
      if (duties.length > 0) {
        leaderDuties = startLeaderDuties({
          kc,
          config: config.kube.leaderElection,
          duties,
          metrics: gateway.metrics,
          log,
        });
      }
      if (gateway.exceptions) {
        exceptionWatcher = createExceptionWatcher({
          kc,
          exceptions: gateway.exceptions,
          log,
          ...(options.backoff ? { backoff: options.backoff } : {}),
          onConnectionChange: (resource, connected) => connection(resource)(connected),
          ...(options.exceptionUsageFlushMs !== undefined ? { usage: { flushMs: options.exceptionUsageFlushMs } } : {}),
        });
        void exceptionWatcher.start();
      }
      if (clusterEntries.length > 0) {
        policyWatcher = createNativePolicyWatcher({
          kc,
          entries: clusterEntries,
          configFile: config.file,
          setEntrySteps: (entry, steps) => gateway.chains.setEntrySteps(entry, steps),
          log,
          ...(options.backoff ? { backoff: options.backoff } : {}),
          onConnectionChange: (resource, connected) => connection(resource)(connected),
        });
        void policyWatcher.start();
      }
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
        ...(options.servedFlushMs !== undefined ? { served: { flushMs: options.servedFlushMs } } : {}),
        references: namespaces.references,
      });
      void watcher.start();
    },
    async stop() {
      await Promise.all([
        namespaces.runner.stop(),
        watcher?.stop(),
        exceptionWatcher?.stop(),
        policyWatcher?.stop(),
        managed?.stop(),
        leaderDuties?.stop(),
      ]);
    },
  };
}
