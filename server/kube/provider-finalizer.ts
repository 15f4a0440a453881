/**
 * Deletion safety for opt-in AdmissionProviders: while a namespace references one, it carries the finalizer
 * `admissiongateway.io/referenced`, so that `kubectl delete` leaves it Terminating — still in the chain, still
 * serving those namespaces — until the last reference goes (or the annotation
 * `admissiongateway.io/force-delete: "true"` says to let it go at once).
 *
 * The finalizer is set and taken away with server-side apply under the gateway's own field manager, which
 * owns just that item of the set `metadata.finalizers`: other finalizers stay whatever happens, and every
 * replica applies the same thing from the same cache, so replicas agree instead of taking turns.
 */
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import {
  PROVIDER_RESOURCE,
  PROVIDER_API_VERSION,
  deletionRequested,
  fieldsAppliedBy,
  type AdmissionProvider,
  type ProviderResolution,
} from './admission-provider.js';
import type { ReferencingNamespaces } from './reference-index.js';

export const REFERENCED_FINALIZER = 'admissiongateway.io/referenced';
export const FORCE_DELETE_ANNOTATION = 'admissiongateway.io/force-delete';
/** The gateway's field manager for what it applies to AdmissionProviders (the finalizer). */
export const GATEWAY_FIELD_MANAGER = 'admission-gateway';

/** What the decision depends on; all of it from the informers' caches. */
export interface FinalizerFacts {
  /** The running spec (the last valid one) is `attach: OptIn`. */
  readonly optIn: boolean;
  /** Namespaces that reference the provider. */
  readonly referenced: number;
  /** `admissiongateway.io/force-delete: "true"`. */
  readonly forced: boolean;
  /** `metadata.deletionTimestamp` is set. */
  readonly deleting: boolean;
  /** The finalizer is in `metadata.finalizers` (whoever put it there). */
  readonly present: boolean;
  /** The gateway's field manager owns it (it applied it). */
  readonly owned: boolean;
}

export interface FinalizerDecision {
  /** add: apply it; remove: apply without it; none: nothing to write. */
  readonly action: 'add' | 'remove' | 'none';
  /** Deletion was asked for and the finalizer holds it for the referencing namespaces. */
  readonly held: boolean;
  /** The finalizer goes although namespaces reference it: the force annotation (worth a warning). */
  readonly forcedRelease: boolean;
}

export function decideFinalizer(f: FinalizerFacts): FinalizerDecision {
  const wanted = f.optIn && f.referenced > 0 && !f.forced;
  if (wanted) {
    // An object being deleted takes no new finalizers (the apiserver refuses them): too late to hold it.
    const action = f.owned || f.deleting ? 'none' : 'add';
    return { action, held: f.deleting && f.present, forcedRelease: false };
  }
  // Only the gateway's own item is released: someone else's finalizer of the same name is theirs to remove.
  const release = f.owned;
  return {
    action: release ? 'remove' : 'none',
    held: false,
    forcedRelease: release && f.forced && f.optIn && f.referenced > 0,
  };
}

/**
 * The facts of a provider as its resource and the namespace cache give them; undefined while the cache has not
 * synced (`namespaces` undefined): every count would read 0 then, and no finalizer may be given up on that.
 * Whether it is opt-in is read from its valid spec, else from the `attach` field as written, so that every
 * replica reads the same resource alike whatever spec it last found valid.
 */
export function finalizerFacts(
  resource: AdmissionProvider,
  resolution: ProviderResolution,
  namespaces: ReferencingNamespaces | undefined,
): FinalizerFacts | undefined {
  if (!namespaces) return undefined;
  const attach = resolution.entry
    ? resolution.entry.attach
    : (resource.spec as { attach?: unknown } | undefined)?.attach;
  return {
    optIn: attach === 'OptIn',
    referenced: namespaces.count,
    forced: forceDeleteRequested(resource),
    deleting: deletionRequested(resource),
    present: resource.metadata.finalizers?.includes(REFERENCED_FINALIZER) ?? false,
    owned: ownsFinalizer(resource),
  };
}

/** Whether the annotation asks to let the provider go at once. */
export function forceDeleteRequested(resource: AdmissionProvider): boolean {
  return resource.metadata.annotations?.[FORCE_DELETE_ANNOTATION] === 'true';
}

/** The finalizer's key in managedFields' fieldsV1: a set item is `v:` and its value in JSON. */
const FINALIZER_KEY = `v:${JSON.stringify(REFERENCED_FINALIZER)}`;

/** Whether the gateway's field manager applied the finalizer (managedFields says who owns what). */
export function ownsFinalizer(resource: AdmissionProvider): boolean {
  return fieldsAppliedBy(resource, GATEWAY_FIELD_MANAGER, ['f:metadata', 'f:finalizers']).includes(FINALIZER_KEY);
}

export type FinalizerApply = (name: string, uid: string | undefined, keep: boolean) => Promise<void>;

/**
 * Applies the gateway's view of the finalizer: with it (`keep`) or without it, which gives it up. The uid
 * makes the apply a precondition on the very object decided about: for one gone or re-created meanwhile the
 * apiserver answers 409 (`uid mismatch`), where an apply would otherwise create it.
 */
export function finalizerApplier(kc: KubeConfig): FinalizerApply {
  const api = kc.makeApiClient(CustomObjectsApi);
  return async (name, uid, keep) => {
    const body = {
      apiVersion: PROVIDER_API_VERSION,
      kind: 'AdmissionProvider',
      metadata: { name, ...(uid ? { uid } : {}), ...(keep ? { finalizers: [REFERENCED_FINALIZER] } : {}) },
    };
    await api.patchClusterCustomObject(
      { ...PROVIDER_RESOURCE, name, body, fieldManager: GATEWAY_FIELD_MANAGER, force: false },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    );
  };
}
