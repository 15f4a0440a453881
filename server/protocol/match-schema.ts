/**
 * Which requests a handler sees (a discovery document's `match`), as JSON Schema values: the
 * admissionregistration.k8s.io/v1 shapes of admission/types.ts (type-checks.ts holds them equal), with what
 * config/match-schema.ts refuses refused here too: unknown fields, empty lists, a resource of more than two
 * parts, values that do not fit a selector's operator.
 */
import { Type } from 'typebox';
import { component, readonlyMapOf } from './schema-kit.js';

const nonEmptyList = (description?: string) =>
  Type.Immutable(Type.Array(Type.String(), { minItems: 1, ...(description ? { description } : {}) }));

export const RuleWithOperationsSchema = component(
  'RuleWithOperations',
  Type.Object(
    {
      operations: Type.Immutable(
        Type.Array(Type.Enum(['CREATE', 'UPDATE', 'DELETE', 'CONNECT', '*']), { minItems: 1 }),
      ),
      apiGroups: nonEmptyList('API groups; "" is the core group, * all groups.'),
      apiVersions: nonEmptyList(),
      resources: Type.Immutable(
        Type.Array(
          Type.String({
            pattern: '^[^/]+(/[^/]+)?$',
            description: 'resource, resource/subresource, *, */status, pods/* or */*',
          }),
          { minItems: 1 },
        ),
      ),
      scope: Type.Optional(Type.Enum(['Cluster', 'Namespaced', '*'], { description: 'Default *.' })),
    },
    { additionalProperties: false },
  ),
);

/** In and NotIn need values; Exists and DoesNotExist take none. */
const VALUES_FIT_OPERATOR = [
  {
    if: { type: 'object', properties: { operator: { enum: ['In', 'NotIn'] } } },
    then: { type: 'object', required: ['values'], properties: { values: { type: 'array', minItems: 1 } } },
  },
  {
    if: { type: 'object', properties: { operator: { enum: ['Exists', 'DoesNotExist'] } } },
    then: { type: 'object', properties: { values: { type: 'array', maxItems: 0 } } },
  },
];

export const LabelSelectorRequirementSchema = component(
  'LabelSelectorRequirement',
  Type.Object(
    {
      key: Type.String({ minLength: 1 }),
      operator: Type.Enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
      values: Type.Optional(Type.Immutable(Type.Array(Type.String()))),
    },
    { additionalProperties: false, allOf: VALUES_FIT_OPERATOR },
  ),
);

export const LabelSelectorSchema = component(
  'LabelSelector',
  Type.Object(
    {
      matchLabels: Type.Optional(readonlyMapOf(Type.String())),
      matchExpressions: Type.Optional(Type.Immutable(Type.Array(LabelSelectorRequirementSchema))),
    },
    { additionalProperties: false, description: 'A Kubernetes label selector; an empty one matches everything.' },
  ),
);

export const MatchSchema = component(
  'Match',
  Type.Object(
    {
      rules: Type.Immutable(Type.Array(RuleWithOperationsSchema, { minItems: 1 })),
      namespaceSelector: Type.Optional(LabelSelectorSchema),
      objectSelector: Type.Optional(LabelSelectorSchema),
    },
    {
      additionalProperties: false,
      description: 'Which requests a step sees: the same shapes and semantics as a webhook configuration.',
    },
  ),
);
