/**
 * Watches AdmissionProvider resources and keeps the chain in step with them: every change rebuilds the
 * chain off the request path (through the ChainManager, which swaps it atomically) and every provider's
 * status is written back — only when it changed, at most once per `statusIntervalMs` per resource.
 * An invalid resource is reported in its status; its last valid spec (if any) keeps running.
 *
 * A provider's references (namespaces naming it in admissiongateway.io/extensions) are part of its status,
 * rewritten when they change; they decide its finalizer (provider-finalizer.ts), which holds the deletion
 * of an opt-in provider — it stays in the chain, Terminating — until no namespace references it. The
 * objects it served are counted by served-counter.ts.
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
  PROVIDER_RESOURCE,
  PROVIDER_GROUP,
  PROVIDER_PLURAL,
  PROVIDER_VERSION,
  resolveProvider,
  type AdmissionProvider,
  type ProviderResolution,
} from './admission-provider.js';
import { runInformer, type InformerRunner, type InformerRunnerOptions } from './informer-runner.js';
import { kubeErrorMessage, statusCode } from './kube-errors.js';
import type { NamespaceReferences } from './namespace-labels.js';
import {
  REFERENCED_FINALIZER,
  decideFinalizer,
  finalizerApplier,
  finalizerFacts,
  type FinalizerApply,
  type FinalizerDecision,
  type FinalizerFacts,
} from './provider-finalizer.js';
import { MAX_NAMED_NAMESPACES, desiredStatus, sameStatus } from './provider-status.js';
import type { ReferencingNamespaces } from './reference-index.js';
import { createServedCounter, kubeServedStore, type ServedCounterOptions } from './served-counter.js';

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
  /** Which namespaces reference each provider (the namespace cache); without it no references are written. */
  readonly references?: NamespaceReferences;
  /** Sets or gives up the finalizer; default: server-side apply through `kc`. */
  readonly applyFinalizer?: FinalizerApply;
  /** The objects-served counter's timing (flushMs, windowMs, now). */
  readonly served?: Pick<ServedCounterOptions, 'flushMs' | 'windowMs' | 'now'>;
}

export interface ProviderWatcher {
  readonly runner: InformerRunner;
  /** A provider's runtime status may have changed (breaker, discovery). */
  providerChanged(name: string): void;
  /** An opt-in provider served an object (the reviewer's onExtensionServed). */
  served(extension: string): void;
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
      api.listClusterCustomObject(PROVIDER_RESOURCE) as Promise<
        KubernetesListObject<AdmissionProvider & { metadata: { name: string } }>
      >,
  );
  const runner = runInformer('admissionproviders', informer, o.log, o.informer);
  const counter = createServedCounter({
    store: kubeServedStore(o.kc, {
      get: (name) => informer.get(name),
      list: () => informer.list(),
    }),
    log: o.log,
    ignored: o.reservedNames,
    ...o.served,
  });
  const applyFinalizer = o.applyFinalizer ?? finalizerApplier(o.kc);
  let unsubscribe: (() => void) | undefined;
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
    counter.observe(name);
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

  /** Sets or gives up the finalizer as the facts say, and returns the decision. */
  async function syncFinalizer(
    name: string,
    resource: AdmissionProvider,
    facts: FinalizerFacts,
    namespaces: ReferencingNamespaces,
  ): Promise<FinalizerDecision> {
    const decision = decideFinalizer(facts);
    if (decision.action === 'none') return decision;
    if (decision.forcedRelease) {
      o.log.warn(
        { provider: name, namespaces: namespaces.count, referencing: namespaces.first },
        'force-delete annotation: giving up the finalizer of a provider namespaces still reference',
      );
    }
    lastWrite.set(name, Date.now());
    try {
      await applyFinalizer(name, resource.metadata.uid, decision.action === 'add');
      o.log.info(
        { provider: name, finalizer: REFERENCED_FINALIZER, namespaces: namespaces.count },
        decision.action === 'add' ? 'finalizer set: namespaces reference the provider' : 'finalizer given up',
      );
    } catch (err) {
      const code = statusCode(err);
      // 404: gone; 409: the uid precondition — gone or re-created meanwhile, as when another replica's apply let
      // it go a moment ago (its event brings a re-created one back here).
      if (code !== 404 && code !== 409) {
        o.log.warn({ provider: name, err: kubeErrorMessage(err) }, 'applying the AdmissionProvider finalizer failed');
        // A refusal (403: RBAC without patch) waits for the next change or resync; anything else is retried.
        if (code === undefined || code >= 500) scheduleStatus(name);
      }
    }
    return decision;
  }

  async function writeStatus(name: string): Promise<void> {
    const resource = informer.get(name);
    const state = tracked.get(name);
    if (!resource || !state) return;
    const namespaces = o.references?.synced() ? o.references.namespaces(name, MAX_NAMED_NAMESPACES) : undefined;
    const facts = finalizerFacts(resource, state.resolution, namespaces);
    // Giving up the finalizer of a provider being deleted may let the apiserver delete it: the status write
    // below then answers 404, which is the end of it; another finalizer may hold it still, and the status says so.
    const finalizer = facts && namespaces ? await syncFinalizer(name, resource, facts, namespaces) : undefined;
    const runtime = o.chains
      .runtimes()
      .find((r) => r.name === name && state.lastGood !== undefined)
      ?.status();
    const status = desiredStatus(resource, state.resolution, runtime, new Date().toISOString(), {
      ...(namespaces ? { namespaces } : {}),
      held: finalizer?.held ?? false,
    });
    if (sameStatus(resource.status, status)) return;
    lastWrite.set(name, Date.now());
    try {
      // A merge patch keeps fields unless they are null: clear what the new status no longer has. The objects
      // served (references.objects, …) are not sent, so they stay as the counter wrote them.
      const body = { status: { lastError: null, breaker: null, ...status } };
      await api.patchClusterCustomObjectStatus(
        { ...PROVIDER_RESOURCE, name, body },
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
    served: (extension) => counter.served(extension),
    async start() {
      stopped = false;
      unsubscribe = o.references?.subscribe((change) => {
        for (const name of change === 'all' ? tracked.keys() : change) {
          if (tracked.has(name)) scheduleStatus(name);
        }
      });
      counter.start();
      await runner.start();
      const every = o.resyncMs ?? 300_000;
      resyncTimer = setInterval(() => {
        for (const name of tracked.keys()) scheduleStatus(name);
      }, every);
      resyncTimer.unref();
    },
    async stop() {
      stopped = true;
      unsubscribe?.();
      // What this replica counted and did not write yet is written now, while the cache is still there.
      await counter.stop();
      clearInterval(resyncTimer);
      for (const timer of statusTimers.values()) clearTimeout(timer);
      statusTimers.clear();
      await runner.stop();
      await reconciling;
    },
  };
}
