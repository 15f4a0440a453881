/**
 * The AdmissionReview envelope (admission.k8s.io/v1 and v1beta1 share this shape).
 * https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#request
 */
import type { AdmissionRequest } from '../plugin-api/types.js';

export type { AdmissionRequest } from '../plugin-api/types.js';

export const ADMISSION_V1 = 'admission.k8s.io/v1';
export const ADMISSION_V1BETA1 = 'admission.k8s.io/v1beta1';
export type AdmissionApiVersion = typeof ADMISSION_V1 | typeof ADMISSION_V1BETA1;

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

/** The webhook phase a route serves. */
export type Phase = 'mutate' | 'validate';
