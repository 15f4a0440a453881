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
 * The type of the objects of each built-in resource a match names by its plural (the API group of each comes
 * from the apiserver's table of built-in kinds, `server/admission/built-in-kinds.ts`).
 */
export interface BuiltInObjects {
  pods: Pod;
  services: Service;
  configmaps: ConfigMap;
  secrets: Secret;
  namespaces: Namespace;
  serviceaccounts: Received<V1ServiceAccount>;
  persistentvolumeclaims: Received<V1PersistentVolumeClaim>;
  persistentvolumes: Received<V1PersistentVolume>;
  nodes: Received<V1Node>;
  replicationcontrollers: ReplicationController;
  podtemplates: PodTemplate;
  endpoints: Received<V1Endpoints>;
  events: Received<CoreV1Event>;
  limitranges: Received<V1LimitRange>;
  resourcequotas: Received<V1ResourceQuota>;
  deployments: Deployment;
  statefulsets: StatefulSet;
  daemonsets: DaemonSet;
  replicasets: ReplicaSet;
  controllerrevisions: Received<V1ControllerRevision>;
  jobs: Job;
  cronjobs: CronJob;
  ingresses: Received<V1Ingress>;
  ingressclasses: Received<V1IngressClass>;
  networkpolicies: Received<V1NetworkPolicy>;
  roles: Received<V1Role>;
  rolebindings: Received<V1RoleBinding>;
  clusterroles: Received<V1ClusterRole>;
  clusterrolebindings: Received<V1ClusterRoleBinding>;
  poddisruptionbudgets: Received<V1PodDisruptionBudget>;
  horizontalpodautoscalers: Received<V2HorizontalPodAutoscaler>;
  storageclasses: Received<V1StorageClass>;
  priorityclasses: Received<V1PriorityClass>;
  leases: Received<V1Lease>;
  mutatingwebhookconfigurations: Received<V1MutatingWebhookConfiguration>;
  validatingwebhookconfigurations: Received<V1ValidatingWebhookConfiguration>;
  customresourcedefinitions: Received<V1CustomResourceDefinition>;
}

export type BuiltInResource = keyof BuiltInObjects;

/**
 * The object a request for `resource` carries. A subresource's request carries its parent's object for
 * `status` and `ephemeralcontainers`, a Scale for `scale`; anything else (custom resources, other
 * subresources, `*`) is a `KubeObject` to narrow by hand.
 */
export type ObjectFor<R extends string> = R extends BuiltInResource
  ? BuiltInObjects[R]
  : R extends `${infer Parent extends BuiltInResource}/${'status' | 'ephemeralcontainers'}`
    ? BuiltInObjects[Parent]
    : R extends `${string}/scale`
      ? Received<V1Scale>
      : KubeObject;

/** A resource name as a match takes it: a built-in plural (suggested by the editor) or any other. */
// `string & {}` keeps the editor's suggestions of the built-in names while accepting any string.
export type ResourceName = BuiltInResource | `${BuiltInResource}/${string}` | (string & {});
