/**
 * What one authorization request asks (the spec of a SubjectAccessReview, as the apiserver's webhook
 * authorizer sends it): who, and what they want to do — on a resource, or on a non-resource path.
 */
/**
 * One requirement of a list's or watch's label or field selector, as kube-apiserver parsed it (1.34+):
 * `app=web` is `{ key: 'app', operator: 'In', values: ['web'] }`; `Exists` and `DoesNotExist` have no values
 * (label selectors only). Requirements are ANDed.
 */
export interface SelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values: readonly string[];
}

export interface ResourceAttributes {
  /** '' for a cluster-scoped resource, or a request across namespaces (list/watch without one). */
  readonly namespace: string;
  readonly verb: string;
  /** '' for the core group. */
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  /** '' when the request is for the resource itself (`exec` for pods/exec). */
  readonly subresource: string;
  /** '' for list, watch, create and deletecollection. */
  readonly name: string;
  /** What a list's, watch's or deletecollection's label selector narrows it to; empty when it has none. */
  readonly labelSelector: readonly SelectorRequirement[];
  /** What its field selector narrows it to (`In` and `NotIn` only); empty when it has none. */
  readonly fieldSelector: readonly SelectorRequirement[];
}

/** A selector on the wire (the SubjectAccessReview a remote authorize provider is sent). */
export interface SelectorAttributes {
  readonly requirements: readonly SelectorRequirement[];
}

/** ResourceAttributes on the wire: a selector only when the request has one, as kube-apiserver sends it. */
export interface ResourceAttributesWire extends Omit<ResourceAttributes, 'labelSelector' | 'fieldSelector'> {
  readonly labelSelector?: SelectorAttributes;
  readonly fieldSelector?: SelectorAttributes;
}

export interface NonResourceAttributes {
  /** The URL path (`/healthz`, `/apis`). */
  readonly path: string;
  readonly verb: string;
}

export interface AuthorizationAttributes {
  readonly user: string;
  readonly uid: string;
  readonly groups: readonly string[];
  readonly extra: Readonly<Record<string, readonly string[]>>;
  /** Exactly one of `resource` and `nonResource` is set. */
  readonly resource: ResourceAttributes | undefined;
  readonly nonResource: NonResourceAttributes | undefined;
}

/** The verb of either kind of request. */
export const verbOf = (a: AuthorizationAttributes): string => (a.resource ?? a.nonResource)!.verb;
