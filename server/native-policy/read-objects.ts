/**
 * Reads the objects of an `admissionPolicies` entry's files as the apiserver would take them:
 * ValidatingAdmissionPolicy, MutatingAdmissionPolicy and their bindings (admissionregistration.k8s.io/v1, or
 * the identical v1beta1), with the apiserver's defaults (failurePolicy Fail, matchPolicy Equivalent, empty
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
import { REINVOCATION_POLICIES } from '../config/step-options.js';
import type { PolicyDocument } from './policy-files.js';
import {
  VALIDATION_ACTIONS,
  type MatchResources,
  type NamedRule,
  type NativeBinding,
  type NativeMutatingBinding,
  type NativeMutatingPolicy,
  type NativePolicy,
  type NativeOrigin,
  type NativePolicySet,
  type ParamKind,
  type ParamRef,
} from './native-objects.js';

const GROUP = 'admissionregistration.k8s.io';
const VERSIONS = [`${GROUP}/v1`, `${GROUP}/v1beta1`];
const POLICY_KIND = 'ValidatingAdmissionPolicy';
const BINDING_KIND = 'ValidatingAdmissionPolicyBinding';
const MUTATING_POLICY_KIND = 'MutatingAdmissionPolicy';
const MUTATING_BINDING_KIND = 'MutatingAdmissionPolicyBinding';
const KINDS = [POLICY_KIND, BINDING_KIND, MUTATING_POLICY_KIND, MUTATING_BINDING_KIND];
/** The operations a MutatingAdmissionPolicy's rules may name: only creates and updates carry an object to change. */
const MUTATING_OPERATIONS = ['*', 'CREATE', 'UPDATE'];
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

/** What a ValidatingAdmissionPolicy's spec and a MutatingAdmissionPolicy's share, with `fields` its own. */
function readPolicyOf(r: Reader, doc: Record<string, unknown>, fields: readonly string[]) {
  const name = readMetadataName(r, doc.metadata);
  const spec = r.map(doc.spec, 'spec', [
    'paramKind',
    'matchConstraints',
    'failurePolicy',
    'matchConditions',
    'variables',
    ...fields,
  ]);
  if (spec.matchConstraints === undefined) r.fail('spec.matchConstraints', 'is required');
  const paramKind = readParamKind(r, spec.paramKind, 'spec.paramKind');
  const policy: NativePolicy = {
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
  return { policy, spec };
}

function readPolicy(r: Reader, doc: Record<string, unknown>): NativePolicy {
  return readPolicyOf(r, doc, ['validations', 'auditAnnotations']).policy;
}

/** The rules of a MutatingAdmissionPolicy or its binding may only name the operations it can mutate. */
function mutatingOperations(r: Reader, match: MatchResources | undefined, p: string): void {
  match?.resourceRules.forEach((rule, i) =>
    rule.operations.forEach((op, j) => {
      if (!MUTATING_OPERATIONS.includes(op))
        r.fail(
          `${p}.resourceRules[${i}].operations[${j}]`,
          `expected one of ${MUTATING_OPERATIONS.join(', ')} (only those carry an object to mutate)`,
          op,
        );
    }),
  );
}

function readMutatingPolicy(r: Reader, doc: Record<string, unknown>): NativeMutatingPolicy {
  const mutations = (doc.spec as Record<string, unknown> | null | undefined)?.mutations;
  if (!Array.isArray(mutations) || mutations.length === 0)
    r.fail('spec.mutations', 'is required (at least one mutation)');
  const { policy, spec } = readPolicyOf(r, doc, ['mutations', 'reinvocationPolicy']);
  mutatingOperations(r, policy.matchConstraints, 'spec.matchConstraints');
  const reinvocationPolicy =
    r.oneOf(spec.reinvocationPolicy, 'spec.reinvocationPolicy', REINVOCATION_POLICIES) ??
    r.fail('spec.reinvocationPolicy', 'is required (Never or IfNeeded)');
  return { ...policy, reinvocationPolicy };
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

/** What both kinds of binding hold, with `fields` their own. */
function readBindingOf(r: Reader, doc: Record<string, unknown>, fields: readonly string[]) {
  const name = readMetadataName(r, doc.metadata);
  const spec = r.map(doc.spec, 'spec', ['policyName', 'paramRef', 'matchResources', ...fields]);
  const policyName = r.requiredString(spec.policyName, 'spec.policyName');
  const paramRef = readParamRef(r, spec.paramRef, 'spec.paramRef');
  const binding: NativeMutatingBinding = {
    name,
    policyName,
    ...(spec.matchResources !== undefined && spec.matchResources !== null
      ? { matchResources: readMatchResources(r, spec.matchResources, 'spec.matchResources', false) }
      : {}),
    ...(paramRef ? { paramRef } : {}),
  };
  return { binding, spec };
}

function readBinding(r: Reader, doc: Record<string, unknown>): NativeBinding {
  const { binding, spec } = readBindingOf(r, doc, ['validationActions']);
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
  return { ...binding, validationActions: actions as NativeBinding['validationActions'] };
}

function readMutatingBinding(r: Reader, doc: Record<string, unknown>): NativeMutatingBinding {
  const { binding } = readBindingOf(r, doc, []);
  mutatingOperations(r, binding.matchResources, 'spec.matchResources');
  return binding;
}

/** What one document is: a policy or binding of either kind, or another object (a params candidate). */
type Read =
  | { readonly policy: NativePolicy }
  | { readonly binding: NativeBinding }
  | { readonly mutatingPolicy: NativeMutatingPolicy }
  | { readonly mutatingBinding: NativeMutatingBinding }
  | { readonly object: KubeObject };

function readKind(r: Reader, kind: string, doc: Record<string, unknown>): Read {
  switch (kind) {
    case POLICY_KIND:
      return { policy: readPolicy(r, doc) };
    case BINDING_KIND:
      return { binding: readBinding(r, doc) };
    case MUTATING_POLICY_KIND:
      return { mutatingPolicy: readMutatingPolicy(r, doc) };
    default:
      return { mutatingBinding: readMutatingBinding(r, doc) };
  }
}

/** `read` with `origin` on its policy or binding (another object is kept as it is). */
function withOrigin(read: Read, origin: NativeOrigin): Read {
  if ('policy' in read) return { policy: { ...read.policy, origin } };
  if ('binding' in read) return { binding: { ...read.binding, origin } };
  if ('mutatingPolicy' in read) return { mutatingPolicy: { ...read.mutatingPolicy, origin } };
  if ('mutatingBinding' in read) return { mutatingBinding: { ...read.mutatingBinding, origin } };
  return read;
}

/** One document: a policy, a binding, or another object (a params candidate). */
function readDocument(document: PolicyDocument): Read {
  const r = new Reader(document.file);
  try {
    const { value } = document;
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      r.fail('', 'expected a Kubernetes object (a map with apiVersion and kind)', value);
    const doc = value as Record<string, unknown>;
    const apiVersion = r.requiredString(doc.apiVersion, 'apiVersion');
    const kind = r.requiredString(doc.kind, 'kind');
    if (!KINDS.includes(kind)) {
      readMetadataName(r, doc.metadata);
      return { object: doc };
    }
    if (!VERSIONS.includes(apiVersion)) r.fail('apiVersion', `expected one of ${VERSIONS.join(', ')}`, apiVersion);
    r.map(doc, '', OBJECT_FIELDS);
    return withOrigin(readKind(r, kind, doc), document.origin ?? { source: 'file', file: document.file });
  } catch (err) {
    if (!(err instanceof ConfigError) || err.position) throw err;
    const position = document.locate(err.path);
    throw position ? err.at(position) : err;
  }
}

/** The kind and name a document's object is known by (a name used twice for one kind is refused). */
function identity(read: Read): [kind: string, name: string] {
  if ('policy' in read) return [POLICY_KIND, read.policy.name];
  if ('binding' in read) return [BINDING_KIND, read.binding.name];
  if ('mutatingPolicy' in read) return [MUTATING_POLICY_KIND, read.mutatingPolicy.name];
  if ('mutatingBinding' in read) return [MUTATING_BINDING_KIND, read.mutatingBinding.name];
  return [
    `${String(read.object.apiVersion)} ${String(read.object.kind)}`,
    `${read.object.metadata?.namespace ?? ''}/${read.object.metadata?.name}`,
  ];
}

/** What a policy set is made of, kind by kind. */
interface SetLists {
  readonly policies: NativePolicy[];
  readonly bindings: NativeBinding[];
  readonly mutatingPolicies: NativeMutatingPolicy[];
  readonly mutatingBindings: NativeMutatingBinding[];
  readonly objects: KubeObject[];
}

function emptyLists(): SetLists {
  return { policies: [], bindings: [], mutatingPolicies: [], mutatingBindings: [], objects: [] };
}

function add(lists: SetLists, read: Read): void {
  if ('policy' in read) lists.policies.push(read.policy);
  else if ('binding' in read) lists.bindings.push(read.binding);
  else if ('mutatingPolicy' in read) lists.mutatingPolicies.push(read.mutatingPolicy);
  else if ('mutatingBinding' in read) lists.mutatingBindings.push(read.mutatingBinding);
  else lists.objects.push(read.object);
}

/** The policies, bindings and other objects of the documents; a name used twice for one kind is refused. */
export function readPolicySet(documents: readonly PolicyDocument[]): NativePolicySet {
  const lists = emptyLists();
  const seen = new Map<string, string>();
  for (const document of documents) {
    const read = readDocument(document);
    const [kind, name] = identity(read);
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
    add(lists, read);
  }
  return lists;
}

/** One of the cluster's policies or bindings, read and compiled; or why it cannot run (the rest run regardless). */
export type ClusterRead = { readonly read: Read } | { readonly problem: string };

/**
 * A policy or binding as the apiserver serves it (`fromCluster: true`), read as a file's would be. Its mistakes
 * are a value, not a throw: one object that does not compile is left out, the others run.
 */
export function readClusterObject(object: KubeObject): ClusterRead {
  const where = `${String(object.kind)} "${object.metadata?.name ?? ''}" in the cluster`;
  try {
    const read = readDocument({
      file: where,
      value: object,
      locate: () => undefined,
      origin: { source: 'cluster', resourceVersion: object.metadata?.resourceVersion ?? '' },
    });
    return 'object' in read ? { problem: `${where}: not a policy or binding` } : { read };
  } catch (err) {
    if (err instanceof ConfigError) return { problem: err.message };
    throw err;
  }
}

/** The set of the cluster's objects that were read. */
export function clusterPolicySet(reads: readonly ClusterRead[]): NativePolicySet {
  const lists = emptyLists();
  for (const found of reads) if ('read' in found) add(lists, found.read);
  return lists;
}
