/**
 * The apiserver's authorization library (k8s.io/apiserver/pkg/cel/library/authz.go, with its selectors): the
 * `authorizer` variable of admission policies, `authorizer.group(g).resource(r).subresource(s).namespace(ns)
 * .name(n).check(verb)`, `authorizer.path(p).check(verb)`, `authorizer.serviceAccount(ns, name)`,
 * `.fieldSelector(s)`, `.labelSelector(s)`, `authorizer.requestResource` (the request's own resource), and a
 * Decision's `allowed()`, `reason()`, `errored()` and `error()`.
 *
 * Evaluation is synchronous (the cost meter is the one under way: cost.ts), and an answer comes from the
 * apiserver. So `check()` asks its question of the review's `AccessQuestions` and returns at once a Decision
 * bound to the answer; reading a Decision that has no answer yet throws AnswerPendingError, and the caller
 * runs its expressions again once the questions they asked are answered (policy/authorizer-session.ts).
 */
import { AuthzValue } from './authz-value.js';
import type { Library } from './library.js';
import { CelEvalError } from './library.js';

/** Who a check is about: the request's user, or a service account (`serviceAccount(ns, name)`). */
export interface AccessUser {
  readonly username: string;
  readonly uid?: string;
  readonly groups?: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/** The attributes of a check, as a SubjectAccessReview's spec holds them. */
export type AccessAttributes =
  | ({ readonly kind: 'resource'; readonly verb: string } & ResourceFields)
  | { readonly kind: 'nonResource'; readonly verb: string; readonly path: string };

/** The authorizer's answer: a SubjectAccessReview's status. */
export interface AccessAnswer {
  readonly allowed: boolean;
  readonly reason: string;
  /** Set when the check could not be decided (the authorizer's error, or no answer at all). */
  readonly error?: string;
}

/** One question of a review: its answer once there is one. */
export interface AccessRecord {
  answer?: AccessAnswer;
}

/** The review's questions (policy/authorizer-session.ts): the same question asked twice is one record. */
export interface AccessQuestions {
  ask(user: AccessUser, attributes: AccessAttributes): AccessRecord;
  /** A Decision without an answer was read: the expression must run again once it has one. */
  waited(): void;
}

/** Thrown by a Decision read before its answer came: the expressions run again when it has come. */
export class AnswerPendingError extends CelEvalError {
  constructor() {
    super('authorizer_pending', 'the authorization check has no answer yet');
  }
}

/** The resource a ResourceCheck is about. */
export interface ResourceFields {
  readonly group: string;
  readonly resource: string;
  readonly subresource: string;
  readonly namespace: string;
  readonly name: string;
  /** As written; empty: none. The authorizer parses it, and leaves it out when it does not parse. */
  readonly fieldSelector: string;
  readonly labelSelector: string;
}

/** `authorizer`, or the authorizer of `authorizer.serviceAccount(ns, name)`. */
export class CelAuthorizer extends AuthzValue {
  /** `authorizer.requestResource`: the request's own resource (null on a service account's authorizer). */
  readonly requestResource: ResourceCheck | null;
  constructor(
    readonly questions: AccessQuestions,
    readonly user: AccessUser,
    request?: Omit<ResourceFields, 'fieldSelector' | 'labelSelector'>,
  ) {
    super();
    this.requestResource = request
      ? new ResourceCheck(this, { ...request, fieldSelector: '', labelSelector: '' })
      : null;
  }
}

export class PathCheck extends AuthzValue {
  constructor(
    readonly authorizer: CelAuthorizer,
    readonly path: string,
  ) {
    super();
  }
}

export class GroupCheck extends AuthzValue {
  constructor(
    readonly authorizer: CelAuthorizer,
    readonly group: string,
  ) {
    super();
  }
}

/** Immutable: each builder call makes a new one, as the apiserver's values are copied. */
export class ResourceCheck extends AuthzValue {
  constructor(
    readonly authorizer: CelAuthorizer,
    readonly fields: ResourceFields,
  ) {
    super();
  }
  with(change: Partial<ResourceFields>): ResourceCheck {
    return new ResourceCheck(this.authorizer, { ...this.fields, ...change });
  }
}

/** A check's decision: its answer once the review's questions have one. */
export class AuthzDecision extends AuthzValue {
  constructor(
    readonly record: AccessRecord,
    readonly questions: AccessQuestions,
  ) {
    super();
  }
  get answer(): AccessAnswer {
    const { answer } = this.record;
    if (answer === undefined) {
      this.questions.waited();
      throw new AnswerPendingError();
    }
    return answer;
  }
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The user a service account authenticates as (serviceaccount.ServiceAccountInfo.UserInfo, without a Pod). */
export function serviceAccountUser(namespace: string, name: string): AccessUser {
  return {
    username: `system:serviceaccount:${namespace}:${name}`,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`],
  };
}

function serviceAccount(a: CelAuthorizer, namespace: string, name: string): CelAuthorizer {
  // The apiserver's checks and words, name first (ValidateServiceAccountName, ValidateNamespaceName).
  if (name.length > 253 || !DNS1123_SUBDOMAIN.test(name))
    throw new CelEvalError('invalid_argument', 'Invalid service account name');
  if (namespace.length > 63 || !DNS1123_LABEL.test(namespace))
    throw new CelEvalError('invalid_argument', 'Invalid service account namespace');
  return new CelAuthorizer(a.questions, serviceAccountUser(namespace, name));
}

function notEmpty(value: string, what: string): string {
  if (value.trim() === '') throw new CelEvalError('invalid_argument', `${what} must not be empty`);
  return value;
}

function checkResource(c: ResourceCheck, verb: string): AuthzDecision {
  const { questions, user } = c.authorizer;
  const record = questions.ask(user, { kind: 'resource', verb, ...c.fields });
  return new AuthzDecision(record, questions);
}

function checkPath(c: PathCheck, verb: string): AuthzDecision {
  const { questions, user } = c.authorizer;
  return new AuthzDecision(questions.ask(user, { kind: 'nonResource', verb, path: c.path }), questions);
}

const AUTHORIZER = 'kubernetes.authorization.Authorizer';
const PATH_CHECK = 'kubernetes.authorization.PathCheck';
const GROUP_CHECK = 'kubernetes.authorization.GroupCheck';
const RESOURCE_CHECK = 'kubernetes.authorization.ResourceCheck';
const DECISION = 'kubernetes.authorization.Decision';

/** The type `authorizer` is declared with (environment.ts). */
export const AUTHORIZER_TYPE = AUTHORIZER;

export const authzLibrary: Library = {
  // No fields but `requestResource`, as the apiserver's values expose none.
  types: [
    [AUTHORIZER, CelAuthorizer, { requestResource: RESOURCE_CHECK }],
    [PATH_CHECK, PathCheck, {}],
    [GROUP_CHECK, GroupCheck, {}],
    [RESOURCE_CHECK, ResourceCheck, {}],
    [DECISION, AuthzDecision, {}],
  ],
  functions: [
    [
      `${AUTHORIZER}.path(string): ${PATH_CHECK}`,
      (a: CelAuthorizer, p: string) => new PathCheck(a, notEmpty(p, 'path')),
    ],
    [`${AUTHORIZER}.group(string): ${GROUP_CHECK}`, (a: CelAuthorizer, g: string) => new GroupCheck(a, g)],
    [`${AUTHORIZER}.serviceAccount(string, string): ${AUTHORIZER}`, serviceAccount],
    [
      `${GROUP_CHECK}.resource(string): ${RESOURCE_CHECK}`,
      (g: GroupCheck, r: string) =>
        new ResourceCheck(g.authorizer, {
          group: g.group,
          resource: notEmpty(r, 'resource'),
          subresource: '',
          namespace: '',
          name: '',
          fieldSelector: '',
          labelSelector: '',
        }),
    ],
    [
      `${RESOURCE_CHECK}.subresource(string): ${RESOURCE_CHECK}`,
      (c: ResourceCheck, s: string) => c.with({ subresource: s }),
    ],
    [
      `${RESOURCE_CHECK}.namespace(string): ${RESOURCE_CHECK}`,
      (c: ResourceCheck, s: string) => c.with({ namespace: s }),
    ],
    [`${RESOURCE_CHECK}.name(string): ${RESOURCE_CHECK}`, (c: ResourceCheck, s: string) => c.with({ name: s })],
    [
      `${RESOURCE_CHECK}.fieldSelector(string): ${RESOURCE_CHECK}`,
      (c: ResourceCheck, s: string) => c.with({ fieldSelector: s }),
    ],
    [
      `${RESOURCE_CHECK}.labelSelector(string): ${RESOURCE_CHECK}`,
      (c: ResourceCheck, s: string) => c.with({ labelSelector: s }),
    ],
    [`${RESOURCE_CHECK}.check(string): ${DECISION}`, checkResource],
    [`${PATH_CHECK}.check(string): ${DECISION}`, checkPath],
    [`${DECISION}.allowed(): bool`, (d: AuthzDecision) => d.answer.allowed],
    [`${DECISION}.reason(): string`, (d: AuthzDecision) => d.answer.reason],
    [`${DECISION}.errored(): bool`, (d: AuthzDecision) => d.answer.error !== undefined],
    [`${DECISION}.error(): string`, (d: AuthzDecision) => d.answer.error ?? ''],
  ],
};

/**
 * What `authorizer` is where the apiserver binds no authorizer although the expression may name it (a
 * ValidatingAdmissionPolicy's auditAnnotations, and the variables its messageExpressions read): a check fails
 * as cel-go fails on the missing variable.
 */
export const UNBOUND_AUTHORIZER = new CelAuthorizer(
  {
    ask() {
      throw new CelEvalError('no_such_attribute', 'no such attribute(s): authorizer');
    },
    waited() {},
  },
  { username: '' },
);
