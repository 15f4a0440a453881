/**
 * Typed Kubernetes objects for plugins: the model types of `@kubernetes/client-node` (types only: nothing of
 * that package is loaded at run time), made honest about what a webhook receives.
 *
 * The apiserver calls mutating webhooks before it validates the object, and a custom resource can hold
 * anything, so a field the API marks required may still be missing: `Received<T>` makes every field
 * optional, all the way down. Timestamps arrive as RFC 3339 strings, not the `Date`s the client library
 * deserialises them into.
 */
import type {
  CoreV1Event,
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1ConfigMap,
  V1ControllerRevision,
  V1CronJob,
  V1CustomResourceDefinition,
  V1DaemonSet,
  V1Deployment,
  V1Endpoints,
  V1Ingress,
  V1IngressClass,
  V1Job,
  V1Lease,
  V1LimitRange,
  V1MutatingWebhookConfiguration,
  V1Namespace,
  V1NetworkPolicy,
  V1Node,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodDisruptionBudget,
  V1PodTemplate,
  V1PriorityClass,
  V1ReplicaSet,
  V1ReplicationController,
  V1ResourceQuota,
  V1Role,
  V1RoleBinding,
  V1Scale,
  V1Secret,
  V1Service,
  V1ServiceAccount,
  V1StatefulSet,
  V1StorageClass,
  V1ValidatingWebhookConfiguration,
  V2HorizontalPodAutoscaler,
} from '@kubernetes/client-node';
import type { KubeObject } from './types.js';

/**
 * An object as a webhook receives it: every field optional, a list or an object possibly `null`, timestamps
 * as strings. A map (labels, resource quantities) keeps its index signature as it is: reading an absent key is
 * already `undefined` under `noUncheckedIndexedAccess`.
 */
export type Received<T> = T extends Date
  ? string
  : T extends readonly (infer E)[]
    ? Received<E>[]
    : T extends object
      ? string extends keyof T
        ? { [key: string]: Received<T[string & keyof T]> }
        : { -readonly [K in keyof T]?: Field<T[K]> }
      : T;

/**
 * A field's value: a list, map or object the client left out may arrive as `null` (the apiserver writes a
 * Go slice, map or pointer without `omitempty` that way), so the compiler makes a plugin handle it.
 */
type Field<V> = V extends Date ? string : V extends object ? Received<V> | null : V;

export type Pod = Received<V1Pod>;
export type PodSpec = NonNullable<Pod['spec']>;
export type Container = NonNullable<PodSpec['containers']>[number];
export type Deployment = Received<V1Deployment>;
export type StatefulSet = Received<V1StatefulSet>;
export type DaemonSet = Received<V1DaemonSet>;
export type ReplicaSet = Received<V1ReplicaSet>;
export type Job = Received<V1Job>;
export type CronJob = Received<V1CronJob>;
export type ReplicationController = Received<V1ReplicationController>;
export type PodTemplate = Received<V1PodTemplate>;
export type Service = Received<V1Service>;
export type ConfigMap = Received<V1ConfigMap>;
export type Secret = Received<V1Secret>;
export type Namespace = Received<V1Namespace>;

/**
 * The built-in resources a match names by their plural, the API group each is served from (the group of its
 * v1 version; `extensions` and other legacy groups must be named with `.groups()`), and the type of its object.
 */
interface BuiltIn<Group extends string, Object> {
  readonly group: Group;
  readonly object?: Object;
}

const builtIn = <Group extends string, Object>(group: Group): BuiltIn<Group, Object> => ({ group });

export const BUILT_IN_RESOURCES = {
  pods: builtIn<'', Pod>(''),
  services: builtIn<'', Service>(''),
  configmaps: builtIn<'', ConfigMap>(''),
  secrets: builtIn<'', Secret>(''),
  namespaces: builtIn<'', Namespace>(''),
  serviceaccounts: builtIn<'', Received<V1ServiceAccount>>(''),
  persistentvolumeclaims: builtIn<'', Received<V1PersistentVolumeClaim>>(''),
  persistentvolumes: builtIn<'', Received<V1PersistentVolume>>(''),
  nodes: builtIn<'', Received<V1Node>>(''),
  replicationcontrollers: builtIn<'', ReplicationController>(''),
  podtemplates: builtIn<'', PodTemplate>(''),
  endpoints: builtIn<'', Received<V1Endpoints>>(''),
  events: builtIn<'', Received<CoreV1Event>>(''),
  limitranges: builtIn<'', Received<V1LimitRange>>(''),
  resourcequotas: builtIn<'', Received<V1ResourceQuota>>(''),
  deployments: builtIn<'apps', Deployment>('apps'),
  statefulsets: builtIn<'apps', StatefulSet>('apps'),
  daemonsets: builtIn<'apps', DaemonSet>('apps'),
  replicasets: builtIn<'apps', ReplicaSet>('apps'),
  controllerrevisions: builtIn<'apps', Received<V1ControllerRevision>>('apps'),
  jobs: builtIn<'batch', Job>('batch'),
  cronjobs: builtIn<'batch', CronJob>('batch'),
  ingresses: builtIn<'networking.k8s.io', Received<V1Ingress>>('networking.k8s.io'),
  ingressclasses: builtIn<'networking.k8s.io', Received<V1IngressClass>>('networking.k8s.io'),
  networkpolicies: builtIn<'networking.k8s.io', Received<V1NetworkPolicy>>('networking.k8s.io'),
  roles: builtIn<'rbac.authorization.k8s.io', Received<V1Role>>('rbac.authorization.k8s.io'),
  rolebindings: builtIn<'rbac.authorization.k8s.io', Received<V1RoleBinding>>('rbac.authorization.k8s.io'),
  clusterroles: builtIn<'rbac.authorization.k8s.io', Received<V1ClusterRole>>('rbac.authorization.k8s.io'),
  clusterrolebindings: builtIn<'rbac.authorization.k8s.io', Received<V1ClusterRoleBinding>>(
    'rbac.authorization.k8s.io',
  ),
  poddisruptionbudgets: builtIn<'policy', Received<V1PodDisruptionBudget>>('policy'),
  horizontalpodautoscalers: builtIn<'autoscaling', Received<V2HorizontalPodAutoscaler>>('autoscaling'),
  storageclasses: builtIn<'storage.k8s.io', Received<V1StorageClass>>('storage.k8s.io'),
  priorityclasses: builtIn<'scheduling.k8s.io', Received<V1PriorityClass>>('scheduling.k8s.io'),
  leases: builtIn<'coordination.k8s.io', Received<V1Lease>>('coordination.k8s.io'),
  mutatingwebhookconfigurations: builtIn<'admissionregistration.k8s.io', Received<V1MutatingWebhookConfiguration>>(
    'admissionregistration.k8s.io',
  ),
  validatingwebhookconfigurations: builtIn<'admissionregistration.k8s.io', Received<V1ValidatingWebhookConfiguration>>(
    'admissionregistration.k8s.io',
  ),
  customresourcedefinitions: builtIn<'apiextensions.k8s.io', Received<V1CustomResourceDefinition>>(
    'apiextensions.k8s.io',
  ),
} as const;

export type BuiltInResource = keyof typeof BUILT_IN_RESOURCES;

type ObjectOf<R extends BuiltInResource> = NonNullable<(typeof BUILT_IN_RESOURCES)[R]['object']>;

/**
 * The object a request for `resource` carries. A subresource's request carries its parent's object for
 * `status` and `ephemeralcontainers`, a Scale for `scale`; anything else (custom resources, other
 * subresources, `*`) is a `KubeObject` to narrow by hand.
 */
export type ObjectFor<R extends string> = R extends BuiltInResource
  ? ObjectOf<R>
  : R extends `${infer Parent extends BuiltInResource}/${'status' | 'ephemeralcontainers'}`
    ? ObjectOf<Parent>
    : R extends `${string}/scale`
      ? Received<V1Scale>
      : KubeObject;

/** A resource name as a match takes it: a built-in plural (suggested by the editor) or any other. */
// `string & {}` keeps the editor's suggestions of the built-in names while accepting any string.
export type ResourceName = BuiltInResource | `${BuiltInResource}/${string}` | (string & {});

/** The API group of a built-in resource or of its subresource; undefined for any other. */
export function groupOfResource(resource: string): string | undefined {
  const slash = resource.indexOf('/');
  const parent = slash === -1 ? resource : resource.slice(0, slash);
  return Object.hasOwn(BUILT_IN_RESOURCES, parent) ? BUILT_IN_RESOURCES[parent as BuiltInResource].group : undefined;
}
