/**
 * The wire shapes of admission: the AdmissionReview envelope (admission.k8s.io/v1 and v1beta1 share this
 * shape), the objects it carries, the JSON patch it answers with, and the admissionregistration.k8s.io/v1
 * shapes that say which requests a webhook (here: a step) sees. Spelled exactly as Kubernetes spells them.
 * https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#request
 */

export const ADMISSION_V1 = 'admission.k8s.io/v1';
export const ADMISSION_V1BETA1 = 'admission.k8s.io/v1beta1';
export type AdmissionApiVersion = typeof ADMISSION_V1 | typeof ADMISSION_V1BETA1;

/** The admission operation of a request. */
export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** Standard object metadata; only the fields the gateway or a typical plugin reads are typed. */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string> | null;
  annotations?: Record<string, string> | null;
  ownerReferences?: unknown[] | null;
  [key: string]: unknown;
}

/** Any Kubernetes object as JSON. A map or list the client left out may arrive as `null`. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta | null;
  [key: string]: unknown;
}

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

export interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** `AdmissionReview.request` (admission.k8s.io/v1). */
export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  resource: GroupVersionResource;
  subResource?: string;
  requestKind?: GroupVersionKind;
  requestResource?: GroupVersionResource;
  requestSubResource?: string;
  name?: string;
  namespace?: string;
  operation: Operation;
  userInfo: UserInfo;
  object?: KubeObject | null;
  oldObject?: KubeObject | null;
  dryRun?: boolean;
  options?: KubeObject | null;
}

/** One rule of a webhook configuration (admissionregistration.k8s.io/v1 RuleWithOperations). */
export interface RuleWithOperations {
  /** CREATE, UPDATE, DELETE, CONNECT or `*`. */
  operations: ReadonlyArray<Operation | '*'>;
  /** API groups; `""` is the core group, `*` all groups. */
  apiGroups: readonly string[];
  apiVersions: readonly string[];
  /** Resources, `resource/subresource`, `*`, `*\/status`, `pods/*` or `*\/*`. */
  resources: readonly string[];
  /** `Cluster`, `Namespaced` or `*` (the default). */
  scope?: 'Cluster' | 'Namespaced' | '*';
}

export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: readonly string[];
}

/** A Kubernetes label selector; an empty selector matches everything. */
export interface LabelSelector {
  matchLabels?: Readonly<Record<string, string>>;
  matchExpressions?: readonly LabelSelectorRequirement[];
}

/** Which requests a step sees: the same shapes and semantics as a webhook configuration's. */
export interface Match {
  rules: readonly RuleWithOperations[];
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
}

/** One JSON Patch (RFC 6902) operation. */
export type JsonPatchOperation =
  | { op: 'add' | 'replace' | 'test'; path: string; value: unknown }
  | { op: 'remove'; path: string }
  | { op: 'move' | 'copy'; from: string; path: string };

/** metav1.Status as carried in `response.status`. */
export interface Status {
  metadata?: Record<string, never>;
  status?: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  code?: number;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: Status;
  /** base64 of a JSON array of RFC 6902 operations. */
  patch?: string;
  patchType?: 'JSONPatch';
  auditAnnotations?: Record<string, string>;
  warnings?: string[];
}

export interface AdmissionReview {
  apiVersion: AdmissionApiVersion;
  kind: 'AdmissionReview';
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

/** The webhook phase a step belongs to: mutating or validating. */
export type Phase = 'mutate' | 'validate';
