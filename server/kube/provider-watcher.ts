/**
 * Watches AdmissionProvider resources and keeps the chain in step with them: every change rebuilds the
 * chain off the request path (through the ChainManager, which swaps it atomically) and every provider's
 * status is written back — only when it changed, at most once per `statusIntervalMs` per resource.
 * An invalid resource is reported in its status; its last valid spec (if any) keeps running.
 */
import {
  CustomObjectsApi,
  PatchStrategy,
  makeInformer,
  setHeaderOptions,
  type KubeConfig,
  type KubernetesListObject,
} from '@kubernetes/client-node';
import type { ProviderChains } from '../providers/configured-chain.js';
import type { ProviderEntry } from '../config/types.js';
import { errorMessage } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import {
  PROVIDER_GROUP,
  PROVIDER_PLURAL,
  PROVIDER_VERSION,
  resolveProvider,
  type AdmissionProvider,
  type ProviderResolution,
} from './admission-provider.js';
import { runInformer, type InformerRunner, type InformerRunnerOptions } from './informer-runner.js';
import { kubeErrorMessage, statusCode } from './kube-errors.js';
import { desiredStatus, sameStatus } from './provider-status.js';

export interface ProviderWatcherOptions {
  readonly kc: KubeConfig;
  readonly chains: ProviderChains;
  /** Provider entries from gateway.yaml: always part of the chain. */
  readonly configProviders: readonly ProviderEntry[];
  /** Step names taken by gateway.yaml entries. */
  readonly reservedNames: ReadonlySet<string>;
  readonly log: Logger;
  readonly informer?: InformerRunnerOptions;
  /** Minimum time between two status writes of one resource. Default 1 s. */
  readonly statusIntervalMs?: number;
  /** Periodic re-check of every resource's status. Default 5 min. */
  readonly resyncMs?: number;
}

export interface ProviderWatcher {
  readonly runner: InformerRunner;
  /** A provider's runtime status may have changed (breaker, discovery). */
  providerChanged(name: string): void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

interface Tracked {
  resolution: ProviderResolution;
  /** The last valid entry; it stays in the chain while the resource is invalid. */
  lastGood?: ProviderEntry;
}

export function createProviderWatcher(o: ProviderWatcherOptions): ProviderWatcher {
  const api = o.kc.makeApiClient(CustomObjectsApi);
  const path = `/apis/${PROVIDER_GROUP}/${PROVIDER_VERSION}/${PROVIDER_PLURAL}`;
  const informer = makeInformer<AdmissionProvider & { metadata: { name: string } }>(
    o.kc,
    path,
    () =>
      api.listClusterCustomObject({
        group: PROVIDER_GROUP,
        version: PROVIDER_VERSION,
        plural: PROVIDER_PLURAL,
      }) as Promise<KubernetesListObject<AdmissionProvider & { metadata: { name: string } }>>,
  );
  const runner = runInformer('admissionproviders', informer, o.log, o.informer);
  const tracked = new Map<string, Tracked>();
  const statusInterval = o.statusIntervalMs ?? 1000;
  const statusTimers = new Map<string, NodeJS.Timeout>();
  const lastWrite = new Map<string, number>();
  let reconciling: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let resyncTimer: NodeJS.Timeout | undefined;

  const entries = (): ProviderEntry[] => [
    ...o.configProviders,
    ...[...tracked.values()].flatMap((t) => (t.lastGood ? [t.lastGood] : [])),
  ];

  const reconcile = (): Promise<void> => {
    if (reconciling) {
      again = true;
      return reconciling;
    }
    reconciling = (async () => {
      do {
        again = false;
        try {
          await o.chains.setProviders(entries());
        } catch (err) {
          o.log.error(
            { err: errorMessage(err) },
            'applying AdmissionProviders failed; the previous chain keeps running',
          );
        }
        for (const name of tracked.keys()) scheduleStatus(name);
      } while (again && !stopped);
      reconciling = undefined;
    })();
    return reconciling;
  };

  const observe = (resource: AdmissionProvider & { metadata: { name: string } }) => {
    const name = resource.metadata.name;
    const resolution = resolveProvider(resource, o.reservedNames);
    const previous = tracked.get(name);
    const lastGood = resolution.entry ?? previous?.lastGood;
    tracked.set(name, { resolution, ...(lastGood ? { lastGood } : {}) });
    // Our own status writes come back as updates: warn once per distinct problem.
    if (resolution.error && resolution.error.message !== previous?.resolution.error?.message) {
      o.log.warn(
        { provider: name, reason: resolution.error.reason, err: resolution.error.message },
        'invalid AdmissionProvider',
      );
    }
    if (JSON.stringify(lastGood) !== JSON.stringify(previous?.lastGood)) void reconcile();
    else scheduleStatus(name);
  };

  informer.on('add', observe);
  informer.on('update', observe);
  informer.on('delete', (resource) => {
    tracked.delete(resource.metadata.name);
    clearTimeout(statusTimers.get(resource.metadata.name));
    statusTimers.delete(resource.metadata.name);
    void reconcile();
  });

  function scheduleStatus(name: string): void {
    if (stopped || statusTimers.has(name)) return;
    const wait = Math.max(0, (lastWrite.get(name) ?? 0) + statusInterval - Date.now());
    const timer = setTimeout(() => {
      statusTimers.delete(name);
      void writeStatus(name);
    }, wait);
    timer.unref();
    statusTimers.set(name, timer);
  }

  async function writeStatus(name: string): Promise<void> {
    const resource = informer.get(name);
    const state = tracked.get(name);
    if (!resource || !state) return;
    const runtime = o.chains
      .runtimes()
      .find((r) => r.name === name && state.lastGood !== undefined)
      ?.status();
    const status = desiredStatus(resource, state.resolution, runtime, new Date().toISOString());
    if (sameStatus(resource.status, status)) return;
    lastWrite.set(name, Date.now());
    try {
      // A merge patch keeps fields unless they are null: clear what the new status no longer has.
      const body = { status: { lastError: null, breaker: null, ...status } };
      await api.patchClusterCustomObjectStatus(
        { group: PROVIDER_GROUP, version: PROVIDER_VERSION, plural: PROVIDER_PLURAL, name, body },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    } catch (err) {
      const code = statusCode(err);
      if (code !== 404)
        o.log.warn({ provider: name, err: kubeErrorMessage(err) }, 'writing AdmissionProvider status failed');
      if (code !== 404 && code !== 409) scheduleStatus(name);
    }
  }

  return {
    runner,
    providerChanged(name) {
      if (tracked.has(name)) scheduleStatus(name);
    },
    async start() {
      stopped = false;
      await runner.start();
      const every = o.resyncMs ?? 300_000;
      resyncTimer = setInterval(() => {
        for (const name of tracked.keys()) scheduleStatus(name);
      }, every);
      resyncTimer.unref();
    },
    async stop() {
      stopped = true;
      clearInterval(resyncTimer);
      for (const timer of statusTimers.values()) clearTimeout(timer);
      statusTimers.clear();
      await runner.stop();
      await reconciling;
    },
  };
}
