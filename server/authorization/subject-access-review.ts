/**
 * SubjectAccessReview in and out, as kube-apiserver's authorization webhook speaks it: authorization.k8s.io
 * v1 (`spec.groups`) and v1beta1 (`spec.group`). The answer echoes the request's apiVersion and carries only a
 * status: `denied: true` with a reason, or neither allowed nor denied — no opinion. The gateway never answers
 * `allowed: true`: it forbids, and every other authorizer (RBAC) keeps deciding what it did.
 */
import type {
  AuthorizationAttributes,
  NonResourceAttributes,
  ResourceAttributes,
  ResourceAttributesWire,
  SelectorRequirement,
} from './attributes.js';
import { NO_OPINION, type AuthorizeDecision } from './authorize-step.js';

export const SAR_V1 = 'authorization.k8s.io/v1';
export const SAR_V1BETA1 = 'authorization.k8s.io/v1beta1';
export type SubjectAccessReviewVersion = typeof SAR_V1 | typeof SAR_V1BETA1;

/** How many groups, extra keys and extra values one review may carry: far above any real identity. */
const MAX_GROUPS = 1024;
const MAX_EXTRA_VALUES = 1024;
/** Longest string field accepted (a path or a name); the body's own bound comes first. */
const MAX_FIELD_CHARS = 8192;
/** Requirements of one selector, and values of one requirement: far above any selector a client writes. */
const MAX_REQUIREMENTS = 256;
const MAX_REQUIREMENT_VALUES = 1024;
const OPERATORS: readonly SelectorRequirement['operator'][] = ['In', 'NotIn', 'Exists', 'DoesNotExist'];
const NO_REQUIREMENTS: readonly SelectorRequirement[] = Object.freeze([]);

/** A review that cannot be read: answered 400 with what is wrong. */
export class SubjectAccessReviewError extends Error {
  constructor(
    message: string,
    readonly apiVersion: SubjectAccessReviewVersion = SAR_V1,
  ) {
    super(message);
  }
}

export interface DecodedSubjectAccessReview {
  readonly apiVersion: SubjectAccessReviewVersion;
  readonly attributes: AuthorizationAttributes;
}

type Json = Record<string, unknown>;
const isMap = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function text(m: Json, key: string, at: string, version: SubjectAccessReviewVersion): string {
  const value = m[key];
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new SubjectAccessReviewError(`${at}.${key}: expected a string`, version);
  if (value.length > MAX_FIELD_CHARS) {
    throw new SubjectAccessReviewError(`${at}.${key}: longer than ${MAX_FIELD_CHARS} characters`, version);
  }
  return value;
}

function texts(value: unknown, at: string, max: number, version: SubjectAccessReviewVersion): string[] {
  if (value === undefined || value === null) return [];
  if (
    !Array.isArray(value) ||
    value.length > max ||
    value.some((v) => typeof v !== 'string' || v.length > MAX_FIELD_CHARS)
  ) {
    throw new SubjectAccessReviewError(`${at}: expected a list of at most ${max} strings`, version);
  }
  return value as string[];
}

/**
 * A selector of `spec.resourceAttributes` (`labelSelector`, `fieldSelector`): its parsed `requirements`, which
 * is what kube-apiserver's webhook authorizer sends. A `rawSelector` alone (the SubjectAccessReview API's other
 * form, which the apiserver does not send to webhooks) is not parsed: the request is judged unnarrowed, which
 * for an authorizer that only forbids is the stricter reading.
 */
function selector(r: Json, key: string, version: SubjectAccessReviewVersion): readonly SelectorRequirement[] {
  const value = r[key];
  const at = `spec.resourceAttributes.${key}`;
  if (value === undefined || value === null) return NO_REQUIREMENTS;
  if (!isMap(value)) throw new SubjectAccessReviewError(`${at}: expected an object`, version);
  const list = value.requirements;
  if (list === undefined || list === null) return NO_REQUIREMENTS;
  if (!Array.isArray(list) || list.length > MAX_REQUIREMENTS) {
    throw new SubjectAccessReviewError(`${at}.requirements: expected a list of at most ${MAX_REQUIREMENTS}`, version);
  }
  return list.map((item: unknown, i) => {
    const where = `${at}.requirements[${i}]`;
    if (!isMap(item)) throw new SubjectAccessReviewError(`${where}: expected an object`, version);
    const operator = text(item, 'operator', where, version);
    if (!(OPERATORS as readonly string[]).includes(operator)) {
      throw new SubjectAccessReviewError(`${where}.operator: expected one of ${OPERATORS.join(', ')}`, version);
    }
    return {
      key: text(item, 'key', where, version),
      operator: operator as SelectorRequirement['operator'],
      values: texts(item.values, `${where}.values`, MAX_REQUIREMENT_VALUES, version),
    };
  });
}

/** Decodes the body of `POST /authorize`. */
export function decodeSubjectAccessReview(body: string): DecodedSubjectAccessReview {
  let review: unknown;
  try {
    review = JSON.parse(body);
  } catch (err) {
    throw new SubjectAccessReviewError(`the body is not JSON: ${(err as Error).message}`);
  }
  if (!isMap(review)) throw new SubjectAccessReviewError('expected a SubjectAccessReview object');
  const { apiVersion, kind, spec } = review;
  if (apiVersion !== SAR_V1 && apiVersion !== SAR_V1BETA1) {
    throw new SubjectAccessReviewError(`apiVersion: expected ${SAR_V1} or ${SAR_V1BETA1}`);
  }
  if (kind !== 'SubjectAccessReview')
    throw new SubjectAccessReviewError('kind: expected SubjectAccessReview', apiVersion);
  if (!isMap(spec)) throw new SubjectAccessReviewError('spec: expected an object', apiVersion);

  const groupsKey = apiVersion === SAR_V1 ? 'groups' : 'group';
  const extra: Record<string, readonly string[]> = Object.create(null) as Record<string, readonly string[]>;
  if (spec.extra !== undefined && spec.extra !== null) {
    if (!isMap(spec.extra)) throw new SubjectAccessReviewError('spec.extra: expected an object', apiVersion);
    let values = 0;
    for (const [key, value] of Object.entries(spec.extra)) {
      const list = texts(value, `spec.extra.${key.slice(0, 64)}`, MAX_EXTRA_VALUES, apiVersion);
      values += list.length + 1;
      if (values > MAX_EXTRA_VALUES) {
        throw new SubjectAccessReviewError(`spec.extra: more than ${MAX_EXTRA_VALUES} keys and values`, apiVersion);
      }
      extra[key] = list;
    }
  }

  let resource: ResourceAttributes | undefined;
  let nonResource: NonResourceAttributes | undefined;
  if (isMap(spec.resourceAttributes)) {
    const r = spec.resourceAttributes;
    const at = 'spec.resourceAttributes';
    resource = {
      namespace: text(r, 'namespace', at, apiVersion),
      verb: text(r, 'verb', at, apiVersion),
      group: text(r, 'group', at, apiVersion),
      version: text(r, 'version', at, apiVersion),
      resource: text(r, 'resource', at, apiVersion),
      subresource: text(r, 'subresource', at, apiVersion),
      name: text(r, 'name', at, apiVersion),
      labelSelector: selector(r, 'labelSelector', apiVersion),
      fieldSelector: selector(r, 'fieldSelector', apiVersion),
    };
  } else if (isMap(spec.nonResourceAttributes)) {
    const n = spec.nonResourceAttributes;
    const at = 'spec.nonResourceAttributes';
    nonResource = { path: text(n, 'path', at, apiVersion), verb: text(n, 'verb', at, apiVersion) };
  } else {
    throw new SubjectAccessReviewError('spec: expected resourceAttributes or nonResourceAttributes', apiVersion);
  }
  return {
    apiVersion,
    attributes: {
      user: text(spec, 'user', 'spec', apiVersion),
      uid: text(spec, 'uid', 'spec', apiVersion),
      groups: texts(spec[groupsKey], `spec.${groupsKey}`, MAX_GROUPS, apiVersion),
      extra,
      resource,
      nonResource,
    },
  };
}

/** The answer: `reason` forbids (the apiserver shows it in the 403); undefined is no opinion. */
export function encodeSubjectAccessReview(
  apiVersion: SubjectAccessReviewVersion,
  denied: { readonly reason: string; readonly evaluationError?: string } | undefined,
): string {
  const status = denied
    ? {
        allowed: false,
        denied: true,
        reason: denied.reason,
        ...(denied.evaluationError ? { evaluationError: denied.evaluationError } : {}),
      }
    : { allowed: false };
  return JSON.stringify({ apiVersion, kind: 'SubjectAccessReview', status });
}

/** Longest reason taken from a provider's answer (a user reads it in a 403). */
const MAX_REASON_CHARS = 1024;

/** The wire form of resource attributes: a selector as `{ requirements }`, and only when there is one. */
function resourceAttributesWire(r: ResourceAttributes): ResourceAttributesWire {
  const { labelSelector, fieldSelector, ...rest } = r;
  return {
    ...rest,
    ...(labelSelector.length > 0 ? { labelSelector: { requirements: labelSelector } } : {}),
    ...(fieldSelector.length > 0 ? { fieldSelector: { requirements: fieldSelector } } : {}),
  };
}

/** The SubjectAccessReview (v1) a remote authorize provider is sent: the request as the apiserver asked it. */
export function encodeSubjectAccessReviewRequest(a: AuthorizationAttributes): string {
  return JSON.stringify({
    apiVersion: SAR_V1,
    kind: 'SubjectAccessReview',
    spec: {
      ...(a.resource
        ? { resourceAttributes: resourceAttributesWire(a.resource) }
        : { nonResourceAttributes: a.nonResource }),
      user: a.user,
      groups: a.groups,
      ...(Object.keys(a.extra).length > 0 ? { extra: a.extra } : {}),
      uid: a.uid,
    },
  });
}

/**
 * What a remote provider's answer says: `denied` with its reason forbids; anything else is no opinion — a
 * provider cannot grant through the gateway, so `allowed: true` counts as no opinion too. An answer that is
 * not a v1 SubjectAccessReview with a status is an error.
 */
export function readSubjectAccessReviewAnswer(body: string): AuthorizeDecision {
  let answer: unknown;
  try {
    answer = JSON.parse(body);
  } catch {
    throw new SubjectAccessReviewError('the answer is not JSON');
  }
  if (!isMap(answer) || answer.apiVersion !== SAR_V1 || answer.kind !== 'SubjectAccessReview') {
    throw new SubjectAccessReviewError(`expected a ${SAR_V1} SubjectAccessReview`);
  }
  const { status } = answer;
  if (!isMap(status)) throw new SubjectAccessReviewError('the answer has no status');
  if (status.denied !== true) return NO_OPINION;
  const reason = typeof status.reason === 'string' && status.reason ? status.reason : 'denied';
  return {
    denied: true,
    reason: reason.length > MAX_REASON_CHARS ? `${reason.slice(0, MAX_REASON_CHARS)}…` : reason,
  };
}
