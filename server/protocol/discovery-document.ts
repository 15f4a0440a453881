/**
 * The discovery document on the wire (`GET <url>/discovery`): what a provider answers and what the provider
 * SDK serves. providers/discovery.ts reads it, with every bound checked, into the handlers the gateway calls.
 */
import type { Match } from '../admission/types.js';
import type { DISCOVERY_KIND, HookApiVersion, ReviewVersion } from './versions.js';

export interface DiscoveryHandlerDocument {
  /** A lower-case DNS-1123 label; the gateway's step is `<name>.<provider>`. */
  readonly name: string;
  readonly phase: 'mutate' | 'validate';
  /** The hook API version the handler implements; absent = admissiongateway.io/v1alpha1. */
  readonly apiVersion?: HookApiVersion;
  /** The AdmissionReview versions it speaks, preferred first; absent = the registration's. */
  readonly admissionReviewVersions?: readonly ReviewVersion[];
  /** Absolute path to POST to; absent = `<the URL's path>/<name>`. */
  readonly path?: string;
  readonly match?: Match;
  readonly timeoutSeconds?: number;
  readonly failurePolicy?: 'Fail' | 'Ignore';
  readonly supplies?: readonly string[];
  readonly dependsOn?: readonly string[];
}

export interface DiscoveryDocument {
  /** absent = admissiongateway.io/v1alpha1 (documents from before the protocol was versioned). */
  readonly apiVersion?: HookApiVersion;
  readonly kind?: typeof DISCOVERY_KIND;
  readonly handlers: readonly DiscoveryHandlerDocument[];
}
