/**
 * The versions of the provider protocol this gateway speaks, and where each stands: the catalog every part
 * of the protocol reads (discovery, the provider client, the OpenAPI document, a provider's status).
 *
 * Two things are versioned, as in Cluster API's Runtime SDK, where a hook has a request/response version of
 * its own beside the extension's registration:
 * - the **hook API** (`admissiongateway.io/v1alpha1`): what a handler in a discovery document means, the
 *   `?timeout=` and settings header of a call, the fresh uid per call;
 * - the **review version** a handler speaks on the wire: AdmissionReview `admission.k8s.io/v1` or
 *   `admission.k8s.io/v1beta1`. The gateway works in v1; requests are down-converted to a handler's version
 *   and answers up-converted back (conversion.ts).
 *
 * A deprecated version keeps working unchanged until it is removed (README, "Versions and deprecation").
 */
import { ADMISSION_V1, ADMISSION_V1BETA1, type AdmissionApiVersion } from '../admission/types.js';

/** The hook API version of the discovery document and of its handlers. */
export const HOOK_API_V1ALPHA1 = 'admissiongateway.io/v1alpha1';
export type HookApiVersion = typeof HOOK_API_V1ALPHA1;
/** Hook API versions this gateway speaks, newest first. */
export const HOOK_API_VERSIONS: readonly HookApiVersion[] = [HOOK_API_V1ALPHA1];
/** The `kind` of a discovery document. */
export const DISCOVERY_KIND = 'DiscoveryResponse';

/** An AdmissionReview version as a webhook configuration's `admissionReviewVersions` spells it. */
export type ReviewVersion = 'v1' | 'v1beta1';
/** Review versions this gateway speaks, newest first. */
export const REVIEW_VERSIONS: readonly ReviewVersion[] = ['v1', 'v1beta1'];

/** Why and until when a deprecated version is still spoken. */
export interface Deprecation {
  /** The gateway release that deprecated it. */
  readonly since: string;
  /** The version to move to. */
  readonly replacement: ReviewVersion;
  /** The first gateway release that may stop speaking it. */
  readonly removalNoSoonerThan: string;
}

export interface ReviewVersionInfo {
  readonly version: ReviewVersion;
  readonly apiVersion: AdmissionApiVersion;
  readonly deprecation?: Deprecation;
}

const CATALOG: Readonly<Record<ReviewVersion, ReviewVersionInfo>> = {
  v1: { version: 'v1', apiVersion: ADMISSION_V1 },
  // Kubernetes stopped serving admission.k8s.io/v1beta1 in 1.22; providers written for older clusters
  // still speak it.
  v1beta1: {
    version: 'v1beta1',
    apiVersion: ADMISSION_V1BETA1,
    deprecation: { since: '0.1.0', replacement: 'v1', removalNoSoonerThan: '0.4.0' },
  },
};

export const reviewVersionInfo = (version: ReviewVersion): ReviewVersionInfo => CATALOG[version];

export const reviewApiVersion = (version: ReviewVersion): AdmissionApiVersion => CATALOG[version].apiVersion;

export const isDeprecated = (version: ReviewVersion): boolean => CATALOG[version].deprecation !== undefined;

/**
 * The version a call is made in: the first of `spoken` (the provider's order of preference) that the gateway
 * speaks, as kube-apiserver picks from a webhook's admissionReviewVersions. `spoken` is never empty (the
 * config and discovery readers refuse an empty list).
 */
export function chooseReviewVersion(spoken: readonly ReviewVersion[]): ReviewVersion {
  return spoken.find((v) => REVIEW_VERSIONS.includes(v)) ?? 'v1';
}

/** What an operator reads about a deprecated version in use: since when, until when, and what to do. */
export function deprecationNotice(version: ReviewVersion): string {
  const { apiVersion, deprecation } = CATALOG[version];
  if (!deprecation) return `${apiVersion} is current`;
  return (
    `${apiVersion} is deprecated since admission-gateway ${deprecation.since} and spoken until at least ` +
    `${deprecation.removalNoSoonerThan}: serve ${CATALOG[deprecation.replacement].apiVersion} and list ` +
    `${deprecation.replacement} first in admissionReviewVersions`
  );
}
