/**
 * The MutatingAdmissionPolicies of the native-policy differential e2e, and their bindings for one namespace: the
 * same objects are created in the apiserver and written to the gateway's policy files. Between them they use
 * JSONPatch and ApplyConfiguration mutations, params, variables, matchConditions, object selectors, both
 * reinvocation policies, and an expression that fails under failurePolicy Fail and under Ignore.
 */
import { ALL_KINDS, PARAMS_NAME, rule } from './native-policy-set.js';

/** The memory of the first container, read without asking whether it is there: an error where it is not. */
const MEMORY_NOTE = [
  {
    patchType: 'ApplyConfiguration',
    applyConfiguration: {
      expression:
        'Object{metadata: Object.metadata{annotations: {"example.com/memory": object.spec.containers[0].resources.limits.memory}}}',
    },
  },
  {
    patchType: 'JSONPatch',
    jsonPatch: {
      expression:
        "has(object.metadata.annotations) ? [JSONPatch{op: 'add', path: '/metadata/annotations/example.com~1noted', value: 'yes'}] : [JSONPatch{op: 'add', path: '/metadata/annotations', value: {'example.com/noted': 'yes'}}]",
    },
  },
];

/** A MutatingAdmissionPolicy at `version` (the apiserver serves v1 from 1.36, v1beta1 before). */
const policy = (version: string, name: string, spec: Record<string, unknown>) => ({
  apiVersion: `admissionregistration.k8s.io/${version}`,
  kind: 'MutatingAdmissionPolicy',
  metadata: { name },
  spec,
});

export function mutatingPolicies(version: string): Record<string, unknown>[] {
  return [
    policy(version, 'corpus-team-label', {
      failurePolicy: 'Fail',
      reinvocationPolicy: 'Never',
      paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
      matchConstraints: { resourceRules: ALL_KINDS },
      matchConditions: [
        { name: 'not-exempt', expression: "object.metadata.?labels.?exempt.orValue('') != 'true'" },
        { name: 'no-team', expression: "!('team' in object.metadata.?labels.orValue({}))" },
      ],
      variables: [{ name: 'team', expression: 'params.data.team' }],
      mutations: [
        {
          patchType: 'JSONPatch',
          jsonPatch: {
            expression:
              "has(object.metadata.labels) ? [JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('team'), value: variables.team}] : [JSONPatch{op: 'add', path: '/metadata/labels', value: {'team': variables.team}}]",
          },
        },
      ],
    }),
    policy(version, 'corpus-replicas-cap', {
      failurePolicy: 'Fail',
      reinvocationPolicy: 'IfNeeded',
      paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
      matchConstraints: { resourceRules: [rule(['apps'], ['deployments'])] },
      variables: [{ name: 'max', expression: 'int(params.data.maxReplicas)' }],
      mutations: [
        {
          patchType: 'JSONPatch',
          jsonPatch: {
            expression:
              "object.spec.replicas > variables.max ? [JSONPatch{op: 'test', path: '/spec/replicas', value: object.spec.replicas}, JSONPatch{op: 'replace', path: '/spec/replicas', value: variables.max}] : []",
          },
        },
      ],
    }),
    policy(version, 'corpus-pull-latest', {
      failurePolicy: 'Fail',
      reinvocationPolicy: 'Never',
      matchConstraints: { resourceRules: [rule([''], ['pods'])] },
      variables: [
        {
          name: 'latest',
          expression: "object.spec.containers.filter(c, c.image.endsWith(':latest') || !c.image.contains(':'))",
        },
      ],
      mutations: [
        {
          patchType: 'ApplyConfiguration',
          applyConfiguration: {
            expression:
              "size(variables.latest) == 0 ? Object{} : Object{spec: Object.spec{containers: variables.latest.map(c, Object.spec.containers{name: c.name, imagePullPolicy: 'Always'})}}",
          },
        },
      ],
    }),
    policy(version, 'corpus-memory-fail', {
      failurePolicy: 'Fail',
      reinvocationPolicy: 'Never',
      matchConstraints: { resourceRules: [rule([''], ['pods'])] },
      mutations: MEMORY_NOTE,
    }),
    policy(version, 'corpus-memory-ignore', {
      failurePolicy: 'Ignore',
      reinvocationPolicy: 'Never',
      matchConstraints: { resourceRules: [rule([''], ['pods'])] },
      mutations: MEMORY_NOTE,
    }),
    policy(version, 'corpus-service-ports', {
      failurePolicy: 'Fail',
      reinvocationPolicy: 'Never',
      matchConstraints: { resourceRules: [rule([''], ['services'])] },
      mutations: [
        {
          patchType: 'ApplyConfiguration',
          applyConfiguration: {
            expression:
              "Object{metadata: Object.metadata{annotations: {'example.com/ports': object.spec.ports.map(p, string(p.port)).join(',')}}}",
          },
        },
      ],
    }),
  ];
}

const binding = (
  version: string,
  name: string,
  namespace: string,
  spec: { paramRef?: Record<string, unknown>; objectSelector?: Record<string, unknown> } = {},
) => ({
  apiVersion: `admissionregistration.k8s.io/${version}`,
  kind: 'MutatingAdmissionPolicyBinding',
  metadata: { name },
  spec: {
    policyName: name,
    ...(spec.paramRef ? { paramRef: spec.paramRef } : {}),
    // Every binding is for one namespace: the apiserver's side and the gateway's are told apart by it.
    matchResources: {
      namespaceSelector: {
        matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [namespace] }],
      },
      ...(spec.objectSelector ? { objectSelector: spec.objectSelector } : {}),
    },
  },
});

/** The bindings of the policies for `namespace`, the same names on both sides. */
export function mutatingBindingsFor(
  version: string,
  namespace: string,
  paramsNamespace: string,
): Record<string, unknown>[] {
  const params = { name: PARAMS_NAME, namespace: paramsNamespace, parameterNotFoundAction: 'Deny' };
  return [
    binding(version, 'corpus-team-label', namespace, { paramRef: params }),
    binding(version, 'corpus-replicas-cap', namespace, { paramRef: params }),
    binding(version, 'corpus-pull-latest', namespace),
    binding(version, 'corpus-memory-fail', namespace, {
      objectSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['stable'] }] },
    }),
    binding(version, 'corpus-memory-ignore', namespace, {
      objectSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['canary'] }] },
    }),
    binding(version, 'corpus-service-ports', namespace),
  ];
}
