/**
 * Counts the objects each opt-in AdmissionProvider served on this replica (the reviewer's onExtensionServed)
 * and adds them to `status.references.objects` — the sum over all replicas, not this replica's share.
 *
 * Each write is a merge patch of the status carrying the `metadata.resourceVersion` it was computed from:
 * the apiserver refuses it with 409 when another replica (or the status writer) wrote in between, and the
 * count is recomputed from a fresh read and tried again. A count leaves this replica only once a write of it
 * succeeded. Writes happen at most every `flushMs` per provider and only when something was served — or
 * when the window ended and the stored count must rotate (served-window.ts has the arithmetic).
 */
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../base/log.js';
import { PROVIDER_RESOURCE, type AdmissionProvider } from './admission-provider.js';
import { kubeErrorMessage, statusCode } from './kube-errors.js';
import { SERVED_WINDOW_MS, addServed, windowStartOf, type ServedCounts } from './served-window.js';

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

export interface ServedCounterOptions {
  readonly store: ServedStore;
  readonly log: Logger;
  /** Names that are never AdmissionProviders in the chain (gateway.yaml's entries): not counted. */
  readonly ignored?: ReadonlySet<string>;
  /** Minimum time between two writes of one provider. Default 5 s. */
  readonly flushMs?: number;
  /** The window's length. Default an hour. */
  readonly windowMs?: number;
  readonly now?: () => number;
  /** Attempts of one write that meets 409 after 409. Default 5. */
  readonly maxAttempts?: number;
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

/** The longest wait between attempts after failures (an apiserver that is away). */
const MAX_RETRY_MS = 60_000;
/** Spreads the rotation writes of several replicas after the window ends (the first one wins, the rest 409). */
const ROTATION_SPREAD_MS = 10_000;

export function createServedCounter(o: ServedCounterOptions): ServedCounter {
  const flushMs = o.flushMs ?? 5000;
  const windowMs = o.windowMs ?? SERVED_WINDOW_MS;
  const now = o.now ?? Date.now;
  const maxAttempts = o.maxAttempts ?? 5;
  const maxNames = o.maxNames ?? 1024;
  /** Not yet written, per provider: the window start → objects served in it. */
  const pending = new Map<string, Map<number, number>>();
  const timers = new Map<string, NodeJS.Timeout>();
  const lastFlush = new Map<string, number>();
  const failures = new Map<string, number>();
  const flushing = new Map<string, Promise<void>>();
  let rotationTimer: NodeJS.Timeout | undefined;
  let stopped = true;
  let warnedFull = false;

  const deltasOf = (name: string): ReadonlyMap<number, number> => pending.get(name) ?? new Map<number, number>();

  /** Takes what a successful write (or a drop) carried off the pending counts; later counts stay. */
  const deductCarried = (name: string, carried: ReadonlyMap<number, number>) => {
    const left = pending.get(name);
    if (!left) return;
    for (const [window, count] of carried) {
      const rest = (left.get(window) ?? 0) - count;
      if (rest > 0) left.set(window, rest);
      else left.delete(window);
    }
    if (left.size === 0) pending.delete(name);
  };

  function schedule(name: string, delayMs?: number): void {
    if (stopped || timers.has(name)) return;
    const wait = delayMs ?? Math.max(0, (lastFlush.get(name) ?? -Infinity) + flushMs - now());
    const timer = setTimeout(() => {
      timers.delete(name);
      void flush(name);
    }, wait);
    timer.unref();
    timers.set(name, timer);
  }

  /** One flush of `name` at a time: a later one waits for the one in flight. */
  function flush(name: string): Promise<void> {
    const previous = flushing.get(name) ?? Promise.resolve();
    const next = previous.then(() => write(name));
    flushing.set(name, next);
    return next.finally(() => {
      if (flushing.get(name) === next) flushing.delete(name);
    });
  }

  /** Drops what was carried for a provider that is gone, and its bookkeeping unless more came meanwhile. */
  function forget(name: string, carried: ReadonlyMap<number, number>): void {
    deductCarried(name, carried);
    failures.delete(name);
    if (!pending.has(name)) lastFlush.delete(name);
  }

  /** Keeps the counts of a write that failed (or may have), and tries again later, more slowly each time. */
  function failed(name: string, err: unknown): void {
    const times = (failures.get(name) ?? 0) + 1;
    failures.set(name, times);
    o.log.warn(
      { provider: name, err: kubeErrorMessage(err), objects: sum(deltasOf(name)) },
      'writing the objects served to the AdmissionProvider status failed; kept for the next attempt',
    );
    schedule(name, Math.min(flushMs * 2 ** times, MAX_RETRY_MS));
  }

  async function write(name: string): Promise<void> {
    lastFlush.set(name, now());
    let resource = o.store.cached(name);
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      if (!resource) {
        try {
          resource = await o.store.read(name);
        } catch (err) {
          failed(name, err);
          return;
        }
      }
      const carried = new Map(deltasOf(name));
      if (!resource) {
        // Not an AdmissionProvider (any more): nowhere to count it.
        if (carried.size > 0) o.log.debug({ provider: name }, 'objects served by a provider that is gone: not counted');
        forget(name, carried);
        return;
      }
      const { next, dropped } = addServed(resource.status?.references, carried, now(), windowMs);
      if (dropped > 0) {
        o.log.warn({ provider: name, objects: dropped }, 'objects served in a window that has ended: not counted');
      }
      if (!next) {
        deductCarried(name, carried);
        return;
      }
      const resourceVersion = resource.metadata.resourceVersion;
      if (resourceVersion === undefined) {
        // Nothing to make the write conditional on: read it from the apiserver instead.
        resource = undefined;
        continue;
      }
      try {
        await o.store.write(name, resourceVersion, next);
        deductCarried(name, carried);
        failures.delete(name);
        return;
      } catch (err) {
        const code = statusCode(err);
        if (code === 404) {
          forget(name, carried);
          return;
        }
        if (code !== 409) {
          failed(name, err);
          return;
        }
        // Someone wrote in between: start again from what is stored now.
        o.log.debug(
          { provider: name, attempt },
          'objects served: the status changed meanwhile; retrying from a fresh read',
        );
        resource = undefined;
      }
    }
    o.log.warn({ provider: name, attempts: maxAttempts }, 'objects served not written: conflicts on every attempt');
    schedule(name);
  }

  /** Tells every provider whose stored window has ended, some time after the end of each window. */
  function scheduleRotation(): void {
    const end = windowStartOf(now(), windowMs) + windowMs;
    const spread = Math.random() * Math.min(ROTATION_SPREAD_MS, windowMs / 10);
    rotationTimer = setTimeout(
      () => {
        for (const name of o.store.names()) counter.observe(name);
        scheduleRotation();
      },
      end - now() + spread,
    );
    rotationTimer.unref();
  }

  const counter: ServedCounter = {
    served(extension) {
      if (stopped || o.ignored?.has(extension)) return;
      let windows = pending.get(extension);
      if (!windows) {
        if (pending.size >= maxNames) {
          if (!warnedFull) o.log.warn({ maxNames }, 'too many providers to count objects served for; some not counted');
          warnedFull = true;
          return;
        }
        pending.set(extension, (windows = new Map<number, number>()));
      }
      const window = windowStartOf(now(), windowMs);
      windows.set(window, (windows.get(window) ?? 0) + 1);
      // After a failure the retry is already scheduled, later than this would be.
      schedule(extension);
    },
    observe(name) {
      if (stopped || timers.has(name) || o.ignored?.has(name)) return;
      const resource = o.store.cached(name);
      if (resource && addServed(resource.status?.references, new Map<number, number>(), now(), windowMs).next)
        schedule(name);
    },
    start() {
      stopped = false;
      scheduleRotation();
    },
    async stop(timeoutMs = 5000) {
      stopped = true;
      clearTimeout(rotationTimer);
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
      const last = Promise.all([...new Set([...pending.keys(), ...flushing.keys()])].map((name) => flush(name)));
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
      await Promise.race([last, late]).finally(() => clearTimeout(timer));
      if (pending.size > 0) {
        const objects = [...pending.values()].reduce((total, windows) => total + sum(windows), 0);
        o.log.warn({ objects }, 'objects served not written before shutdown');
      }
    },
  };
  return counter;
}

function sum(windows: ReadonlyMap<number, number>): number {
  let total = 0;
  for (const count of windows.values()) total += count;
  return total;
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
