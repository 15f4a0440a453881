/**
 * Conversion between the AdmissionReview versions the protocol speaks (versions.ts). The gateway works in
 * admission.k8s.io/v1: a request is down-converted to the version a handler speaks, and its answer
 * up-converted back to v1 before the gateway checks it by v1's rules, so an old provider keeps working
 * without a second set of rules.
 *
 * v1beta1's AdmissionRequest carries exactly v1's fields, so a request differs only in its envelope. Its
 * answers are looser, and kube-apiserver accepts them so: the uid need not be echoed, the envelope's
 * apiVersion may be missing, a patch may come without patchType, a validating answer's patch is ignored.
 */
import {
  ADMISSION_V1,
  ADMISSION_V1BETA1,
  type AdmissionApiVersion,
  type AdmissionRequest,
  type AdmissionReview,
} from '../admission/types.js';

/** An answer that cannot be read in the version it was asked in; `message` says why. */
export class ConversionError extends Error {
  override readonly name = 'ConversionError';
}

/** The review a handler speaking `apiVersion` is sent. */
export function downConvertRequest(request: AdmissionRequest, apiVersion: AdmissionApiVersion): AdmissionReview {
  return { apiVersion, kind: 'AdmissionReview', request };
}

export interface AnswerContext {
  /** The uid of the call. */
  readonly uid: string;
  readonly mutating: boolean;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const hasPatch = (response: Record<string, unknown>): boolean =>
  typeof response.patch === 'string' ? response.patch.length > 0 : response.patch != null;

/**
 * `answer` (a parsed JSON object, answering a call made in `apiVersion`) as an admission.k8s.io/v1 answer.
 * A v1 answer is returned as it is: v1's rules are checked by the caller. Returns a new object; `answer` is
 * left as it was.
 */
export function upConvertAnswer(
  answer: Record<string, unknown>,
  apiVersion: AdmissionApiVersion,
  call: AnswerContext,
): Record<string, unknown> {
  if (apiVersion === ADMISSION_V1) return answer;
  const { apiVersion: sent } = answer;
  if (sent !== undefined && sent !== ADMISSION_V1BETA1 && sent !== ADMISSION_V1) {
    throw new ConversionError(
      `expected an AdmissionReview, got apiVersion ${typeof sent === 'string' ? JSON.stringify(sent) : typeof sent}`,
    );
  }
  const converted = { ...answer, apiVersion: ADMISSION_V1, kind: 'AdmissionReview' };
  if (!isRecord(answer.response)) return converted;
  const response: Record<string, unknown> = { ...answer.response, uid: call.uid };
  const withPatch = hasPatch(response);
  if (!call.mutating) {
    delete response.patch;
    delete response.patchType;
  } else if (withPatch && response.patchType == null) {
    response.patchType = 'JSONPatch';
  } else if (!withPatch) {
    delete response.patch;
    if (response.patchType === 'JSONPatch') delete response.patchType;
  }
  return { ...converted, response };
}
