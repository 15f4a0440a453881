/**
 * Reads the objects of an `admissionPolicies` entry's files as the apiserver would take them:
 * ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1, or the
 * identical v1beta1), with the apiserver's defaults (failurePolicy Fail, matchPolicy Equivalent, empty
 * selectors) and its refusals; every expression is compiled here, so a mistake stops the start, naming the
 * file, line and field. Any other object is kept as a candidate for a binding's params.
 */
import type { KubeObject } from '../admission/types.js';
import { ConfigError } from '../base/errors.js';
import { readLabelSelector, readRule } from '../config/match-schema.js';
import { isDnsSubdomain } from '../config/names.js';
import { CONDITION_DECLARATIONS, readMatchConditions } from '../config/match-conditions.js';
import { readPolicySpec } from '../config/policy-entry.js';
import { childPath, Reader } from '../config/reader.js';
import type { PolicyDocument } from './policy-files.js';
import {
  VALIDATION_ACTIONS,
  type MatchResources,
  type NamedRule,
  type NativeBinding,
  type NativePolicy,
  type NativePolicySet,
  type ParamKind,
  type ParamRef,
} from './native-objects.js';

const GROUP = 'admissionregistration.k8s.io';
const VERSIONS = [`${GROUP}/v1`, `${GROUP}/v1beta1`];
const POLICY_KIND = 'ValidatingAdmissionPolicy';
const BINDING_KIND = 'ValidatingAdmissionPolicyBinding';
/** Kinds the gateway does not run yet: refused rather than silently taken for params. */
const NOT_YET = ['MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding'];
/** Rules in one MatchResources list, and names in one rule, at most. */
const MAX_RULES = 64;
const MAX_RESOURCE_NAMES = 256;

const OBJECT_FIELDS = ['apiVersion', 'kind', 'metadata', 'spec', 'status'];

function readMetadataName(r: Reader, value: unknown): string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) r.fail('metadata', 'expected a map', value);
  const name = r.requiredString((value as Record<string, unknown>).name, 'metadata.name');
  if (!isDnsSubdomain(name)) r.fail('metadata.name', 'expected a lower-case DNS-1123 subdomain', name);
  return name;
}

function readNamedRules(r: Reader, value: unknown, p: string): NamedRule[] {
  const list = r.list(value, p) ?? [];
  if (list.length > MAX_RULES) r.fail(p, `expected at most ${MAX_RULES} rules, got ${list.length}`);
  return list.map((item, i) => {
    const at = childPath(p, i);
    const { resourceNames, ...rest } = r.map(item, at, [
      'operations',
      'apiGroups',
      'apiVersions',
      'resources',
      'scope',
      'resourceNames',
    ]);
    const names = r.stringList(resourceNames, childPath(at, 'resourceNames')) ?? [];
    if (names.length > MAX_RESOURCE_NAMES)
      r.fail(childPath(at, 'resourceNames'), `expected at most ${MAX_RESOURCE_NAMES} names, got ${names.length}`);
    return { ...readRule(r, rest, at), ...(names.length > 0 ? { resourceNames: names } : {}) };
  });
}

function readMatchResources(r: Reader, value: unknown, p: string, rulesRequired: boolean): MatchResources {
  const m = r.map(value, p, [
    'namespaceSelector',
    'objectSelector',
    'resourceRules',
    'excludeResourceRules',
    'matchPolicy',
  ]);
  const resourceRules = readNamedRules(r, m.resourceRules, childPath(p, 'resourceRules'));
  if (rulesRequired && resourceRules.length === 0)
    r.fail(childPath(p, 'resourceRules'), 'is required (the resources the policy is for)');
  return {
    resourceRules,
    excludeResourceRules: readNamedRules(r, m.excludeResourceRules, childPath(p, 'excludeResourceRules')),
    namespaceSelector: readLabelSelector(r, m.namespaceSelector, childPath(p, 'namespaceSelector')) ?? {},
    objectSelector: readLabelSelector(r, m.objectSelector, childPath(p, 'objectSelector')) ?? {},
    matchPolicy: r.oneOf(m.matchPolicy, childPath(p, 'matchPolicy'), ['Exact', 'Equivalent'] as const) ?? 'Equivalent',
  };
}

function readParamKind(r: Reader, value: unknown, p: string): ParamKind | undefined {
  if (value === undefined || value === null) return undefined;
  const m = r.map(value, p, ['apiVersion', 'kind']);
  return {
    apiVersion: r.requiredString(m.apiVersion, childPath(p, 'apiVersion')),
    kind: r.requiredString(m.kind, childPath(p, 'kind')),
  };
}

function readPolicy(r: Reader, doc: Record<string, unknown>): NativePolicy {
  const name = readMetadataName(r, doc.metadata);
  const spec = r.map(doc.spec, 'spec', [
    'paramKind',
    'matchConstraints',
    'validations',
    'failurePolicy',
    'auditAnnotations',
    'matchConditions',
    'variables',
  ]);
  if (spec.matchConstraints === undefined) r.fail('spec.matchConstraints', 'is required');
  const paramKind = readParamKind(r, spec.paramKind, 'spec.paramKind');
  return {
    name,
    failurePolicy: r.oneOf(spec.failurePolicy, 'spec.failurePolicy', ['Fail', 'Ignore'] as const) ?? 'Fail',
    matchConstraints: readMatchResources(r, spec.matchConstraints, 'spec.matchConstraints', true),
    ...(paramKind ? { paramKind } : {}),
    spec: {
      ...readPolicySpec(r, spec, 'spec'),
      // A policy's conditions may read its params, as the apiserver's do.
      matchConditions:
        readMatchConditions(r, spec.matchConditions, 'spec.matchConditions', [...CONDITION_DECLARATIONS, 'params']) ??
        [],
    },
  };
}

function readParamRef(r: Reader, value: unknown, p: string): ParamRef | undefined {
  if (value === undefined || value === null) return undefined;
  const m = r.map(value, p, ['name', 'namespace', 'selector', 'parameterNotFoundAction']);
  const name = r.string(m.name, childPath(p, 'name'));
  const selector = readLabelSelector(r, m.selector, childPath(p, 'selector'));
  if ((name === undefined) === (m.selector === undefined || m.selector === null))
    r.fail(p, 'expected exactly one of name or selector');
  const namespace = r.string(m.namespace, childPath(p, 'namespace'));
  const action = r.oneOf(m.parameterNotFoundAction, childPath(p, 'parameterNotFoundAction'), [
    'Allow',
    'Deny',
  ] as const);
  if (action === undefined) r.fail(childPath(p, 'parameterNotFoundAction'), 'is required (Allow or Deny)');
  return {
    ...(name !== undefined ? { name } : {}),
    ...(namespace ? { namespace } : {}),
    ...(selector !== undefined ? { selector } : {}),
    parameterNotFoundAction: action,
  };
}

function readBinding(r: Reader, doc: Record<string, unknown>): NativeBinding {
  const name = readMetadataName(r, doc.metadata);
  const spec = r.map(doc.spec, 'spec', ['policyName', 'paramRef', 'matchResources', 'validationActions']);
  const policyName = r.requiredString(spec.policyName, 'spec.policyName');
  const actions = r.stringList(spec.validationActions, 'spec.validationActions') ?? [];
  if (actions.length === 0) r.fail('spec.validationActions', 'is required (Deny, Warn and/or Audit)');
  actions.forEach((action, i) => {
    r.oneOf(action, childPath('spec.validationActions', i), VALIDATION_ACTIONS);
    if (actions.indexOf(action) !== i) r.fail(childPath('spec.validationActions', i), 'is a duplicate', action);
  });
  // As the apiserver: a Deny is already shown to the client; a warning too would say it twice.
  if (actions.includes('Deny') && actions.includes('Warn'))
    r.fail(
      'spec.validationActions',
      'must not contain both Deny and Warn (repeating the same validation failure information is redundant)',
    );
  const paramRef = readParamRef(r, spec.paramRef, 'spec.paramRef');
  return {
    name,
    policyName,
    validationActions: actions as NativeBinding['validationActions'],
    ...(spec.matchResources !== undefined && spec.matchResources !== null
      ? { matchResources: readMatchResources(r, spec.matchResources, 'spec.matchResources', false) }
      : {}),
    ...(paramRef ? { paramRef } : {}),
  };
}

/** One document: a policy, a binding, or another object (a params candidate). */
function readDocument(
  document: PolicyDocument,
): { policy: NativePolicy } | { binding: NativeBinding } | { object: KubeObject } {
  const r = new Reader(document.file);
  try {
    const { value } = document;
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      r.fail('', 'expected a Kubernetes object (a map with apiVersion and kind)', value);
    const doc = value as Record<string, unknown>;
    const apiVersion = r.requiredString(doc.apiVersion, 'apiVersion');
    const kind = r.requiredString(doc.kind, 'kind');
    if (NOT_YET.includes(kind))
      r.fail('kind', `${kind} is not yet supported (ValidatingAdmissionPolicy and its bindings are)`);
    if (kind !== POLICY_KIND && kind !== BINDING_KIND) {
      readMetadataName(r, doc.metadata);
      return { object: doc };
    }
    if (!VERSIONS.includes(apiVersion)) r.fail('apiVersion', `expected one of ${VERSIONS.join(', ')}`, apiVersion);
    r.map(doc, '', OBJECT_FIELDS);
    return kind === POLICY_KIND ? { policy: readPolicy(r, doc) } : { binding: readBinding(r, doc) };
  } catch (err) {
    if (!(err instanceof ConfigError) || err.position) throw err;
    const position = document.locate(err.path);
    throw position ? err.at(position) : err;
  }
}

/** The policies, bindings and other objects of the documents; a name used twice for one kind is refused. */
export function readPolicySet(documents: readonly PolicyDocument[]): NativePolicySet {
  const policies: NativePolicy[] = [];
  const bindings: NativeBinding[] = [];
  const objects: KubeObject[] = [];
  const seen = new Map<string, string>();
  for (const document of documents) {
    const read = readDocument(document);
    const [kind, name] =
      'policy' in read
        ? [POLICY_KIND, read.policy.name]
        : 'binding' in read
          ? [BINDING_KIND, read.binding.name]
          : [
              `${String(read.object.apiVersion)} ${String(read.object.kind)}`,
              `${read.object.metadata?.namespace ?? ''}/${read.object.metadata?.name}`,
            ];
    const key = `${kind} ${name}`;
    const earlier = seen.get(key);
    if (earlier !== undefined)
      throw new ConfigError(
        document.file,
        'metadata.name',
        `${kind} "${name}" is already defined in ${earlier}`,
        document.locate('metadata.name'),
      );
    seen.set(key, document.file);
    if ('policy' in read) policies.push(read.policy);
    else if ('binding' in read) bindings.push(read.binding);
    else objects.push(read.object);
  }
  return { policies, bindings, objects };
}
