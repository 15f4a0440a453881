/**
 * What one authorization request asks (the spec of a SubjectAccessReview, as the apiserver's webhook
 * authorizer sends it): who, and what they want to do — on a resource, or on a non-resource path.
 */
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
