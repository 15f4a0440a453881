/**
 * An `AdmissionException` or `ClusterAdmissionException` object checked and compiled (README "Exceptions"):
 * the same rules whether it comes from the cluster, a file or the command line. A problem is a ConfigError
 * naming the object and the field; the cluster watcher writes it into the object's status.
 */
import { describeLifetime } from '../config/exceptions.js';
import { readLabelSelector, readRule } from '../config/match-schema.js';
import { isDnsSubdomain } from '../config/names.js';
import { Reader, childPath } from '../config/reader.js';
import {
  ANY_STEP,
  CLUSTER_KIND,
  EXCEPTION_API_VERSION,
  EXCEPTION_KINDS,
  EXCEPTION_MODES,
  NAMESPACED_KIND,
  exceptionRef,
  rfc3339,
  type ExceptionKind,
  type ExceptionMatchSpec,
  type GatewayException,
} from './exception.js';
import { compileExceptionMatch } from './exception-match.js';

/** Bounds on one exception: it is written by whoever may create one, and read on the path of reviews. */
export const MAX_EXCEPTION_STEPS = 64;
export const MAX_EXCEPTION_RULES = 64;
export const MAX_EXCEPTION_NAMES = 256;
export const MAX_EXCEPTION_SUBJECTS = 256;
export const MAX_REASON_CHARS = 1024;
export const MAX_TICKET_CHARS = 256;

const SPEC_FIELDS = ['steps', 'match', 'expiresAt', 'reason', 'ticket', 'mode'] as const;
const MATCH_FIELDS = [
  'rules',
  'names',
  'namespaceSelector',
  'objectSelector',
  'users',
  'groups',
  'serviceAccounts',
] as const;
/** RFC 3339 with a zone, as Kubernetes writes a time; fractions allowed. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export interface ExceptionRules {
  /** The longest an exception may live: expiresAt at most this long after its creation. */
  readonly maxLifetimeMs: number;
  /** When an object without `metadata.creationTimestamp` (one from a file) counts as created: now. */
  readonly now: number;
}

/** A failure that says what was given, when something was. */
function failWith(r: Reader, path: string, expected: string, value: unknown): never {
  return value === undefined ? r.fail(path, expected) : r.fail(path, expected, value);
}

function boundedList(r: Reader, value: unknown, path: string, max: number): string[] | undefined {
  const list = r.stringList(value, path);
  if (list && list.length > max) r.fail(path, `expected at most ${max} entries, got ${list.length}`);
  return list;
}

function boundedText(r: Reader, value: unknown, path: string, max: number, required: boolean): string | undefined {
  const text = required ? r.requiredString(value, path) : r.string(value, path);
  if (text !== undefined && text.length > max) r.fail(path, `must be at most ${max} characters`);
  return text || undefined;
}

function readTime(r: Reader, value: unknown, path: string): number {
  const text = r.requiredString(value, path);
  const ms = RFC3339.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) r.fail(path, 'expected an RFC 3339 time such as "2027-03-01T00:00:00Z"', text);
  return ms;
}

function readSteps(r: Reader, value: unknown, path: string, kind: ExceptionKind): string[] {
  const steps = boundedList(r, value, path, MAX_EXCEPTION_STEPS);
  if (!steps || steps.length === 0) r.fail(path, 'is required (a non-empty list of step names)');
  steps.forEach((step, i) => {
    if (step === ANY_STEP) {
      if (kind === NAMESPACED_KIND) {
        r.fail(childPath(path, i), `"*" is for a ${CLUSTER_KIND} only: name the steps this exception lets off`);
      }
    } else if (!isDnsSubdomain(step)) r.fail(childPath(path, i), 'expected a step name', step);
  });
  return [...new Set(steps)];
}

function readServiceAccounts(r: Reader, value: unknown, path: string): string[] | undefined {
  const list = boundedList(r, value, path, MAX_EXCEPTION_SUBJECTS);
  list?.forEach((ref, i) => {
    const [namespace, name, extra] = ref.split('/');
    if (extra !== undefined || !namespace || !name || !isDnsSubdomain(namespace) || !isDnsSubdomain(name)) {
      r.fail(childPath(path, i), 'expected "namespace/name" of a ServiceAccount', ref);
    }
  });
  return list;
}

function readMatchSpec(r: Reader, value: unknown, path: string): ExceptionMatchSpec {
  const m = r.map(value, path, MATCH_FIELDS, false);
  const at = (key: string) => childPath(path, key);
  const rules = r.list(m.rules, at('rules'));
  if (rules && rules.length > MAX_EXCEPTION_RULES) {
    r.fail(at('rules'), `expected at most ${MAX_EXCEPTION_RULES} rules, got ${rules.length}`);
  }
  const spec: ExceptionMatchSpec = {
    rules: rules?.map((rule, i) => readRule(r, rule, childPath(at('rules'), i))),
    names: boundedList(r, m.names, at('names'), MAX_EXCEPTION_NAMES),
    namespaceSelector: readLabelSelector(r, m.namespaceSelector, at('namespaceSelector')),
    objectSelector: readLabelSelector(r, m.objectSelector, at('objectSelector')),
    users: boundedList(r, m.users, at('users'), MAX_EXCEPTION_SUBJECTS),
    groups: boundedList(r, m.groups, at('groups'), MAX_EXCEPTION_SUBJECTS),
    serviceAccounts: readServiceAccounts(r, m.serviceAccounts, at('serviceAccounts')),
  };
  return spec;
}

/**
 * The exception an object states, checked: the object's kind and names, its spec's steps (`*` only in a
 * ClusterAdmissionException), match, `expiresAt` (required, at most `maxLifetimeMs` after its creation),
 * `reason` (required), `ticket` and `mode` (default Exempt). Throws a ConfigError naming the object.
 */
export function readException(object: unknown, rules: ExceptionRules, source?: string): GatewayException {
  source ??= 'exception';
  // Until the object's kind and names are known, problems are told against `source` alone.
  const outer = new Reader(source);
  const top = outer.map(object, '', ['apiVersion', 'kind', 'metadata', 'spec', 'status'], false);
  const kind = outer.oneOf(top.kind, 'kind', EXCEPTION_KINDS);
  if (!kind) return outer.fail('kind', `is required (${EXCEPTION_KINDS.join(' or ')})`);
  if (top.apiVersion !== EXCEPTION_API_VERSION) {
    outer.fail('apiVersion', `expected ${EXCEPTION_API_VERSION}`, top.apiVersion);
  }
  const meta = (typeof top.metadata === 'object' && top.metadata !== null ? top.metadata : {}) as Record<
    string,
    unknown
  >;
  const name = typeof meta.name === 'string' && isDnsSubdomain(meta.name) ? meta.name : undefined;
  if (!name) return failWith(outer, 'metadata.name', 'is required (a DNS subdomain)', meta.name);
  const namespace = typeof meta.namespace === 'string' && meta.namespace !== '' ? meta.namespace : undefined;
  if (kind === NAMESPACED_KIND && (namespace === undefined || !isDnsSubdomain(namespace))) {
    failWith(outer, 'metadata.namespace', `is required for an ${NAMESPACED_KIND}`, meta.namespace);
  }
  const ref = exceptionRef(kind, kind === NAMESPACED_KIND ? namespace : undefined, name);
  const r = new Reader(source === 'exception' ? ref : `${source}: ${ref}`);
  const spec = r.map(top.spec, 'spec', SPEC_FIELDS, false);
  const steps = readSteps(r, spec.steps, 'spec.steps', kind);
  const matchSpec = readMatchSpec(r, spec.match ?? {}, 'spec.match');
  const match = compileExceptionMatch(matchSpec);
  const expiresAt = readTime(r, spec.expiresAt, 'spec.expiresAt');
  const created =
    typeof meta.creationTimestamp === 'string'
      ? readTime(r, meta.creationTimestamp, 'metadata.creationTimestamp')
      : rules.now;
  if (expiresAt - created > rules.maxLifetimeMs) {
    r.fail(
      'spec.expiresAt',
      `must be at most ${describeLifetime(rules.maxLifetimeMs)} after the exception's creation (${rfc3339(created)}; exceptions.maxLifetime)`,
      spec.expiresAt,
    );
  }
  const reason = boundedText(r, spec.reason, 'spec.reason', MAX_REASON_CHARS, true)!;
  const ticket = boundedText(r, spec.ticket, 'spec.ticket', MAX_TICKET_CHARS, false);
  const mode = r.oneOf(spec.mode, 'spec.mode', EXCEPTION_MODES) ?? 'Exempt';
  return {
    kind,
    namespace: kind === NAMESPACED_KIND ? namespace : undefined,
    name,
    ref,
    steps,
    matches: match.matches,
    matchSpec,
    needsNamespaceLabels: match.needsNamespaceLabels,
    expiresAt,
    expiresAtText: rfc3339(expiresAt),
    reason,
    ticket,
    mode,
  };
}
