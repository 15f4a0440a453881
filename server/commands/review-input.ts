/**
 * What `admission-gateway review` is given, as a request: an AdmissionReview (JSON, as the apiserver sends
 * it, or the same in YAML) is decoded as the webhook decodes it; any other Kubernetes object (JSON or
 * YAML, e.g. a manifest about to be applied) is wrapped as the CREATE the apiserver would send for it.
 */
import { parseAllDocuments } from 'yaml';
import { decodeReview } from '../admission/codec.js';
import { ObjectShapeError, requestForObject } from '../admission/request-for-object.js';
import { ADMISSION_V1, type AdmissionApiVersion } from '../admission/types.js';
import { errorMessage } from '../base/errors.js';
import type { AdmissionRequest } from '../admission/types.js';
import { UsageError } from './usage.js';

export interface ReviewInput {
  /** The version answers are printed in: the review's own, admission.k8s.io/v1 for an object. */
  readonly apiVersion: AdmissionApiVersion;
  readonly request: AdmissionRequest;
  /** Set when a bare object was wrapped: its kind, namespace and name, to say what was reviewed. */
  readonly wrapped?: string;
}

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The one document of `text`: JSON as such (the apiserver's format, checked strictly), else YAML. */
function readDocument(text: string, source: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // not JSON: YAML below, which also reports where it stops making sense
  }
  const documents = parseAllDocuments(text, { uniqueKeys: true, prettyErrors: false });
  if (!Array.isArray(documents)) return undefined; // an empty text has no documents at all
  const first = documents.flatMap((d) => d.errors)[0];
  if (first) throw new UsageError(`review: "${source}" is neither JSON nor YAML: ${first.message}`);
  const values = documents.map((d) => d.toJS() as unknown).filter((v) => v !== null && v !== undefined);
  if (values.length > 1) {
    throw new UsageError(
      `review: "${source}" holds ${values.length} YAML documents; review one object or AdmissionReview at a time`,
    );
  }
  return values[0];
}

function describe(request: AdmissionRequest): string {
  const { group, version, kind } = request.kind;
  const where = request.namespace ? `${request.namespace}/` : '';
  return `${request.operation} of ${group ? `${group}/` : ''}${version} ${kind} ${where}${request.name ?? '(no name)'}`;
}

/** The request `text` stands for; `source` (a file name or "-") names it in messages. */
export function reviewInput(text: string, source: string): ReviewInput {
  const value = readDocument(text, source);
  if (!isMap(value)) {
    throw new UsageError(
      `review: "${source}" is empty or not a map: expected an AdmissionReview or a Kubernetes object`,
    );
  }
  if (value.kind === 'AdmissionReview') {
    const { apiVersion, request } = decodeReview(JSON.stringify(value));
    return { apiVersion, request };
  }
  try {
    const request = requestForObject(value);
    return { apiVersion: ADMISSION_V1, request, wrapped: describe(request) };
  } catch (err) {
    if (!(err instanceof ObjectShapeError)) throw err;
    throw new UsageError(
      `review: "${source}" is neither an AdmissionReview nor a Kubernetes object: ${errorMessage(err)}`,
    );
  }
}
