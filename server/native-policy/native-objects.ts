/**
 * ValidatingAdmissionPolicies, MutatingAdmissionPolicies, their bindings and the objects their params name, as
 * read from an `admissionPolicies` entry's files: checked, and every expression compiled (read-objects.ts).
 */
import type { AdmissionRequest, KubeObject } from '../admission/types.js';
import type { FailurePolicy, ReinvocationPolicy } from '../config/step-options.js';
import type { MatchCondition } from '../config/match-conditions.js';
import type { PolicySpec } from '../policy/policy-spec.js';
import type { LabelSelector, RuleWithOperations } from '../admission/types.js';
import type { Labels } from '../steps/label-selector.js';

export type ValidationAction = 'Deny' | 'Warn' | 'Audit';
export const VALIDATION_ACTIONS: readonly ValidationAction[] = ['Deny', 'Warn', 'Audit'];

/** A rule with the names it is limited to (NamedRuleWithOperations). */
export interface NamedRule extends RuleWithOperations {
  readonly resourceNames?: readonly string[];
}

/** MatchResources as written (a policy's matchConstraints, a binding's matchResources). */
export interface MatchResources {
  readonly resourceRules: readonly NamedRule[];
  readonly excludeResourceRules: readonly NamedRule[];
  readonly namespaceSelector: LabelSelector;
  readonly objectSelector: LabelSelector;
  readonly matchPolicy: 'Exact' | 'Equivalent';
}

/** MatchResources compiled: why a request is not selected, or undefined when it is. */
export type ResourceMatcher = (request: AdmissionRequest, namespaceLabels: Labels | undefined) => string | undefined;

export interface ParamKind {
  readonly apiVersion: string;
  readonly kind: string;
}

export interface ParamRef {
  readonly name?: string;
  readonly namespace?: string;
  readonly selector?: LabelSelector;
  readonly parameterNotFoundAction: 'Allow' | 'Deny';
}

/**
 * A policy's expressions: its matchConditions are its own (they may read `params`, and their errors are joined as
 * the apiserver joins them), not a chain entry's.
 */
export interface NativePolicySpec extends PolicySpec {
  readonly matchConditions: readonly MatchCondition[];
}

/**
 * Where a policy or binding was read from, as `/chain` shows it: a file of the entry, or the cluster (cluster mode,
 * `fromCluster: true`) at the object's resourceVersion.
 */
export type NativeOrigin =
  { readonly source: 'file'; readonly file: string } | { readonly source: 'cluster'; readonly resourceVersion: string };

export interface NativePolicy {
  readonly name: string;
  /** Absent: built in memory (tests). */
  readonly origin?: NativeOrigin;
  readonly failurePolicy: FailurePolicy;
  readonly matchConstraints: MatchResources;
  readonly paramKind?: ParamKind;
  /** matchConditions, variables, validations and auditAnnotations, compiled. */
  readonly spec: NativePolicySpec;
}

export interface NativeBinding {
  readonly name: string;
  readonly origin?: NativeOrigin;
  readonly policyName: string;
  readonly validationActions: readonly ValidationAction[];
  /** Absent: every request the policy matches. */
  readonly matchResources?: MatchResources;
  readonly paramRef?: ParamRef;
}

/**
 * A MutatingAdmissionPolicy: what it shares with a ValidatingAdmissionPolicy (its spec holds matchConditions,
 * variables and `mutations`, no validations), and its reinvocationPolicy.
 */
export interface NativeMutatingPolicy extends NativePolicy {
  readonly reinvocationPolicy: ReinvocationPolicy;
}

/** A MutatingAdmissionPolicyBinding: a ValidatingAdmissionPolicyBinding without validationActions. */
export type NativeMutatingBinding = Omit<NativeBinding, 'validationActions'>;

/** Everything the files hold: the policies, bindings and other objects (the candidates for params). */
export interface NativePolicySet {
  readonly policies: readonly NativePolicy[];
  readonly bindings: readonly NativeBinding[];
  readonly mutatingPolicies: readonly NativeMutatingPolicy[];
  readonly mutatingBindings: readonly NativeMutatingBinding[];
  readonly objects: readonly KubeObject[];
}
