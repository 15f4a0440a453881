/**
 * The kinds Kubernetes serves itself: for each API group and kind, its resource (the plural a webhook rule
 * names) and whether its objects live in a namespace. A request for an object is built from it, and the
 * plugin API's match builder fills in the API group of a resource from it.
 */
export interface BuiltInKind {
  readonly resource: string;
  readonly namespaced: boolean;
}

const namespaced = (resource: string): BuiltInKind => ({ resource, namespaced: true });
const cluster = (resource: string): BuiltInKind => ({ resource, namespaced: false });

/** The built-in kinds by group and kind (Kubernetes 1.20 to 1.31). */
const BUILT_IN_KINDS: Readonly<Record<string, Readonly<Record<string, BuiltInKind>>>> = {
  '': {
    Binding: namespaced('bindings'),
    ComponentStatus: cluster('componentstatuses'),
    ConfigMap: namespaced('configmaps'),
    Endpoints: namespaced('endpoints'),
    Event: namespaced('events'),
    LimitRange: namespaced('limitranges'),
    Namespace: cluster('namespaces'),
    Node: cluster('nodes'),
    PersistentVolume: cluster('persistentvolumes'),
    PersistentVolumeClaim: namespaced('persistentvolumeclaims'),
    Pod: namespaced('pods'),
    PodTemplate: namespaced('podtemplates'),
    ReplicationController: namespaced('replicationcontrollers'),
    ResourceQuota: namespaced('resourcequotas'),
    Secret: namespaced('secrets'),
    Service: namespaced('services'),
    ServiceAccount: namespaced('serviceaccounts'),
  },
  'admissionregistration.k8s.io': {
    MutatingWebhookConfiguration: cluster('mutatingwebhookconfigurations'),
    ValidatingAdmissionPolicy: cluster('validatingadmissionpolicies'),
    ValidatingAdmissionPolicyBinding: cluster('validatingadmissionpolicybindings'),
    ValidatingWebhookConfiguration: cluster('validatingwebhookconfigurations'),
  },
  'apiextensions.k8s.io': { CustomResourceDefinition: cluster('customresourcedefinitions') },
  'apiregistration.k8s.io': { APIService: cluster('apiservices') },
  apps: {
    ControllerRevision: namespaced('controllerrevisions'),
    DaemonSet: namespaced('daemonsets'),
    Deployment: namespaced('deployments'),
    ReplicaSet: namespaced('replicasets'),
    StatefulSet: namespaced('statefulsets'),
  },
  autoscaling: { HorizontalPodAutoscaler: namespaced('horizontalpodautoscalers') },
  batch: { CronJob: namespaced('cronjobs'), Job: namespaced('jobs') },
  'certificates.k8s.io': { CertificateSigningRequest: cluster('certificatesigningrequests') },
  'coordination.k8s.io': { Lease: namespaced('leases') },
  'discovery.k8s.io': { EndpointSlice: namespaced('endpointslices') },
  'events.k8s.io': { Event: namespaced('events') },
  'flowcontrol.apiserver.k8s.io': {
    FlowSchema: cluster('flowschemas'),
    PriorityLevelConfiguration: cluster('prioritylevelconfigurations'),
  },
  'networking.k8s.io': {
    Ingress: namespaced('ingresses'),
    IngressClass: cluster('ingressclasses'),
    NetworkPolicy: namespaced('networkpolicies'),
  },
  'node.k8s.io': { RuntimeClass: cluster('runtimeclasses') },
  policy: { PodDisruptionBudget: namespaced('poddisruptionbudgets') },
  'rbac.authorization.k8s.io': {
    ClusterRole: cluster('clusterroles'),
    ClusterRoleBinding: cluster('clusterrolebindings'),
    Role: namespaced('roles'),
    RoleBinding: namespaced('rolebindings'),
  },
  'scheduling.k8s.io': { PriorityClass: cluster('priorityclasses') },
  'storage.k8s.io': {
    CSIDriver: cluster('csidrivers'),
    CSINode: cluster('csinodes'),
    CSIStorageCapacity: namespaced('csistoragecapacities'),
    StorageClass: cluster('storageclasses'),
    VolumeAttachment: cluster('volumeattachments'),
  },
};

/** A built-in kind's resource and scope; undefined for any other kind (a custom resource). */
export function builtInKind(group: string, kind: string): BuiltInKind | undefined {
  return Object.hasOwn(BUILT_IN_KINDS, group) && Object.hasOwn(BUILT_IN_KINDS[group]!, kind)
    ? BUILT_IN_KINDS[group]![kind]
    : undefined;
}

/** Resource → the group serving it; a resource served by several (events) keeps the first, the core group. */
const GROUP_OF_RESOURCE: ReadonlyMap<string, string> = (() => {
  const groups = new Map<string, string>();
  for (const [group, kinds] of Object.entries(BUILT_IN_KINDS)) {
    for (const { resource } of Object.values(kinds)) if (!groups.has(resource)) groups.set(resource, group);
  }
  return groups;
})();

/** The API group of a built-in resource or of its subresource (`pods/status`); undefined for any other. */
export function groupOfResource(resource: string): string | undefined {
  const slash = resource.indexOf('/');
  return GROUP_OF_RESOURCE.get(slash === -1 ? resource : resource.slice(0, slash));
}
