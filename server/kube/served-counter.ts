/**
 * Counts the objects each opt-in AdmissionProvider served on this replica (the reviewer's onExtensionServed)
 * and adds them to `status.references.objects` — the sum over all replicas, not this replica's share — with
 * `windowStart` and `previousWindowObjects` (docs/admission-provider-crd.md, "Objects served"). The counting,
 * the windows and the conditional writes are usage-counter.ts's; this is where they are stored for a provider.
 */
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { PROVIDER_RESOURCE, type AdmissionProvider } from './admission-provider.js';
import { statusCode } from './kube-errors.js';
import { createUsageCounter, type StoredUsage, type UsageCounterOptions } from './usage-counter.js';
import type { WindowCounts } from './usage-window.js';

/** The objects-served fields of `status.references`, as written. */
export interface ServedCounts {
  readonly objects: number;
  readonly windowStart: string;
  readonly previousWindowObjects: number;
}

/** Where the counts are stored: the AdmissionProviders of the informer, a fresh read, a conditional write. */
export interface ServedStore {
  /** The provider as the informer has it (undefined: not known). */
  cached(name: string): AdmissionProvider | undefined;
  /** The names of the providers the informer has. */
  names(): readonly string[];
  /** The provider as stored now (undefined: it does not exist). */
  read(name: string): Promise<AdmissionProvider | undefined>;
  /** Writes the counts if the provider is still at `resourceVersion`; rejects with the apiserver's 409 if not. */
  write(name: string, resourceVersion: string, counts: ServedCounts): Promise<void>;
}

export interface ServedCounterOptions extends Pick<
  UsageCounterOptions,
  'log' | 'flushMs' | 'windowMs' | 'now' | 'maxAttempts'
> {
  readonly store: ServedStore;
  /** Names that are never AdmissionProviders in the chain (gateway.yaml's entries): not counted. */
  readonly ignored?: ReadonlySet<string>;
  /** Providers counted at once; more are not counted (the hook's names come from the chain: never reached). */
  readonly maxNames?: number;
}

export interface ServedCounter {
  /** An opt-in extension served one object. */
  served(extension: string): void;
  /** The provider's stored status changed or was first seen: rotates a window that ended, if it must. */
  observe(name: string): void;
  start(): void;
  /** Writes what is pending (bounded by `timeoutMs`); counts after this are not kept. */
  stop(timeoutMs?: number): Promise<void>;
}

/** A provider's objects served as the usage counter reads them. */
function usageOf(provider: AdmissionProvider | undefined): StoredUsage | undefined {
  if (!provider) return undefined;
  const references = provider.status?.references;
  return {
    resourceVersion: provider.metadata.resourceVersion,
    counts: references && {
      count: references.objects,
      windowStart: references.windowStart,
      previousWindowCount: references.previousWindowObjects,
    },
  };
}

/** The usage counter's counts under the provider's names (it keeps no lastUsed). */
const servedCounts = (counts: WindowCounts): ServedCounts => ({
  objects: counts.count,
  windowStart: counts.windowStart,
  previousWindowObjects: counts.previousWindowCount,
});

export function createServedCounter(o: ServedCounterOptions): ServedCounter {
  const { store, maxNames, ...rest } = o;
  const counter = createUsageCounter({
    ...rest,
    ...(maxNames !== undefined ? { maxKeys: maxNames } : {}),
    words: { key: 'provider', counted: 'objects served', unit: 'objects', resource: 'AdmissionProvider' },
    store: {
      cached: (name) => usageOf(store.cached(name)),
      keys: () => store.names(),
      read: async (name) => usageOf(await store.read(name)),
      write: (name, resourceVersion, counts) => store.write(name, resourceVersion, servedCounts(counts)),
    },
  });
  return {
    served: (extension) => counter.count(extension),
    observe: (name) => counter.observe(name),
    start: () => counter.start(),
    stop: (timeoutMs) => counter.stop(timeoutMs),
  };
}

/** The informer's cache of AdmissionProviders, as much as the counter reads of it. */
export interface ProviderCache {
  get(name: string): AdmissionProvider | undefined;
  list(): readonly AdmissionProvider[];
}

/**
 * The store of the counts on the apiserver: reads the informer's cache, or the resource itself (`get`, which
 * the gateway may do, unlike a `get` of the status subresource); writes a merge patch of the status
 * subresource carrying `metadata.resourceVersion`, which the apiserver turns into a precondition.
 */
export function kubeServedStore(kc: KubeConfig, cache: ProviderCache): ServedStore {
  const api = kc.makeApiClient(CustomObjectsApi);
  return {
    cached: (name) => cache.get(name),
    names: () => cache.list().flatMap((p) => (p.metadata.name ? [p.metadata.name] : [])),
    async read(name) {
      try {
        return (await api.getClusterCustomObject({ ...PROVIDER_RESOURCE, name })) as AdmissionProvider;
      } catch (err) {
        if (statusCode(err) === 404) return undefined;
        throw err;
      }
    },
    async write(name, resourceVersion, counts) {
      const body = { metadata: { resourceVersion }, status: { references: counts } };
      await api.patchClusterCustomObjectStatus(
        { ...PROVIDER_RESOURCE, name, body },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    },
  };
}
