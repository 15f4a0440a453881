/**
 * The ValidatingAdmissionPolicies of the native-policy differential e2e, and their bindings for one namespace:
 * the same objects are created in the apiserver and written to the gateway's policy files. Between them they use
 * messageExpression, variables, matchConditions, reasons, params, excludeResourceRules, object selectors, the
 * Deny, Warn and Audit actions, failurePolicy Fail on an expression that fails, and the Kubernetes CEL libraries
 * (strings, lists, regex, quantity, URL, IP, format).
 */

export const PARAMS_NAME = 'corpus-limits';

/** A rule for creates of `resources` in `apiGroups`, version v1. */
export const rule = (apiGroups: string[], resources: string[]) => ({
  operations: ['CREATE'],
  apiGroups,
  apiVersions: ['v1'],
  resources,
});
/** The corpus's four kinds. */
export const ALL_KINDS = [rule([''], ['pods', 'configmaps', 'services']), rule(['apps'], ['deployments'])];

/** The containers of a Pod or a Deployment's template. */
const CONTAINERS = "object.kind == 'Pod' ? object.spec.containers : object.spec.template.spec.containers";

const policy = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingAdmissionPolicy',
  metadata: { name },
  spec,
});

export const POLICIES = [
  policy('corpus-labels', {
    failurePolicy: 'Fail',
    matchConstraints: { resourceRules: ALL_KINDS },
    matchConditions: [{ name: 'not-exempt', expression: "object.metadata.?labels.?exempt.orValue('') != 'true'" }],
    variables: [{ name: 'labels', expression: 'object.metadata.?labels.orValue({})' }],
    validations: [
      {
        expression: "'app' in variables.labels && variables.labels.app.matches('^[a-z]+$')",
        messageExpression:
          "'app' in variables.labels ? 'label app ' + variables.labels.app + ' is not lower-case letters' : 'the label app is required'",
      },
      {
        expression: "'team' in variables.labels",
        message: 'the label team is required',
        reason: 'Forbidden',
      },
    ],
    auditAnnotations: [{ key: 'team', valueExpression: "string(variables.labels.?team.orValue(''))" }],
  }),
  policy('corpus-images', {
    failurePolicy: 'Fail',
    matchConstraints: { resourceRules: [rule([''], ['pods']), rule(['apps'], ['deployments'])] },
    variables: [
      { name: 'containers', expression: CONTAINERS },
      {
        name: 'untrusted',
        expression:
          "variables.containers.filter(c, !(c.image.startsWith('registry.k8s.io/') || c.image.startsWith('ghcr.io/acme/'))).map(c, c.name)",
      },
    ],
    validations: [
      {
        expression: 'size(variables.untrusted) == 0',
        messageExpression: "'untrusted registry for containers ' + variables.untrusted.join(', ')",
      },
      {
        expression: "variables.containers.all(c, !c.image.endsWith(':latest') && c.image.contains(':'))",
        messageExpression:
          "'images need a version tag: ' + variables.containers.filter(c, !c.image.contains(':') || c.image.endsWith(':latest')).map(c, c.image).join(', ')",
      },
    ],
  }),
  policy('corpus-memory', {
    // Reads limits.memory without asking whether it is there: a container without one is an error, which
    // failurePolicy Fail turns into a refusal in the apiserver's words for the failed expression.
    failurePolicy: 'Fail',
    matchConstraints: { resourceRules: [rule([''], ['pods'])] },
    validations: [
      {
        expression:
          "object.spec.containers.all(c, quantity(c.resources.limits.memory).compareTo(quantity('1Gi')) <= 0)",
        messageExpression:
          "'memory limits over 1Gi: ' + object.spec.containers.filter(c, quantity(c.resources.limits.memory).isGreaterThan(quantity('1Gi'))).map(c, '%s=%s'.format([c.name, c.resources.limits.memory])).join(', ')",
      },
    ],
  }),
  policy('corpus-security', {
    failurePolicy: 'Ignore',
    matchConstraints: { resourceRules: [rule([''], ['pods'])] },
    validations: [
      {
        expression:
          'object.spec.containers.all(c, !c.?securityContext.?privileged.orValue(false)) && !object.spec.?hostNetwork.orValue(false)',
        message: 'privileged containers and the host network are not allowed',
        reason: 'Forbidden',
      },
      {
        expression:
          'object.spec.containers.all(c, c.?securityContext.?runAsNonRoot.orValue(object.spec.?securityContext.?runAsNonRoot.orValue(false)) || c.?securityContext.?runAsUser.orValue(0) > 0)',
        messageExpression:
          "'containers may run as root: ' + object.spec.containers.filter(c, !(c.?securityContext.?runAsNonRoot.orValue(object.spec.?securityContext.?runAsNonRoot.orValue(false)) || c.?securityContext.?runAsUser.orValue(0) > 0)).map(c, c.name).join(', ')",
      },
    ],
  }),
  policy('corpus-replicas', {
    failurePolicy: 'Fail',
    paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
    matchConstraints: { resourceRules: [rule(['apps'], ['deployments'])] },
    variables: [{ name: 'max', expression: 'int(params.data.maxReplicas)' }],
    validations: [
      {
        expression: 'object.spec.replicas <= variables.max',
        messageExpression: "'%d replicas, over the limit of %d'.format([object.spec.replicas, variables.max])",
        reason: 'Forbidden',
      },
    ],
  }),
  policy('corpus-configmaps', {
    failurePolicy: 'Fail',
    matchConstraints: { resourceRules: [rule([''], ['configmaps'])] },
    variables: [{ name: 'data', expression: 'object.?data.orValue({})' }],
    validations: [
      {
        expression: "!variables.data.exists(k, variables.data[k].lowerAscii().contains('password'))",
        // Not the keys themselves: a map's keys come in no fixed order in the apiserver.
        messageExpression:
          "'%d keys hold a password'.format([size(variables.data.filter(k, variables.data[k].lowerAscii().contains('password')))])",
      },
      {
        expression:
          "variables.data.all(k, !k.startsWith('url') || isURL(variables.data[k]) && url(variables.data[k]).getScheme() == 'https')",
        message: 'url entries must be https URLs',
      },
      {
        expression:
          "variables.data.all(k, !k.startsWith('endpoint') || !isIP(variables.data[k]) || ip(variables.data[k]).family() == 6)",
        message: 'endpoints may not be IPv4 addresses',
      },
    ],
  }),
  policy('corpus-services', {
    failurePolicy: 'Fail',
    matchConstraints: { resourceRules: [rule([''], ['services'])] },
    validations: [
      {
        expression: 'object.spec.ports.all(p, p.port >= 1024 || p.port in [80, 443])',
        messageExpression:
          "'privileged ports: ' + object.spec.ports.filter(p, p.port < 1024 && !(p.port in [80, 443])).map(p, string(p.port)).join(', ')",
      },
      {
        expression: 'object.spec.ports.map(p, p.port).isSorted()',
        message: 'ports must be listed in ascending order',
      },
    ],
  }),
];

const binding = (name: string, policyName: string, namespace: string, spec: Record<string, unknown> = {}) => {
  const { matchResources, ...rest } = spec as { matchResources?: Record<string, unknown> };
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name },
    spec: {
      policyName,
      validationActions: ['Deny'],
      ...rest,
      // Every binding is for one namespace: the apiserver's side and the gateway's are told apart by it.
      matchResources: {
        namespaceSelector: {
          matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [namespace] }],
        },
        ...matchResources,
      },
    },
  };
};

/**
 * The bindings of the policies for `namespace`: the same names on both sides, so that the refusals read alike
 * (the gateway's are only in its files, never in the apiserver).
 */
export function bindingsFor(namespace: string, paramsNamespace: string): Record<string, unknown>[] {
  return [
    binding(`corpus-labels`, 'corpus-labels', namespace, {
      matchResources: { excludeResourceRules: [rule([''], ['services'])] },
    }),
    binding(`corpus-images`, 'corpus-images', namespace),
    binding(`corpus-memory`, 'corpus-memory', namespace, {
      matchResources: {
        objectSelector: { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['canary'] }] },
      },
    }),
    binding(`corpus-security-deny`, 'corpus-security', namespace, {
      matchResources: {
        objectSelector: { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['canary'] }] },
      },
    }),
    binding(`corpus-security-warn`, 'corpus-security', namespace, {
      validationActions: ['Warn', 'Audit'],
      matchResources: { objectSelector: { matchLabels: { tier: 'canary' } } },
    }),
    binding(`corpus-replicas`, 'corpus-replicas', namespace, {
      paramRef: { name: PARAMS_NAME, namespace: paramsNamespace, parameterNotFoundAction: 'Deny' },
    }),
    binding(`corpus-configmaps`, 'corpus-configmaps', namespace),
    binding(`corpus-services`, 'corpus-services', namespace),
  ];
}

/** The params of corpus-replicas, and of the mutating policies corpus-team-label and corpus-replicas-cap. */
export function paramsConfigMap(namespace: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: PARAMS_NAME, namespace },
    data: { maxReplicas: '5', team: 'platform' },
  };
}
