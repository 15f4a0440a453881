/**
 * What structured merge needs of an object's schema, for the kinds an ApplyConfiguration mutation is written
 * for: which lists merge by key (the OpenAPI `x-kubernetes-list-type: map` and its keys) or as sets, and which
 * maps and structs are atomic. The apiserver reads this from the resource's schema; the gateway has no schema, so
 * it knows the built-in workload kinds (Pods and the pod templates of Deployments, ReplicaSets, StatefulSets,
 * DaemonSets, Jobs, CronJobs, ReplicationControllers, PodTemplates), Services and every object's metadata. A list
 * it does not know is atomic, as a list without a list type is in Kubernetes, and an apply configuration may not
 * set one (apply-configuration.ts).
 */

/**
 * How a list merges: by the values of its key fields (a key field left out counts as its default, as the
 * apiserver has defaulted the object), or as a set of scalars.
 */
export type ListMerge =
  | {
      readonly type: 'map';
      readonly keys: readonly string[];
      readonly defaults?: Readonly<Record<string, string>>;
    }
  | { readonly type: 'set' };

const byKeys = (...keys: string[]): ListMerge => ({ type: 'map', keys });
/** Port lists: `protocol` defaults to TCP. */
const byPort = (port: string): ListMerge => ({ type: 'map', keys: [port, 'protocol'], defaults: { protocol: 'TCP' } });

/** Lists of a PodSpec, by their field name. */
const POD_SPEC_LISTS: ReadonlyMap<string, ListMerge> = new Map([
  ['containers', byKeys('name')],
  ['initContainers', byKeys('name')],
  ['ephemeralContainers', byKeys('name')],
  ['volumes', byKeys('name')],
  ['imagePullSecrets', byKeys('name')],
  ['hostAliases', byKeys('ip')],
  ['topologySpreadConstraints', byKeys('topologyKey', 'whenUnsatisfiable')],
  ['resourceClaims', byKeys('name')],
  ['schedulingGates', byKeys('name')],
]);

/** Lists of a Container, by their field path below it. */
const CONTAINER_LISTS: ReadonlyMap<string, ListMerge> = new Map([
  ['ports', byPort('containerPort')],
  ['env', byKeys('name')],
  ['volumeMounts', byKeys('mountPath')],
  ['volumeDevices', byKeys('devicePath')],
  ['resources.claims', byKeys('name')],
]);

const CONTAINER_FIELDS = new Set(['containers', 'initContainers', 'ephemeralContainers']);

/** Lists of ObjectMeta. */
const METADATA_LISTS: ReadonlyMap<string, ListMerge> = new Map([
  ['ownerReferences', byKeys('uid')],
  ['finalizers', { type: 'set' }],
]);

/** Where a kind keeps its PodSpec. */
const POD_SPEC_AT: ReadonlyMap<string, string> = new Map([
  ['Pod', 'spec'],
  ['PodTemplate', 'template.spec'],
  ['Deployment', 'spec.template.spec'],
  ['ReplicaSet', 'spec.template.spec'],
  ['StatefulSet', 'spec.template.spec'],
  ['DaemonSet', 'spec.template.spec'],
  ['Job', 'spec.template.spec'],
  ['ReplicationController', 'spec.template.spec'],
  ['CronJob', 'spec.jobTemplate.spec.template.spec'],
]);

/** Kinds whose `spec.selector` is a LabelSelector, atomic (`+structType=atomic`); a Service's is an atomic map. */
const ATOMIC_SELECTOR_KINDS = new Set(['Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet', 'Job', 'Service']);

/** The schema facts of one kind, asked by field path (field names, list indexes left out, joined by dots). */
export interface MergeSchema {
  /** How the list at `path` merges; undefined: it is atomic. */
  listAt(path: string): ListMerge | undefined;
  /** Whether the map or struct at `path` is atomic. */
  atomicAt(path: string): boolean;
}

/** `path` below `prefix` (`a.b` below `a`: `b`), or undefined when it is not below it. */
function below(path: string, prefix: string): string | undefined {
  return path.startsWith(`${prefix}.`) ? path.slice(prefix.length + 1) : undefined;
}

function podSpecList(rest: string): ListMerge | undefined {
  const known = POD_SPEC_LISTS.get(rest);
  if (known) return known;
  const dot = rest.indexOf('.');
  if (dot === -1 || !CONTAINER_FIELDS.has(rest.slice(0, dot))) return undefined;
  return CONTAINER_LISTS.get(rest.slice(dot + 1));
}

/** The merge schema of objects of `kind` (the request's `kind.kind`). */
export function mergeSchemaFor(kind: string): MergeSchema {
  const podSpec = POD_SPEC_AT.get(kind);
  // The object's metadata, and its pod template's (`spec.template.metadata`).
  const metadataAt = podSpec?.endsWith('.spec') ? ['metadata', `${podSpec.slice(0, -5)}.metadata`] : ['metadata'];
  return {
    listAt(path) {
      for (const meta of metadataAt) {
        const rest = below(path, meta);
        if (rest !== undefined) return METADATA_LISTS.get(rest);
      }
      if (kind === 'Service' && path === 'spec.ports') return byPort('port');
      const rest = podSpec === undefined ? undefined : below(path, podSpec);
      return rest === undefined ? undefined : podSpecList(rest);
    },
    atomicAt(path) {
      if (path === 'spec.selector' && ATOMIC_SELECTOR_KINDS.has(kind)) return true;
      return podSpec !== undefined && path === `${podSpec}.nodeSelector`;
    },
  };
}
