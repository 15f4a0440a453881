/**
 * Verifies a provider's answer the way kube-apiserver verifies a webhook's
 * (k8s.io/apiserver/pkg/admission/plugin/webhook/request/admissionreview.go VerifyAdmissionResponse):
 * the uid is echoed and the kind/apiVersion are right; patch and patchType come together; a validating call
 * returns no patch. A v1beta1 answer is first up-converted to v1 (protocol/conversion.ts), which is as
 * lenient as the apiserver is with v1beta1; then the same rules apply.
 */
import { APPROVED, type Decision } from '../admission/decision.js';
import { ADMISSION_V1, type AdmissionApiVersion, type JsonPatchOperation } from '../admission/types.js';
import { ConversionError, upConvertAnswer } from '../protocol/conversion.js';
import { PatchApplyError } from '../base/errors.js';
import { checkPatchShape } from '../patch/apply.js';
import { MAX_NESTING_DEPTH, describeValue, nestsDeeperThan } from '../base/limits.js';

/** A provider's verified answer: its decision, and the warnings and audit annotations it adds. */
export interface ProviderAnswer {
  readonly decision: Decision;
  readonly warnings: readonly string[];
  readonly auditAnnotations: Readonly<Record<string, string>>;
}

/** Thrown for an answer the gateway cannot trust; becomes reason `invalid_response`. */
export class InvalidProviderResponse extends Error {
  override readonly name = 'InvalidProviderResponse';
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function decodePatch(encoded: unknown): JsonPatchOperation[] {
  if (typeof encoded !== 'string') throw new InvalidProviderResponse('response.patch must be a base64 string');
  let parsed: unknown;
  const text = Buffer.from(encoded, 'base64').toString('utf8');
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new InvalidProviderResponse('response.patch is not base64-encoded JSON');
  }
  if (nestsDeeperThan(text)) {
    throw new InvalidProviderResponse(`response.patch nests more than ${MAX_NESTING_DEPTH} levels deep`);
  }
  try {
    checkPatchShape(parsed);
  } catch (err) {
    throw new InvalidProviderResponse(`response.patch is not a usable JSON patch: ${(err as PatchApplyError).message}`);
  }
  return parsed;
}

function stringList(value: unknown, field: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((w) => typeof w !== 'string')) {
    throw new InvalidProviderResponse(`${field} must be a list of strings`);
  }
  return value as string[];
}

function stringMap(value: unknown, field: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isRecord(value) || Object.values(value).some((v) => typeof v !== 'string')) {
    throw new InvalidProviderResponse(`${field} must be a map of strings`);
  }
  return value as Record<string, string>;
}

export function verifyProviderResponse(
  body: string,
  expected: { uid: string; apiVersion: AdmissionApiVersion; mutating: boolean },
): ProviderAnswer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new InvalidProviderResponse(`response body is not JSON (starts with ${describeValue(body.slice(0, 40))})`);
  }
  if (!isRecord(parsed)) throw new InvalidProviderResponse('response body is not a JSON object');
  if (nestsDeeperThan(body))
    throw new InvalidProviderResponse(`response nests more than ${MAX_NESTING_DEPTH} levels deep`);
  let review: Record<string, unknown>;
  try {
    review = upConvertAnswer(parsed, expected.apiVersion, expected);
  } catch (err) {
    if (err instanceof ConversionError) throw new InvalidProviderResponse(err.message);
    throw err;
  }
  const response = review.response;
  if (!isRecord(response)) throw new InvalidProviderResponse('webhook response was absent');

  if (response.uid !== expected.uid) {
    throw new InvalidProviderResponse(
      `expected response.uid=${JSON.stringify(expected.uid)}, got ${describeValue(response.uid)}`,
    );
  }
  if (review.apiVersion !== ADMISSION_V1 || review.kind !== 'AdmissionReview') {
    throw new InvalidProviderResponse(
      `expected webhook response of ${ADMISSION_V1}, Kind=AdmissionReview, got ${describeValue(review.apiVersion)}, Kind=${describeValue(review.kind)}`,
    );
  }
  if (typeof response.allowed !== 'boolean')
    throw new InvalidProviderResponse('response.allowed must be true or false');

  const hasPatch = typeof response.patch === 'string' ? response.patch.length > 0 : response.patch != null;
  const hasPatchType = response.patchType !== undefined && response.patchType !== null;
  let patch: JsonPatchOperation[] | undefined;
  if (expected.mutating) {
    if (hasPatch && !hasPatchType)
      throw new InvalidProviderResponse('webhook returned response.patch but not response.patchType');
    if (!hasPatch && hasPatchType)
      throw new InvalidProviderResponse('webhook returned response.patchType but not response.patch');
    if (hasPatchType && response.patchType !== 'JSONPatch') {
      throw new InvalidProviderResponse(
        `webhook returned invalid response.patchType of ${describeValue(response.patchType)}`,
      );
    }
    if (hasPatch) patch = decodePatch(response.patch);
  } else {
    if (hasPatch) throw new InvalidProviderResponse('validating webhook may not return response.patch');
    if (hasPatchType) throw new InvalidProviderResponse('validating webhook may not return response.patchType');
  }

  const status = isRecord(response.status) ? response.status : {};
  const message =
    typeof status.message === 'string' && status.message
      ? status.message
      : typeof status.reason === 'string' && status.reason
        ? status.reason
        : '';
  const code = typeof status.code === 'number' && status.code >= 400 && status.code < 600 ? status.code : 403;
  const decision: Decision = !response.allowed
    ? { allowed: false, message, code }
    : patch && patch.length > 0
      ? { allowed: true, patch }
      : APPROVED;
  return {
    decision,
    warnings: stringList(response.warnings, 'response.warnings'),
    auditAnnotations: stringMap(response.auditAnnotations, 'response.auditAnnotations'),
  };
}
