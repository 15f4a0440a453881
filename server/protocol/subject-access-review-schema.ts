/**
 * The call of an authorize provider, as JSON Schema values: the authorization.k8s.io/v1 SubjectAccessReview
 * the gateway sends (authorization/subject-access-review.ts, encodeSubjectAccessReviewRequest) and the answer
 * it reads (readSubjectAccessReviewAnswer): `status.denied: true` with a reason forbids, anything else is no
 * opinion. The attributes equal authorization/attributes.ts (type-checks.ts).
 */
import { Type } from 'typebox';
import { component, mapOf } from './schema-kit.js';

const SAR_V1 = 'authorization.k8s.io/v1';

export const SelectorRequirementSchema = component(
  'SelectorRequirement',
  Type.Object({
    key: Type.Readonly(Type.String()),
    operator: Type.Readonly(Type.Enum(['In', 'NotIn', 'Exists', 'DoesNotExist'])),
    values: Type.Readonly(
      Type.Immutable(Type.Array(Type.String(), { description: 'Empty for Exists and DoesNotExist.' })),
    ),
  }),
);

export const SelectorAttributesSchema = component(
  'SelectorAttributes',
  Type.Object(
    { requirements: Type.Readonly(Type.Immutable(Type.Array(SelectorRequirementSchema))) },
    {
      description:
        "A list's or watch's selector as kube-apiserver parsed it (Kubernetes 1.34+); the requirements are ANDed.",
    },
  ),
);

export const ResourceAttributesSchema = component(
  'ResourceAttributes',
  Type.Object({
    namespace: Type.Readonly(Type.String({ description: '"" for a cluster-scoped resource or across namespaces.' })),
    verb: Type.Readonly(Type.String()),
    group: Type.Readonly(Type.String({ description: '"" for the core group.' })),
    version: Type.Readonly(Type.String()),
    resource: Type.Readonly(Type.String()),
    subresource: Type.Readonly(Type.String()),
    name: Type.Readonly(Type.String({ description: '"" for list, watch, create and deletecollection.' })),
    labelSelector: Type.Readonly(Type.Optional(SelectorAttributesSchema)),
    fieldSelector: Type.Readonly(Type.Optional(SelectorAttributesSchema)),
  }),
);

export const NonResourceAttributesSchema = component(
  'NonResourceAttributes',
  Type.Object({ path: Type.Readonly(Type.String()), verb: Type.Readonly(Type.String()) }),
);

export const SubjectAccessReviewRequestSchema = component(
  'SubjectAccessReviewRequest',
  Type.Object(
    {
      apiVersion: Type.Literal(SAR_V1),
      kind: Type.Literal('SubjectAccessReview'),
      spec: Type.Object(
        {
          resourceAttributes: Type.Optional(ResourceAttributesSchema),
          nonResourceAttributes: Type.Optional(NonResourceAttributesSchema),
          user: Type.String(),
          groups: Type.Array(Type.String()),
          extra: Type.Optional(mapOf(Type.Array(Type.String()))),
          uid: Type.String(),
        },
        { oneOf: [{ required: ['resourceAttributes'] }, { required: ['nonResourceAttributes'] }] },
      ),
    },
    { description: 'What an authorize provider is sent: the request as the apiserver asked about it.' },
  ),
);

export const SubjectAccessReviewAnswerSchema = component(
  'SubjectAccessReviewAnswer',
  Type.Object(
    {
      apiVersion: Type.Literal(SAR_V1),
      kind: Type.Literal('SubjectAccessReview'),
      status: Type.Object({
        allowed: Type.Optional(Type.Boolean({ description: 'true counts as no opinion: the gateway never grants.' })),
        denied: Type.Optional(Type.Boolean({ description: 'true forbids.' })),
        reason: Type.Optional(Type.String({ description: 'Shown in the 403 (the first 1,024 characters).' })),
        evaluationError: Type.Optional(Type.String()),
      }),
    },
    { description: "An authorize provider's answer: denied with a reason, or no opinion." },
  ),
);
