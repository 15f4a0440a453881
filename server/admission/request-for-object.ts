/**
 * The AdmissionRequest kube-apiserver would send for a write of a plain Kubernetes object: what
 * `admission-gateway review` runs when given a manifest instead of an AdmissionReview, and what a test of
 * a plugin can build its requests from. Pure apart from the generated uid.
 *
 * - kind → resource: the built-in kinds below (with their scope); any other kind gets its English plural
 *   in lower case ({@link guessResource}), which is how CRDs are usually named.
 * - group and version come from `apiVersion` (`apps/v1`; `v1` is the core group, `""`).
 * - namespace: `metadata.namespace`, else the option, else `default` for a namespaced built-in kind (as
 *   kubectl does); none for a cluster-scoped built-in kind; for any other kind only when one is given. As
 *   the apiserver does before admission, a namespaced object gets it in `metadata.namespace`.
 * - DELETE reviews the object as it is being deleted: it is sent as `oldObject`, with no `object`.
 */
import { randomUUID } from 'node:crypto';
import type { AdmissionRequest, KubeObject, Operation, UserInfo } from './types.js';
import { builtInKind, type BuiltInKind } from './built-in-kinds.js';

export interface RequestForObjectOptions {
  /** Default CREATE. */
  readonly operation?: Operation;
  /** The object before the write (UPDATE). */
  readonly oldObject?: KubeObject;
  /** Used when the object has no `metadata.namespace`. */
  readonly namespace?: string;
  /** Default {@link DEFAULT_USER}. */
  readonly userInfo?: UserInfo;
  readonly dryRun?: boolean;
  /** e.g. `status`, `scale`, `exec`. */
  readonly subResource?: string;
}

/** Who the request is made by unless told otherwise: an authenticated user that names where it came from. */
export const DEFAULT_USER: Readonly<UserInfo> = Object.freeze({
  username: 'admission-gateway:offline-review',
  groups: ['system:authenticated'],
});

/** The object cannot be a request's object: no usable `apiVersion` or `kind`. */
export class ObjectShapeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ObjectShapeError';
  }
}

/** The namespace kubectl writes a namespaced object into when neither the object nor the command names one. */
export const DEFAULT_NAMESPACE = 'default';

/**
 * The resource of a kind not in the table: its English plural in lower case, as CRD generators name it
 * (Widget → widgets, Ingress → ingresses, Policy → policies, Gateway → gateways).
 */
export function guessResource(kind: string): string {
  const lower = kind.toLowerCase();
  if (/(s|x|z|ch|sh)$/.test(lower)) return `${lower}es`;
  if (/[^aeiou]y$/.test(lower)) return `${lower.slice(0, -1)}ies`;
  return `${lower}s`;
}

/** `apps/v1` → group `apps`, version `v1`; `v1` → the core group. */
function groupVersion(apiVersion: unknown): { group: string; version: string } {
  const parts = typeof apiVersion === 'string' ? apiVersion.split('/') : [];
  const [first = '', second] = parts;
  if (parts.length === 1 && first !== '') return { group: '', version: first };
  if (parts.length === 2 && first !== '' && second) return { group: first, version: second };
  throw new ObjectShapeError(
    `expected apiVersion as "group/version" or "version" (e.g. apps/v1, v1), got ${JSON.stringify(apiVersion ?? null)}`,
  );
}

const OPTIONS_KIND: Readonly<Record<Operation, string | undefined>> = {
  CREATE: 'CreateOptions',
  UPDATE: 'UpdateOptions',
  DELETE: 'DeleteOptions',
  CONNECT: undefined,
};

function namespaceFor(object: KubeObject, builtIn: BuiltInKind | undefined, option: string | undefined) {
  const own = object.metadata?.namespace;
  if (typeof own === 'string' && own !== '') return own;
  if (builtIn && !builtIn.namespaced) return undefined;
  return option ?? (builtIn ? DEFAULT_NAMESPACE : undefined);
}

/** The request for a write of `object` (see the module comment for what is inferred and how). */
export function requestForObject(object: KubeObject, options: RequestForObjectOptions = {}): AdmissionRequest {
  const { group, version } = groupVersion(object.apiVersion);
  const kind = object.kind;
  if (typeof kind !== 'string' || !/^[A-Za-z][A-Za-z0-9]*$/.test(kind)) {
    throw new ObjectShapeError(`expected kind as a name such as Pod, got ${JSON.stringify(kind ?? null)}`);
  }
  const builtIn = builtInKind(group, kind);
  const operation = options.operation ?? 'CREATE';
  const namespace = namespaceFor(object, builtIn, options.namespace);
  const placed = structuredClone(object);
  if (namespace !== undefined) placed.metadata = { ...placed.metadata, namespace };
  const gvk = { group, version, kind };
  const gvr = { group, version, resource: builtIn?.resource ?? guessResource(kind) };
  const name = object.metadata?.name;
  const optionsKind = OPTIONS_KIND[operation];
  return {
    uid: randomUUID(),
    kind: gvk,
    resource: gvr,
    requestKind: { ...gvk },
    requestResource: { ...gvr },
    ...(options.subResource ? { subResource: options.subResource, requestSubResource: options.subResource } : {}),
    ...(typeof name === 'string' && name !== '' ? { name } : {}),
    ...(namespace !== undefined ? { namespace } : {}),
    operation,
    userInfo: structuredClone(options.userInfo ?? DEFAULT_USER),
    object: operation === 'DELETE' ? null : placed,
    oldObject: operation === 'DELETE' ? placed : options.oldObject ? structuredClone(options.oldObject) : null,
    dryRun: options.dryRun ?? false,
    options: optionsKind ? { apiVersion: 'meta.k8s.io/v1', kind: optionsKind } : null,
  };
}
