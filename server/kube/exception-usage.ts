/**
 * How many admission reviews each AdmissionException and ClusterAdmissionException was used in, kept in its
 * `status.usage` (README "Exceptions"): `reviews` this hour so far, all replicas together, `windowStart`,
 * `previousWindowReviews` for the hour before, and `lastUsed`. The counting, the windows and the conditional
 * writes are usage-counter.ts's; this is where they are stored for an exception, and how the counter names one
 * among both resources: by its ref (`AdmissionException team-a/web`, exception.ts).
 */
import {
  PatchStrategy,
  setHeaderOptions,
  type CustomObjectsApi,
  type KubernetesObject,
  type ObjectCache,
} from '@kubernetes/client-node';
import {
  CLUSTER_KIND,
  CLUSTER_PLURAL,
  EXCEPTION_GROUP,
  EXCEPTION_VERSION,
  NAMESPACED_KIND,
  NAMESPACED_PLURAL,
  exceptionRef,
  type ExceptionKind,
} from '../exceptions/exception.js';
import { statusCode } from './kube-errors.js';
import type { StoredUsage, UsageStore } from './usage-counter.js';
import type { WindowCounts } from './usage-window.js';

/** `status.usage` as written. */
export interface ExceptionUsage {
  readonly reviews: number;
  readonly windowStart: string;
  readonly previousWindowReviews: number;
  readonly lastUsed?: string;
}

/** An exception object as far as its usage goes: anyone who may write its status may have written anything. */
export type UsageObject = KubernetesObject & {
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  status?: { usage?: { [K in keyof ExceptionUsage]?: unknown } };
};

/** The counter's key of an exception object: its ref. */
export function usageKey(object: UsageObject): string {
  const kind: ExceptionKind = object.metadata.namespace === undefined ? CLUSTER_KIND : NAMESPACED_KIND;
  return exceptionRef(kind, object.metadata.namespace, object.metadata.name);
}

interface Located {
  readonly plural: string;
  readonly namespace: string | undefined;
  readonly name: string;
}

/** Where a key's exception is: undefined for a key that names none (names hold neither spaces nor slashes). */
function locate(key: string): Located | undefined {
  const [kind, path, ...extra] = key.split(' ');
  if (path === undefined || extra.length > 0) return undefined;
  const [first, second, ...more] = path.split('/');
  if (!first || more.length > 0) return undefined;
  if (kind === NAMESPACED_KIND && second) return { plural: NAMESPACED_PLURAL, namespace: first, name: second };
  if (kind === CLUSTER_KIND && second === undefined)
    return { plural: CLUSTER_PLURAL, namespace: undefined, name: first };
  return undefined;
}

function usageOf(object: UsageObject | undefined): StoredUsage | undefined {
  if (!object) return undefined;
  const usage = object.status?.usage;
  return {
    resourceVersion: object.metadata.resourceVersion,
    counts: usage && {
      count: usage.reviews,
      windowStart: usage.windowStart,
      previousWindowCount: usage.previousWindowReviews,
      lastUsed: usage.lastUsed,
    },
  };
}

const exceptionUsage = (counts: WindowCounts): ExceptionUsage => ({
  reviews: counts.count,
  windowStart: counts.windowStart,
  previousWindowReviews: counts.previousWindowCount,
  ...(counts.lastUsed !== undefined ? { lastUsed: counts.lastUsed } : {}),
});

/** The watcher's informer caches of both resources. */
export interface ExceptionCaches {
  readonly namespaced: ObjectCache<UsageObject>;
  readonly cluster: ObjectCache<UsageObject>;
}

/**
 * The store of the usage counts on the apiserver: reads the informers' caches, or the object itself (`get`);
 * writes a merge patch of the status subresource carrying `metadata.resourceVersion`, which the apiserver turns
 * into a precondition. The conditions the watcher writes are left as they are.
 */
export function kubeExceptionUsageStore(api: CustomObjectsApi, caches: ExceptionCaches): UsageStore {
  const cacheOf = (at: Located) => (at.namespace === undefined ? caches.cluster : caches.namespaced);
  const headers = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  return {
    cached(key) {
      const at = locate(key);
      return at && usageOf(cacheOf(at).get(at.name, at.namespace));
    },
    keys: () => [...caches.namespaced.list(), ...caches.cluster.list()].map(usageKey),
    async read(key) {
      const at = locate(key);
      if (!at) return undefined;
      const resource = { group: EXCEPTION_GROUP, version: EXCEPTION_VERSION, plural: at.plural, name: at.name };
      try {
        return usageOf(
          (at.namespace === undefined
            ? await api.getClusterCustomObject(resource)
            : await api.getNamespacedCustomObject({ ...resource, namespace: at.namespace })) as UsageObject,
        );
      } catch (err) {
        if (statusCode(err) === 404) return undefined;
        throw err;
      }
    },
    async write(key, resourceVersion, counts) {
      const at = locate(key);
      if (!at) return;
      const body = { metadata: { resourceVersion }, status: { usage: exceptionUsage(counts) } };
      const resource = { group: EXCEPTION_GROUP, version: EXCEPTION_VERSION, plural: at.plural, name: at.name, body };
      if (at.namespace === undefined) await api.patchClusterCustomObjectStatus(resource, headers);
      else await api.patchNamespacedCustomObjectStatus({ ...resource, namespace: at.namespace }, headers);
    },
  };
}
