/**
 * The discovery document on the wire (`GET <url>/discovery`): what a provider answers and what the provider
 * SDK serves, as a JSON Schema value its types derive from. providers/discovery.ts reads it, with every bound
 * checked, into the handlers the gateway calls; the bounds both use are base/step-rules.ts's, and
 * test/unit/protocol/discovery-schema.test.ts holds the two to the same answers. What JSON Schema cannot say:
 * handler names are unique, and `<name>.<provider>` is at most 63 characters.
 */
import { Type, type Static } from 'typebox';
import {
  DNS_LABEL_PATTERN,
  JSON_POINTER_PATTERN,
  MAX_DECLARED_PATHS,
  MAX_DECLARED_PATH_CHARS,
  MAX_DNS_LABEL_CHARS,
  MAX_TIMEOUT_SECONDS,
  MIN_TIMEOUT_SECONDS,
} from '../base/step-rules.js';
import { MatchSchema } from './match-schema.js';
import { component } from './schema-kit.js';
import { DISCOVERY_KIND, HOOK_API_VERSIONS, REVIEW_VERSIONS } from './versions.js';

const DNS_LABEL = { pattern: DNS_LABEL_PATTERN, maxLength: MAX_DNS_LABEL_CHARS };
const POINTER = JSON_POINTER_PATTERN;
const DECLARED = { maxItems: MAX_DECLARED_PATHS, maxLength: MAX_DECLARED_PATH_CHARS };

const declarations = (items: object, description: string) =>
  Type.Optional(
    Type.Immutable(
      Type.Array(Type.Unsafe<string>({ type: 'string', maxLength: DECLARED.maxLength, ...items }), {
        maxItems: DECLARED.maxItems,
        description,
      }),
    ),
  );

export const DiscoveryHandlerSchema = component(
  'DiscoveryHandler',
  Type.Object(
    {
      name: Type.Readonly(
        Type.String({
          ...DNS_LABEL,
          description: "A lower-case DNS-1123 label; the gateway's step is <name>.<provider>.",
        }),
      ),
      phase: Type.Readonly(Type.Enum(['mutate', 'validate'])),
      apiVersion: Type.Readonly(
        Type.Optional(
          Type.Enum(HOOK_API_VERSIONS, { description: "The hook API version it implements; default the document's." }),
        ),
      ),
      admissionReviewVersions: Type.Readonly(
        Type.Optional(
          Type.Immutable(
            Type.Array(Type.Enum(REVIEW_VERSIONS), {
              minItems: 1,
              description: "The AdmissionReview versions it speaks, preferred first; default the registration's.",
            }),
          ),
        ),
      ),
      path: Type.Readonly(
        Type.Optional(
          Type.String({
            pattern: '^/[^?#]*$',
            description: "Absolute path to POST to, without query or fragment; default <the URL's path>/<name>.",
          }),
        ),
      ),
      match: Type.Readonly(Type.Optional(MatchSchema)),
      timeoutSeconds: Type.Readonly(
        Type.Optional(
          Type.Number({
            minimum: MIN_TIMEOUT_SECONDS,
            maximum: MAX_TIMEOUT_SECONDS,
            description: "Default the registration's.",
          }),
        ),
      ),
      failurePolicy: Type.Readonly(Type.Optional(Type.Enum(['Fail', 'Ignore']))),
      supplies: Type.Readonly(
        declarations(
          { pattern: POINTER },
          'JSON pointers a mutate handler writes (* for any one segment); not inherited from the registration.',
        ),
      ),
      dependsOn: Type.Readonly(
        declarations(
          { anyOf: [{ pattern: POINTER }, DNS_LABEL] },
          'JSON pointers it reads and names of steps it runs after; not inherited from the registration.',
        ),
      ),
    },
    { additionalProperties: false },
  ),
);

export const DiscoveryDocumentSchema = component(
  'DiscoveryDocument',
  Type.Object(
    {
      apiVersion: Type.Readonly(
        Type.Optional(
          Type.Enum(HOOK_API_VERSIONS, {
            description: 'Absent: admissiongateway.io/v1alpha1 (documents from before the protocol was versioned).',
          }),
        ),
      ),
      kind: Type.Readonly(Type.Optional(Type.Literal(DISCOVERY_KIND))),
      handlers: Type.Readonly(
        Type.Immutable(
          Type.Array(DiscoveryHandlerSchema, { minItems: 1, description: 'Names are unique within a document.' }),
        ),
      ),
    },
    { additionalProperties: false },
  ),
);

export type DiscoveryHandlerDocument = Static<typeof DiscoveryHandlerSchema>;

export type DiscoveryDocument = Static<typeof DiscoveryDocumentSchema>;
