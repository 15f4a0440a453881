/**
 * An exception as the gateway applies it (README "Exceptions"): which steps it lets off, for which requests,
 * until when and how. Read from an `AdmissionException` or `ClusterAdmissionException` by read-exception.ts,
 * from the cluster or from files alike.
 */
import type { AdmissionRequest, LabelSelector, RuleWithOperations } from '../admission/types.js';
import type { Labels } from '../steps/label-selector.js';

export const EXCEPTION_GROUP = 'admissiongateway.io';
export const EXCEPTION_VERSION = 'v1alpha1';
export const EXCEPTION_API_VERSION = `${EXCEPTION_GROUP}/${EXCEPTION_VERSION}`;
export const NAMESPACED_KIND = 'AdmissionException';
export const CLUSTER_KIND = 'ClusterAdmissionException';
export const EXCEPTION_KINDS = [NAMESPACED_KIND, CLUSTER_KIND] as const;
export type ExceptionKind = (typeof EXCEPTION_KINDS)[number];
/** The resources' plurals, as the apiserver serves them. */
export const NAMESPACED_PLURAL = 'admissionexceptions';
export const CLUSTER_PLURAL = 'clusteradmissionexceptions';

/** `Exempt`: the step does not run. `Warn`: it runs, and its denial becomes a warning. */
export const EXCEPTION_MODES = ['Exempt', 'Warn'] as const;
export type ExceptionMode = (typeof EXCEPTION_MODES)[number];

/** In a ClusterAdmissionException's `steps`: every step that accepts exceptions. */
export const ANY_STEP = '*';

/** An exception's `match` as written (read-exception.ts checked it). */
export interface ExceptionMatchSpec {
  /** Absent or empty: any request the named steps see. */
  readonly rules?: readonly RuleWithOperations[];
  readonly names?: readonly string[];
  readonly namespaceSelector?: LabelSelector;
  readonly objectSelector?: LabelSelector;
  /** Who may use it: with any of the three set, only requests by one of them (a user, a group, `namespace/name`). */
  readonly users?: readonly string[];
  readonly groups?: readonly string[];
  readonly serviceAccounts?: readonly string[];
}

/** Whether an exception's match selects a request (exception-match.ts). */
export type ExceptionMatcher = (request: AdmissionRequest, namespaceLabels: Labels | undefined) => boolean;

export interface GatewayException {
  readonly kind: ExceptionKind;
  /** The namespace of an AdmissionException: it covers requests in that namespace only. Undefined: cluster. */
  readonly namespace: string | undefined;
  readonly name: string;
  /** How warnings, traces and logs name it: `AdmissionException team-a/web-no-team`. */
  readonly ref: string;
  readonly steps: readonly string[];
  readonly matches: ExceptionMatcher;
  /** Its match as written, `matches` compiled from it: what a worker thread compiles it again from (server/lane/). */
  readonly matchSpec: ExceptionMatchSpec;
  /** Its match has a namespaceSelector: the review needs the namespace's labels. */
  readonly needsNamespaceLabels: boolean;
  /** Milliseconds since the epoch; from that instant on it is ignored. */
  readonly expiresAt: number;
  /** `expiresAt` as RFC 3339 (UTC, seconds). */
  readonly expiresAtText: string;
  readonly reason: string;
  readonly ticket: string | undefined;
  readonly mode: ExceptionMode;
}

/** `AdmissionException team-a/web`, `ClusterAdmissionException legacy`. */
export function exceptionRef(kind: ExceptionKind, namespace: string | undefined, name: string): string {
  return `${kind} ${namespace === undefined ? name : `${namespace}/${name}`}`;
}

/** An instant in milliseconds as RFC 3339 in UTC, to the second (as Kubernetes writes times). */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
