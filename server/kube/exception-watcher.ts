/**
 * Cluster mode's AdmissionExceptions and ClusterAdmissionExceptions (README "Exceptions"): both watched with
 * informers that reconnect, every change read into the exceptions in force (off the request path, coalesced
 * into one rebuild per turn of the event loop), and each object's status conditions kept: Accepted (or not,
 * with the reason) and Expired. Expiry itself needs no write: reviews judge it against the clock, so an
 * expired exception stops applying at that instant on every replica, whether or not its status says so yet.
 * The reviews each one was used in are counted into its `status.usage` (exception-usage.ts), and those writes
 * alone cause no rebuild.
 */
import { isDeepStrictEqual } from 'node:util';
import {
  CustomObjectsApi,
  PatchStrategy,
  makeInformer,
  setHeaderOptions,
  type Informer,
  type KubeConfig,
  type KubernetesListObject,
  type ObjectCache,
} from '@kubernetes/client-node';
import { errorMessage } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import {
  CLUSTER_PLURAL,
  EXCEPTION_GROUP,
  EXCEPTION_VERSION,
  NAMESPACED_PLURAL,
  rfc3339,
  type GatewayException,
} from '../exceptions/exception.js';
import { readException } from '../exceptions/read-exception.js';
import type { WatchedExceptions } from '../exceptions/watched-exceptions.js';
import { kubeExceptionUsageStore, usageKey, type UsageObject } from './exception-usage.js';
import { runInformer, type InformerRunner, type InformerRunnerOptions } from './informer-runner.js';
import { kubeErrorMessage, statusCode } from './kube-errors.js';
import { createUsageCounter, type UsageCounterOptions } from './usage-counter.js';

interface ExceptionCondition {
  type: 'Accepted' | 'Expired';
  status: 'True' | 'False';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

type ExceptionObject = UsageObject & {
  metadata: { generation?: number };
  status?: { conditions?: ExceptionCondition[] };
};

/** The longest a status refresh waits for an expiry (timers are bounded; it is checked again then). */
const MAX_EXPIRY_WAIT_MS = 3_600_000;

export interface ExceptionWatcherOptions {
  readonly kc: KubeConfig;
  readonly exceptions: WatchedExceptions;
  readonly log: Logger;
  readonly backoff?: InformerRunnerOptions['backoff'];
  /** Told when a resource's list/watch connects or loses its connection (kube_watch_connected). */
  readonly onConnectionChange?: (resource: string, connected: boolean) => void;
  /** The usage counter's timing (flushMs, windowMs, now). */
  readonly usage?: Pick<UsageCounterOptions, 'flushMs' | 'windowMs' | 'now'>;
}

export interface ExceptionWatcher {
  readonly runners: readonly InformerRunner[];
  /** A review used the exception (once per review): counted if it is one of the cluster's. */
  used(exception: GatewayException): void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The conditions an exception's status should carry now: Accepted (or why not), and Expired. */
export function desiredConditions(
  object: ExceptionObject,
  outcome: GatewayException | Error,
  now: number,
  previous: readonly ExceptionCondition[] = [],
): ExceptionCondition[] {
  const generation = object.metadata.generation;
  const at = rfc3339(now);
  const condition = (c: Omit<ExceptionCondition, 'lastTransitionTime'>): ExceptionCondition => {
    const before = previous.find((p) => p.type === c.type);
    return {
      ...c,
      lastTransitionTime: before && before.status === c.status ? before.lastTransitionTime : at,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    };
  };
  if (outcome instanceof Error) {
    return [condition({ type: 'Accepted', status: 'False', reason: 'Invalid', message: outcome.message })];
  }
  const expired = now >= outcome.expiresAt;
  return [
    condition({
      type: 'Accepted',
      status: 'True',
      reason: 'Valid',
      message: `applies to steps ${outcome.steps.join(', ')}`,
    }),
    condition({
      type: 'Expired',
      status: expired ? 'True' : 'False',
      reason: expired ? 'Expired' : 'InForce',
      message: `${expired ? 'expired' : 'expires'} at ${outcome.expiresAtText}`,
    }),
  ];
}

/**
 * Whether the stored conditions are already `next`, key order aside: the apiserver returns a custom
 * resource's keys sorted, so comparing the text would rewrite every object's status on every rebuild.
 */
export const sameConditions = (
  stored: readonly ExceptionCondition[] | undefined,
  next: readonly ExceptionCondition[],
) => isDeepStrictEqual(stored ?? [], next);

/**
 * What a rebuild reads of an object: all of it but its usage counts and what every write moves, so that the
 * usage writes of the replicas (one per exception every few seconds each) do not read every exception again.
 */
export function rebuildSignature<T extends UsageObject>(object: T): string {
  const { resourceVersion: _version, managedFields: _fields, ...metadata } = object.metadata;
  const { usage: _usage, ...status } = object.status ?? {};
  return JSON.stringify({ ...object, metadata, status });
}

export function createExceptionWatcher(o: ExceptionWatcherOptions): ExceptionWatcher {
  const api = o.kc.makeApiClient(CustomObjectsApi);
  const inform = (plural: string): Informer<ExceptionObject> & ObjectCache<ExceptionObject> =>
    makeInformer<ExceptionObject>(
      o.kc,
      `/apis/${EXCEPTION_GROUP}/${EXCEPTION_VERSION}/${plural}`,
      () =>
        api.listClusterCustomObject({ group: EXCEPTION_GROUP, version: EXCEPTION_VERSION, plural }) as Promise<
          KubernetesListObject<ExceptionObject>
        >,
    );
  const namespaced = inform(NAMESPACED_PLURAL);
  const cluster = inform(CLUSTER_PLURAL);
  const run = (plural: string, informer: Informer<ExceptionObject>): InformerRunner =>
    runInformer(plural, informer, o.log, {
      ...(o.backoff ? { backoff: o.backoff } : {}),
      onConnectionChange: (connected) => o.onConnectionChange?.(plural, connected),
    });
  const runners = [run(NAMESPACED_PLURAL, namespaced), run(CLUSTER_PLURAL, cluster)];
  const usage = createUsageCounter({
    store: kubeExceptionUsageStore(api, { namespaced, cluster }),
    log: o.log,
    words: { key: 'exception', counted: 'reviews used', unit: 'reviews', resource: 'exception' },
    lastUsed: true,
    ...o.usage,
  });
  /** The refs of the cluster's exceptions in force: only those have a status to count into. */
  let watchedRefs = new Set<string>();
  /** Each object's rebuildSignature as last seen. */
  const signatures = new Map<string, string>();
  /** The last problem logged per object, so that our own status writes do not log it again. */
  const problems = new Map<string, string>();
  let scheduled: NodeJS.Immediate | undefined;
  let expiryTimer: NodeJS.Timeout | undefined;
  let stopped = true;

  const writeStatus = async (object: ExceptionObject, conditions: ExceptionCondition[]): Promise<void> => {
    const { name, namespace } = object.metadata;
    const body = { status: { conditions } };
    const headers = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    try {
      if (namespace) {
        await api.patchNamespacedCustomObjectStatus(
          { group: EXCEPTION_GROUP, version: EXCEPTION_VERSION, plural: NAMESPACED_PLURAL, namespace, name, body },
          headers,
        );
      } else {
        await api.patchClusterCustomObjectStatus(
          { group: EXCEPTION_GROUP, version: EXCEPTION_VERSION, plural: CLUSTER_PLURAL, name, body },
          headers,
        );
      }
    } catch (err) {
      if (statusCode(err) !== 404) {
        o.log.warn(
          { exception: `${namespace ?? ''}/${name}`, err: kubeErrorMessage(err) },
          'writing exception status failed',
        );
      }
    }
  };

  const rebuild = (): void => {
    scheduled = undefined;
    if (stopped) return;
    // The clock reviews judge expiry by: the Expired condition turns when reviews stop applying it.
    const now = o.exceptions.now();
    const rules = { maxLifetimeMs: o.exceptions.maxLifetimeMs, now };
    const valid: GatewayException[] = [];
    let nextExpiry = Infinity;
    for (const object of [...namespaced.list(), ...cluster.list()]) {
      let outcome: GatewayException | Error;
      try {
        outcome = readException(object, rules);
        valid.push(outcome);
        if (outcome.expiresAt > now) nextExpiry = Math.min(nextExpiry, outcome.expiresAt);
      } catch (err) {
        outcome = err instanceof Error ? err : new Error(errorMessage(err));
      }
      const key = `${object.kind ?? ''}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
      const problem = outcome instanceof Error ? outcome.message : undefined;
      if (problem && problems.get(key) !== problem) o.log.warn({ exception: key, err: problem }, 'invalid exception');
      if (problem) problems.set(key, problem);
      else problems.delete(key);
      const conditions = desiredConditions(object, outcome, now, object.status?.conditions);
      if (!sameConditions(object.status?.conditions, conditions)) void writeStatus(object, conditions);
    }
    o.exceptions.setWatched(valid);
    watchedRefs = new Set(valid.map((e) => e.ref));
    // The Expired condition turns at the next expiry: look again then.
    clearTimeout(expiryTimer);
    if (nextExpiry !== Infinity) {
      expiryTimer = setTimeout(schedule, Math.min(nextExpiry - now, MAX_EXPIRY_WAIT_MS));
      expiryTimer.unref();
    }
  };

  function schedule(): void {
    scheduled ??= setImmediate(rebuild);
  }

  for (const informer of [namespaced, cluster]) {
    informer.on('add', (object) => {
      signatures.set(usageKey(object), rebuildSignature(object));
      // A window that ended while no replica ran is rotated now.
      usage.observe(usageKey(object));
      schedule();
    });
    informer.on('update', (object) => {
      const key = usageKey(object);
      const signature = rebuildSignature(object);
      if (signatures.get(key) === signature) return;
      signatures.set(key, signature);
      schedule();
    });
    informer.on('delete', (object) => {
      signatures.delete(usageKey(object));
      schedule();
    });
  }

  return {
    runners,
    used(exception) {
      if (watchedRefs.has(exception.ref)) usage.count(exception.ref);
    },
    async start() {
      stopped = false;
      usage.start();
      await Promise.all(runners.map((runner) => runner.start()));
      schedule();
    },
    async stop() {
      stopped = true;
      clearTimeout(expiryTimer);
      if (scheduled) clearImmediate(scheduled);
      // What this replica counted and did not write yet is written now, while the caches are still there.
      await usage.stop();
      await Promise.all(runners.map((runner) => runner.stop()));
    },
  };
}
