/**
 * A Namespace as a policy's `namespaceObject` reads it: the fields the apiserver hands its policies (its spec and
 * status, and its metadata without managedFields and ownerReferences), in their JSON form, whether the object came
 * from the wire or from the Kubernetes client's models (whose times are Dates). Its times stay strings, as in the
 * apiserver, which declares them timestamps but hands them over as the strings they are in JSON.
 */
import type { KubeObject } from './types.js';

const METADATA_FIELDS = [
  'name',
  'generateName',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'finalizers',
] as const;

/** As metav1.Time writes itself: RFC 3339 to the second. */
function rfc3339(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * JSON as the apiserver writes it, of an object the Kubernetes client's models read (whose times are Dates):
 * Dates as times, undefined fields left out. Deeper than its metadata, no model field is a time.
 */
export function plain(value: unknown, depth = 0): unknown {
  if (value instanceof Date) return rfc3339(value);
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  if (Array.isArray(value)) return value.map((item) => plain(item, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) if (item !== undefined) out[key] = plain(item, depth + 1);
  return out;
}

interface NamespaceLike {
  readonly metadata?: object;
  readonly spec?: unknown;
  readonly status?: unknown;
}

/** `namespace` (a V1Namespace or its JSON) as `namespaceObject`. */
export function namespaceForPolicies(namespace: NamespaceLike): KubeObject {
  const metadata: Record<string, unknown> = {};
  const source = (namespace.metadata ?? {}) as Record<string, unknown>;
  for (const field of METADATA_FIELDS) if (source[field] !== undefined) metadata[field] = plain(source[field]);
  return {
    metadata,
    ...(namespace.spec !== undefined ? { spec: plain(namespace.spec) } : {}),
    ...(namespace.status !== undefined ? { status: plain(namespace.status) } : {}),
  };
}

/** What is known of a namespace without a cluster: its name and labels. */
export function namespaceFromLabels(name: string, labels: Readonly<Record<string, string>> | undefined): KubeObject {
  return { metadata: { name, ...(labels ? { labels: { ...labels } } : {}) } };
}
