/**
 * Decodes AdmissionReview requests and encodes answers. One job: bytes ⇄ reviews, always in protocol.
 * Every answer echoes the request's apiVersion and uid (admission.k8s.io/v1 requires the uid echo; a
 * v1beta1 request must get a v1beta1 answer), errors included, as controller-runtime's http.go does.
 */
import { ReviewDecodeError } from './review-decode-error.js';
import { MAX_NESTING_DEPTH, clip, countContainers, describeValue, nestsDeeperThan } from '../base/limits.js';
import {
  ADMISSION_V1,
  ADMISSION_V1BETA1,
  type AdmissionApiVersion,
  type AdmissionRequest,
  type AdmissionResponse,
  type Operation,
} from './types.js';

/**
 * 7 MiB: the apiserver's own request limit is 3 MiB of object plus the old object and envelope of an
 * UPDATE; controller-runtime settled on 7 MiB for the same reason.
 */
export const DEFAULT_MAX_REQUEST_BYTES = 7 * 1024 * 1024;

export interface DecodedReview {
  readonly apiVersion: AdmissionApiVersion;
  readonly request: AdmissionRequest;
  /** How many objects and arrays the body holds, at most (what the review will weigh in memory). */
  readonly containers: number;
}

const OPERATIONS: ReadonlySet<string> = new Set<Operation>(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']);

/**
 * The apiserver's uids are UUIDs (36 characters). A longer one cannot come from it, and would be repeated
 * into the answer and every log line of the review.
 */
export const MAX_UID_CHARS = 128;

/** Refuses anything but `application/json` (parameters such as charset are fine). */
export function checkContentType(contentType: string | undefined): void {
  const type = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new ReviewDecodeError(`contentType=${clip(contentType ?? '')}, expected application/json`, 415);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkGroupVersion(
  req: Record<string, unknown>,
  field: 'kind' | 'resource',
  nameKey: 'kind' | 'resource',
  fail: (message: string) => never,
): void {
  const v = req[field];
  if (!isRecord(v) || typeof v[nameKey] !== 'string' || typeof v.version !== 'string') {
    fail(`request.${field} must be an object with string ${nameKey} and version`);
  }
  // The core group is "" and is often omitted by hand-written reviews; normalise rather than refuse.
  if (v.group === undefined) v.group = '';
  else if (typeof v.group !== 'string') fail(`request.${field}.group must be a string`);
}

/**
 * The user's fields as the apiserver's UserInfo has them: every step, trace and log line that names the user may
 * then take them for what they are.
 */
function checkUserInfo(user: Record<string, unknown>, fail: (message: string) => never): void {
  for (const field of ['username', 'uid'] as const) {
    if (user[field] !== undefined && typeof user[field] !== 'string')
      fail(`request.userInfo.${field} must be a string`);
  }
  if (user.groups !== undefined && !isStrings(user.groups)) fail('request.userInfo.groups must be an array of strings');
  const { extra } = user;
  if (extra !== undefined && !(isRecord(extra) && Object.values(extra).every(isStrings))) {
    fail('request.userInfo.extra must map each key to an array of strings');
  }
}

const isStrings = (value: unknown): boolean =>
  Array.isArray(value) && (value as unknown[]).every((item) => typeof item === 'string');

/** Parses and checks a request body; throws ReviewDecodeError (400) saying exactly what is wrong. */
export function decodeReview(body: string): DecodedReview {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (err) {
    throw new ReviewDecodeError(`request body is not valid JSON: ${clip((err as Error).message)}`, 400);
  }
  if (!isRecord(parsed)) throw new ReviewDecodeError('request body must be a JSON object (an AdmissionReview)', 400);

  const apiVersion = parsed.apiVersion;
  const req = parsed.request;
  const rawUid = isRecord(req) && typeof req.uid === 'string' ? req.uid : '';
  const uid = rawUid.length > MAX_UID_CHARS ? '' : rawUid;
  const answerVersion = apiVersion === ADMISSION_V1BETA1 ? ADMISSION_V1BETA1 : ADMISSION_V1;
  const fail = (message: string): never => {
    throw new ReviewDecodeError(message, 400, uid, answerVersion);
  };

  // Whatever the client sent is described, never repeated whole: a field may hold megabytes or nest deeply.
  if (parsed.kind !== 'AdmissionReview') fail(`kind=${describeValue(parsed.kind)}, expected "AdmissionReview"`);
  if (apiVersion !== ADMISSION_V1 && apiVersion !== ADMISSION_V1BETA1) {
    fail(`apiVersion=${describeValue(apiVersion)}, expected "${ADMISSION_V1}" or "${ADMISSION_V1BETA1}"`);
  }
  if (!isRecord(req)) return fail('request is missing: expected an AdmissionReview with a request object');
  if (rawUid.length > MAX_UID_CHARS) {
    fail(`request.uid has ${rawUid.length} characters, more than the ${MAX_UID_CHARS} accepted`);
  }
  if (uid === '') fail('request.uid is missing or empty');
  const containers = countContainers(body);
  if (containers > MAX_NESTING_DEPTH && nestsDeeperThan(body)) {
    fail(`request nests arrays and objects more than ${MAX_NESTING_DEPTH} levels deep`);
  }
  if (typeof req.operation !== 'string' || !OPERATIONS.has(req.operation)) {
    fail(`request.operation=${describeValue(req.operation)}, expected CREATE, UPDATE, DELETE or CONNECT`);
  }
  checkGroupVersion(req, 'kind', 'kind', fail);
  checkGroupVersion(req, 'resource', 'resource', fail);
  for (const field of ['object', 'oldObject'] as const) {
    const v = req[field];
    if (v !== undefined && v !== null && !isRecord(v)) fail(`request.${field} must be an object or null`);
  }
  for (const field of ['namespace', 'name', 'subResource'] as const) {
    if (req[field] !== undefined && typeof req[field] !== 'string') fail(`request.${field} must be a string`);
  }
  if (req.dryRun !== undefined && typeof req.dryRun !== 'boolean') fail('request.dryRun must be a boolean');
  if (!isRecord(req.userInfo)) req.userInfo = {};
  else checkUserInfo(req.userInfo, fail);
  return { apiVersion: apiVersion as AdmissionApiVersion, request: req as unknown as AdmissionRequest, containers };
}

/**
 * Serialises an answer in the request's apiVersion. An answer whose patch is large (base64, megabytes for a
 * large object) comes back as the bytes to send, the patch copied in after the rest is serialised: its
 * alphabet needs no JSON escaping, so JSON.stringify need not scan it, nor the server measure and convert it
 * again. Any other answer is a string, which Node writes in one go with the response's head (docs/decisions.md,
 * "Answers: a string, unless the patch is large").
 */
export function encodeReview(apiVersion: AdmissionApiVersion, response: AdmissionResponse): string | Buffer {
  const { patch } = response;
  if (patch === undefined || patch.length < LARGE_PATCH_CHARS) {
    return JSON.stringify({ apiVersion, kind: 'AdmissionReview', response });
  }
  const { patch: _, ...rest } = response;
  const text = JSON.stringify({ apiVersion, kind: 'AdmissionReview', response: rest });
  // text ends with the two closing braces of response and of the review.
  const head = Buffer.byteLength(text) - 2;
  const answer = Buffer.allocUnsafe(head + PATCH_FIELD.length + patch.length + 3);
  let at = answer.write(text, 0, head);
  at += answer.write(PATCH_FIELD, at, 'latin1');
  at += answer.write(patch, at, 'latin1');
  answer.write('"}}', at, 'latin1');
  return answer;
}

/** From this many characters of base64 a patch is copied into the answer rather than serialised with it. */
const LARGE_PATCH_CHARS = 64 * 1024;

const PATCH_FIELD = ',"patch":"';
