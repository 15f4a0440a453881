/**
 * The AdmissionReview a provider is sent and answers, as JSON Schema values: the request and response the
 * hand-written interfaces of admission/types.ts describe (type-checks.ts holds the two equal), and the
 * envelope of each review version the gateway speaks. Objects stay open where Kubernetes may add fields;
 * what the gateway refuses in an answer (docs/provider-protocol.md, "The answer") is refused here too, as far as
 * one document can say it: a uid equal to the call's, or no patch from a validating handler, is in words.
 */
import { Type } from 'typebox';
import { ADMISSION_V1, ADMISSION_V1BETA1, type KubeObject, type ObjectMeta } from '../admission/types.js';
import { component, mapOf, openObject, orNull } from './schema-kit.js';
import { reviewVersionInfo, type ReviewVersion } from './versions.js';

const OPERATIONS = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'] as const;

export const OperationSchema = component(
  'Operation',
  Type.Enum(OPERATIONS, { description: 'The admission operation of a request.' }),
);

export const GroupVersionKindSchema = component(
  'GroupVersionKind',
  Type.Object({ group: Type.String(), version: Type.String(), kind: Type.String() }),
);

export const GroupVersionResourceSchema = component(
  'GroupVersionResource',
  Type.Object({ group: Type.String(), version: Type.String(), resource: Type.String() }),
);

export const UserInfoSchema = component(
  'UserInfo',
  Type.Object({
    username: Type.Optional(Type.String()),
    uid: Type.Optional(Type.String()),
    groups: Type.Optional(Type.Array(Type.String())),
    extra: Type.Optional(mapOf(Type.Array(Type.String()))),
  }),
);

/** The members of ObjectMeta the gateway reads; any other is passed on. */
export const ObjectMetaFields = Type.Object({
  name: Type.Optional(Type.String()),
  generateName: Type.Optional(Type.String()),
  namespace: Type.Optional(Type.String()),
  uid: Type.Optional(Type.String()),
  resourceVersion: Type.Optional(Type.String()),
  generation: Type.Optional(Type.Integer()),
  labels: Type.Optional(orNull(mapOf(Type.String()))),
  annotations: Type.Optional(orNull(mapOf(Type.String()))),
  ownerReferences: Type.Optional(orNull(Type.Array(Type.Unknown()))),
});

export const ObjectMetaSchema = component(
  'ObjectMeta',
  openObject<ObjectMeta>(ObjectMetaFields, {
    description: 'Object metadata; only the fields the gateway reads are spelled out.',
  }),
);

/** The members of any Kubernetes object the gateway reads. */
export const KubeObjectFields = Type.Object({
  apiVersion: Type.Optional(Type.String()),
  kind: Type.Optional(Type.String()),
  metadata: Type.Optional(orNull(ObjectMetaSchema)),
});

export const KubeObjectSchema = component(
  'KubeObject',
  openObject<KubeObject>(KubeObjectFields, { description: 'Any Kubernetes object as JSON.' }),
);

export const AdmissionRequestSchema = component(
  'AdmissionRequest',
  Type.Object(
    {
      uid: Type.String({
        format: 'uuid',
        description: 'A fresh random UUID for every call (not the uid the apiserver sent the gateway).',
      }),
      kind: GroupVersionKindSchema,
      resource: GroupVersionResourceSchema,
      subResource: Type.Optional(Type.String()),
      requestKind: Type.Optional(GroupVersionKindSchema),
      requestResource: Type.Optional(GroupVersionResourceSchema),
      requestSubResource: Type.Optional(Type.String()),
      name: Type.Optional(Type.String()),
      namespace: Type.Optional(Type.String()),
      operation: OperationSchema,
      userInfo: UserInfoSchema,
      object: Type.Optional(
        orNull(KubeObjectSchema, {
          description:
            'The object as the chain has it when the handler is called (earlier mutating steps applied); null on DELETE.',
        }),
      ),
      oldObject: Type.Optional(orNull(KubeObjectSchema)),
      dryRun: Type.Optional(Type.Boolean()),
      options: Type.Optional(orNull(KubeObjectSchema)),
    },
    {
      description:
        'The request as the apiserver sent it to the gateway, with a fresh uid and the current object. Fields ' +
        'a newer apiserver adds are passed on as they came.',
    },
  ),
);

/** Whatever a step's op needs: RFC 6902 pointers below the root, none through a prototype member. */
const PATCH_POINTER = Type.String({
  pattern: '^/',
  not: { pattern: '(^|/)(__proto__|constructor|prototype)(/|$)' },
  description: 'A JSON pointer below the root; no segment is __proto__, constructor or prototype.',
});

export const JsonPatchOperationSchema = component(
  'JsonPatchOperation',
  Type.Union([
    Type.Object({ op: Type.Enum(['add', 'replace', 'test']), path: PATCH_POINTER, value: Type.Unknown() }),
    Type.Object({ op: Type.Literal('remove'), path: PATCH_POINTER }),
    Type.Object({ op: Type.Enum(['move', 'copy']), from: PATCH_POINTER, path: PATCH_POINTER }),
  ]),
);

export const JsonPatchSchema = component(
  'JsonPatch',
  Type.Array(JsonPatchOperationSchema, { description: 'RFC 6902 operations, applied strictly in order.' }),
);

export const StatusSchema = component(
  'Status',
  Type.Object(
    {
      metadata: Type.Optional(Type.Unsafe<Record<string, never>>({ type: 'object' })),
      status: Type.Optional(Type.Enum(['Success', 'Failure'])),
      message: Type.Optional(Type.String({ description: 'Why the request is refused: what the user reads.' })),
      reason: Type.Optional(Type.String({ description: 'Read when there is no message.' })),
      code: Type.Optional(Type.Integer({ description: 'The HTTP code of a refusal: 400 to 599, else 403 is used.' })),
    },
    { description: 'metav1.Status as carried in response.status.' },
  ),
);

export const AdmissionResponseSchema = component(
  'AdmissionResponse',
  Type.Object({
    uid: Type.String({ description: 'The uid of the request it answers (admission.k8s.io/v1 requires it).' }),
    allowed: Type.Boolean(),
    status: Type.Optional(StatusSchema),
    patch: Type.Optional(
      Type.String({
        description: 'base64 of a JSON patch against request.object. Mutating handlers only.',
        contentEncoding: 'base64',
        contentMediaType: 'application/json',
        contentSchema: JsonPatchSchema,
      }),
    ),
    patchType: Type.Optional(Type.Literal('JSONPatch')),
    auditAnnotations: Type.Optional(mapOf(Type.String())),
    warnings: Type.Optional(Type.Array(Type.String())),
  }),
);

/** `AdmissionReviewRequestV1beta1`: a component name per review version. */
const componentOf = (kind: 'Request' | 'Response', version: ReviewVersion) =>
  `AdmissionReview${kind}${version[0]!.toUpperCase()}${version.slice(1)}`;

/** A deprecated version's components say so, with when it goes, from the catalog. */
function deprecation(version: ReviewVersion): { deprecated?: true; description: string } {
  const { apiVersion, deprecation: d } = reviewVersionInfo(version);
  if (!d) return { description: `${apiVersion}.` };
  return {
    deprecated: true,
    description:
      `${apiVersion}, deprecated since ${d.since}: use ${d.replacement}. ` +
      `It may stop being spoken from ${d.removalNoSoonerThan} on.`,
  };
}

/** The review a handler is sent in `version`: the same request in either, only the envelope's apiVersion differs. */
export function reviewRequestSchema(version: ReviewVersion) {
  const { apiVersion } = reviewVersionInfo(version);
  return component(
    componentOf('Request', version),
    Type.Object(
      { apiVersion: Type.Literal(apiVersion), kind: Type.Literal('AdmissionReview'), request: AdmissionRequestSchema },
      deprecation(version),
    ),
  );
}

/**
 * The answer to a review sent in `version`. v1 as the apiserver checks it: apiVersion and kind exact, patch
 * and patchType together. v1beta1 as leniently as the apiserver reads it: apiVersion and kind may be left out,
 * and a v1 apiVersion is taken too.
 */
export function reviewResponseSchema(version: ReviewVersion) {
  const name = componentOf('Response', version);
  const { description, ...deprecated } = deprecation(version);
  if (version === 'v1') {
    return component(
      name,
      Type.Object(
        {
          apiVersion: Type.Literal(ADMISSION_V1),
          kind: Type.Literal('AdmissionReview'),
          response: Type.Intersect([
            AdmissionResponseSchema,
            Type.Unsafe<object>({ type: 'object', dependentRequired: { patch: ['patchType'], patchType: ['patch'] } }),
          ]),
        },
        { description: `${description} response.uid is the request's uid.`, ...deprecated },
      ),
    );
  }
  return component(
    name,
    Type.Object(
      {
        apiVersion: Type.Optional(Type.Enum([ADMISSION_V1BETA1, ADMISSION_V1])),
        kind: Type.Optional(Type.Literal('AdmissionReview')),
        response: AdmissionResponseSchema,
      },
      { description: `${description} A patch without patchType is taken as a JSON patch.`, ...deprecated },
    ),
  );
}
