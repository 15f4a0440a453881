/**
 * Counts uses of resources on this replica and adds them to a usage counter in each resource's status — the
 * sum over all replicas, not this replica's share (usage-window.ts has the arithmetic). What a use is, which
 * resource it counts for and where in its status the count is kept are the store's and the caller's: the
 * objects an opt-in AdmissionProvider served (served-counter.ts), the reviews an exception let off
 * (exception-usage.ts).
 *
 * Each write is a merge patch of the status carrying the `metadata.resourceVersion` it was computed from:
 * the apiserver refuses it with 409 when another replica (or a status writer) wrote in between, and the
 * count is recomputed from a fresh read and tried again. A count leaves this replica only once a write of it
 * succeeded. Writes happen at most every `flushMs` per resource and only when something was counted — or
 * when the window ended and the stored count must rotate.
 */
import type { Logger } from '../base/log.js';
import { kubeErrorMessage, statusCode } from './kube-errors.js';
import { USAGE_WINDOW_MS, addCounts, windowStartOf, type StoredCounts, type WindowCounts } from './usage-window.js';

/** One resource as the store has it: what to make a write conditional on, and its stored counts. */
export interface StoredUsage {
  readonly resourceVersion: string | undefined;
  readonly counts: StoredCounts | undefined;
}

/** Where the counts are stored, by key: the informer's cache, a fresh read, a conditional write. */
export interface UsageStore {
  /** The resource as the informer has it (undefined: not known). */
  cached(key: string): StoredUsage | undefined;
  /** The keys of the resources the informer has. */
  keys(): readonly string[];
  /** The resource as stored now (undefined: it does not exist). */
  read(key: string): Promise<StoredUsage | undefined>;
  /** Writes the counts if the resource is still at `resourceVersion`; rejects with the apiserver's 409 if not. */
  write(key: string, resourceVersion: string, counts: WindowCounts): Promise<void>;
}

/** How the log names what is counted: `{ [key]: "scanner" }`, `objects served`, `AdmissionProvider`. */
export interface UsageWords {
  /** The log field naming the resource: `provider`. */
  readonly key: string;
  /** What is counted: `objects served`. */
  readonly counted: string;
  /** The log field of a number of them: `objects`. */
  readonly unit: string;
  /** The kind of resource: `AdmissionProvider`. */
  readonly resource: string;
}

export interface UsageCounterOptions {
  readonly store: UsageStore;
  readonly log: Logger;
  readonly words: UsageWords;
  /** Keys that never have a resource: not counted. */
  readonly ignored?: ReadonlySet<string>;
  /** Also keep the time of the latest use (`lastUsed`). */
  readonly lastUsed?: boolean;
  /** Minimum time between two writes of one resource. Default 5 s. */
  readonly flushMs?: number;
  /** The window's length. Default an hour. */
  readonly windowMs?: number;
  readonly now?: () => number;
  /** Attempts of one write that meets 409 after 409. Default 5. */
  readonly maxAttempts?: number;
  /** Resources counted at once; more are not counted. Default 1024. */
  readonly maxKeys?: number;
}

export interface UsageCounter {
  /** The resource of `key` was used once. */
  count(key: string): void;
  /** The resource's stored status changed or was first seen: rotates a window that ended, if it must. */
  observe(key: string): void;
  start(): void;
  /** Writes what is pending (bounded by `timeoutMs`); counts after this are not kept. */
  stop(timeoutMs?: number): Promise<void>;
}

/** Counted on this replica and not yet written. */
interface Pending {
  /** The window start → uses counted in it. */
  readonly windows: Map<number, number>;
  lastUsed?: number | undefined;
}

/** The longest wait between attempts after failures (an apiserver that is away). */
const MAX_RETRY_MS = 60_000;
/** Spreads the rotation writes of several replicas after the window ends (the first one wins, the rest 409). */
const ROTATION_SPREAD_MS = 10_000;

export function createUsageCounter(o: UsageCounterOptions): UsageCounter {
  const flushMs = o.flushMs ?? 5000;
  const windowMs = o.windowMs ?? USAGE_WINDOW_MS;
  const now = o.now ?? Date.now;
  const maxAttempts = o.maxAttempts ?? 5;
  const maxKeys = o.maxKeys ?? 1024;
  const { words } = o;
  const pending = new Map<string, Pending>();
  const timers = new Map<string, NodeJS.Timeout>();
  const lastFlush = new Map<string, number>();
  const failures = new Map<string, number>();
  const flushing = new Map<string, Promise<void>>();
  let rotationTimer: NodeJS.Timeout | undefined;
  let stopped = true;
  let warnedFull = false;

  /** A copy of what is pending for `key`: what a write carries. */
  const carriedOf = (key: string): Pending => {
    const left = pending.get(key);
    return { windows: new Map(left?.windows), lastUsed: left?.lastUsed };
  };

  /** Takes what a successful write (or a drop) carried off the pending counts; later counts stay. */
  const deductCarried = (key: string, carried: Pending) => {
    const left = pending.get(key);
    if (!left) return;
    for (const [window, count] of carried.windows) {
      const rest = (left.windows.get(window) ?? 0) - count;
      if (rest > 0) left.windows.set(window, rest);
      else left.windows.delete(window);
    }
    // A later use came meanwhile: its time is still to be written.
    if (left.lastUsed !== undefined && left.lastUsed === carried.lastUsed) left.lastUsed = undefined;
    if (left.windows.size === 0 && left.lastUsed === undefined) pending.delete(key);
  };

  function schedule(key: string, delayMs?: number): void {
    if (stopped || timers.has(key)) return;
    const wait = delayMs ?? Math.max(0, (lastFlush.get(key) ?? -Infinity) + flushMs - now());
    const timer = setTimeout(() => {
      timers.delete(key);
      void flush(key);
    }, wait);
    timer.unref();
    timers.set(key, timer);
  }

  /** One flush of `key` at a time: a later one waits for the one in flight. */
  function flush(key: string): Promise<void> {
    const previous = flushing.get(key) ?? Promise.resolve();
    const next = previous.then(() => write(key));
    flushing.set(key, next);
    return next.finally(() => {
      if (flushing.get(key) === next) flushing.delete(key);
    });
  }

  /** Drops what was carried for a resource that is gone, and its bookkeeping unless more came meanwhile. */
  function forget(key: string, carried: Pending): void {
    deductCarried(key, carried);
    failures.delete(key);
    if (!pending.has(key)) lastFlush.delete(key);
  }

  /** Keeps the counts of a write that failed (or may have), and tries again later, more slowly each time. */
  function failed(key: string, err: unknown): void {
    const times = (failures.get(key) ?? 0) + 1;
    failures.set(key, times);
    o.log.warn(
      { [words.key]: key, err: kubeErrorMessage(err), [words.unit]: sum(carriedOf(key).windows) },
      `writing the ${words.counted} to the ${words.resource} status failed; kept for the next attempt`,
    );
    schedule(key, Math.min(flushMs * 2 ** times, MAX_RETRY_MS));
  }

  async function write(key: string): Promise<void> {
    lastFlush.set(key, now());
    let resource = o.store.cached(key);
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      if (!resource) {
        try {
          resource = await o.store.read(key);
        } catch (err) {
          failed(key, err);
          return;
        }
      }
      const carried = carriedOf(key);
      if (!resource) {
        // Not a resource (any more): nowhere to count it.
        if (carried.windows.size > 0)
          o.log.debug({ [words.key]: key }, `${words.counted}: the ${words.resource} is gone; not counted`);
        forget(key, carried);
        return;
      }
      const { next, dropped } = addCounts(resource.counts, carried, now(), windowMs);
      if (dropped > 0) {
        o.log.warn(
          { [words.key]: key, [words.unit]: dropped },
          `${words.counted} in a window that has ended: not counted`,
        );
      }
      if (!next) {
        deductCarried(key, carried);
        return;
      }
      const { resourceVersion } = resource;
      if (resourceVersion === undefined) {
        // Nothing to make the write conditional on: read it from the apiserver instead.
        resource = undefined;
        continue;
      }
      try {
        await o.store.write(key, resourceVersion, next);
        deductCarried(key, carried);
        failures.delete(key);
        return;
      } catch (err) {
        const code = statusCode(err);
        if (code === 404) {
          forget(key, carried);
          return;
        }
        if (code !== 409) {
          failed(key, err);
          return;
        }
        // Someone wrote in between: start again from what is stored now.
        o.log.debug(
          { [words.key]: key, attempt },
          `${words.counted}: the status changed meanwhile; retrying from a fresh read`,
        );
        resource = undefined;
      }
    }
    o.log.warn({ [words.key]: key, attempts: maxAttempts }, `${words.counted} not written: conflicts on every attempt`);
    schedule(key);
  }

  /** Tells every resource whose stored window has ended, some time after the end of each window. */
  function scheduleRotation(): void {
    const end = windowStartOf(now(), windowMs) + windowMs;
    const spread = Math.random() * Math.min(ROTATION_SPREAD_MS, windowMs / 10);
    rotationTimer = setTimeout(
      () => {
        for (const key of o.store.keys()) counter.observe(key);
        scheduleRotation();
      },
      end - now() + spread,
    );
    rotationTimer.unref();
  }

  const nothing: Pending = { windows: new Map<number, number>() };
  const counter: UsageCounter = {
    count(key) {
      if (stopped || o.ignored?.has(key)) return;
      let left = pending.get(key);
      if (!left) {
        if (pending.size >= maxKeys) {
          if (!warnedFull)
            o.log.warn({ maxKeys }, `too many ${words.resource}s to count ${words.counted} for; some not counted`);
          warnedFull = true;
          return;
        }
        pending.set(key, (left = { windows: new Map<number, number>() }));
      }
      const at = now();
      const window = windowStartOf(at, windowMs);
      left.windows.set(window, (left.windows.get(window) ?? 0) + 1);
      if (o.lastUsed) left.lastUsed = Math.max(left.lastUsed ?? at, at);
      // After a failure the retry is already scheduled, later than this would be.
      schedule(key);
    },
    observe(key) {
      if (stopped || timers.has(key) || o.ignored?.has(key)) return;
      const resource = o.store.cached(key);
      if (resource && addCounts(resource.counts, nothing, now(), windowMs).next) schedule(key);
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
      const last = Promise.all([...new Set([...pending.keys(), ...flushing.keys()])].map((key) => flush(key)));
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
      await Promise.race([last, late]).finally(() => clearTimeout(timer));
      if (pending.size > 0) {
        const left = [...pending.values()].reduce((total, p) => total + sum(p.windows), 0);
        o.log.warn({ [words.unit]: left }, `${words.counted} not written before shutdown`);
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
