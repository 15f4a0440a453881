/** Answers named after their outcome (controller-runtime response.go). */
import type { Decision } from './decision.js';
import type { AdmissionResponse } from './types.js';

/** The answer to a review's decision: denied with its message and code, or allowed with its patch (base64). */
export function answerTo(uid: string, decision: Decision): AdmissionResponse {
  if (!decision.allowed) return denied(uid, decision.message, decision.code);
  const response = allowed(uid);
  if (decision.patch) {
    response.patchType = 'JSONPatch';
    response.patch = Buffer.from(JSON.stringify(decision.patch)).toString('base64');
  }
  return response;
}

export function allowed(uid: string): AdmissionResponse {
  return { uid, allowed: true };
}

/** A refusal; codes under 400 are raised to 400, as the apiserver does for webhook denials. */
export function denied(uid: string, message: string, code = 403): AdmissionResponse {
  const status = code < 400 ? 400 : code;
  return { uid, allowed: false, status: { code: status, message, reason: reasonFor(status) } };
}

/** The review could not be processed (bad input or an internal error). */
export function errored(uid: string, code: number, message: string): AdmissionResponse {
  return { uid, allowed: false, status: { code, message, reason: reasonFor(code) } };
}

/** metav1.StatusReason for the codes the gateway produces, so clients show a familiar reason. */
function reasonFor(code: number): string | undefined {
  switch (code) {
    case 400:
      return 'BadRequest';
    case 401:
      return 'Unauthorized';
    case 403:
      return 'Forbidden';
    case 408:
      return 'Timeout';
    case 413:
      return 'RequestEntityTooLarge';
    case 415:
      return 'UnsupportedMediaType';
    case 422:
      return 'Invalid';
    case 429:
      return 'TooManyRequests';
    case 500:
      return 'InternalError';
    case 504:
      return 'Timeout';
    default:
      return undefined;
  }
}
