/**
 * The OpenAPI 3.1 document of the provider protocol, generated from the schemas the code's types derive from
 * (or are checked against, type-checks.ts): the paths a provider serves, the review of each version the
 * gateway sends and the answer it accepts, the settings header, the authorize call and the discovery document.
 * Served at ops `/openapi/v3` and printed by `admission-gateway openapi`. The same input gives the same bytes:
 * components are sorted by name, everything else is in the order written here.
 */
import { packageVersion } from '../base/version.js';
import { SETTINGS_HEADER_NAME, SettingsSchema, TimeoutSchema } from './call-parameters.js';
import { DiscoveryDocumentSchema } from './discovery-document.js';
import { reviewRequestSchema, reviewResponseSchema } from './review-schema.js';
import { componentName } from './schema-kit.js';
import { SubjectAccessReviewAnswerSchema, SubjectAccessReviewRequestSchema } from './subject-access-review-schema.js';
import { HOOK_API_VERSIONS, REVIEW_VERSIONS, reviewApiVersion, reviewVersionInfo } from './versions.js';

export const OPENAPI_VERSION = '3.1.0';

/** JSON, as the document is written. */
export type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };

export interface OpenApiDocument {
  readonly openapi: typeof OPENAPI_VERSION;
  readonly info: { readonly [key: string]: Json };
  readonly paths: { readonly [path: string]: Json };
  readonly components: { readonly schemas: { readonly [name: string]: Json } };
}

const COMPONENTS = '#/components/schemas/';

/**
 * Writes schemas as JSON, each named component once under components.schemas and a `$ref` wherever it is
 * used, however deep (a component inside another included).
 */
class ComponentWriter {
  private readonly defined = new Map<string, Json>();

  json(value: unknown, self?: object): Json {
    if (Array.isArray(value)) return value.map((item) => this.json(item));
    if (typeof value !== 'object' || value === null) return value as Json;
    const name = componentName(value);
    if (name !== undefined && value !== self) {
      this.define(name, value);
      return { $ref: `${COMPONENTS}${name}` };
    }
    return Object.fromEntries(Object.entries(value).map(([key, member]) => [key, this.json(member)]));
  }

  schemas(): { readonly [name: string]: Json } {
    return Object.fromEntries([...this.defined].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }

  private define(name: string, schema: object): void {
    const known = this.defined.get(name);
    if (known === null) return; // being written: a reference back to it
    this.defined.set(name, null);
    const written = this.json(schema, schema);
    // Two schemas given one name would make the document say one thing and the code another.
    if (known !== undefined && JSON.stringify(known) !== JSON.stringify(written)) {
      throw new Error(`two different schemas are named ${name}`);
    }
    this.defined.set(name, written);
  }
}

/** What the catalog says of each version, for readers of info. */
function versionsInfo(): { readonly [key: string]: Json } {
  return {
    'x-hook-api-versions': [...HOOK_API_VERSIONS],
    'x-admission-review-versions': REVIEW_VERSIONS.map((version) => {
      const { apiVersion, deprecation } = reviewVersionInfo(version);
      return deprecation ? { version, apiVersion, deprecated: true, ...deprecation } : { version, apiVersion };
    }),
  };
}

const jsonContent = (schema: Json) => ({ 'application/json': { schema } });

const FAILURE = {
  description:
    'Any other status is a failure of the call (reason http_status), never a decision; redirects are not followed.',
};

/** The call the gateway makes for a step: a review of either version, or a SubjectAccessReview. */
function reviewPath(w: ComponentWriter): Json {
  const requests = [...REVIEW_VERSIONS.map(reviewRequestSchema), SubjectAccessReviewRequestSchema];
  const answers = [...REVIEW_VERSIONS.map(reviewResponseSchema), SubjectAccessReviewAnswerSchema];
  return {
    post: {
      operationId: 'review',
      summary: 'Answer one AdmissionReview, or one SubjectAccessReview for the authorize phase',
      description:
        `The review is sent in the first of the handler's admissionReviewVersions the gateway speaks ` +
        `(${REVIEW_VERSIONS.map(reviewApiVersion).join(', ')}) and answered in the same version. An authorize ` +
        'provider is sent a SubjectAccessReview at its URL instead. Answers are bounded to 20 MiB and 1,000 ' +
        'levels of nesting; an answer this document refuses is a failure (invalid_response).',
      parameters: [
        {
          name: 'handler',
          in: 'path',
          required: true,
          description:
            "The registration URL's path, or a discovered handler's path (default <the URL's path>/<name>); " +
            'it may span several segments.',
          schema: { type: 'string' },
        },
        { name: 'timeout', in: 'query', required: true, schema: w.json(TimeoutSchema), example: '1742ms' },
        {
          name: SETTINGS_HEADER_NAME,
          in: 'header',
          required: false,
          description: "The registration's settings, when it has any.",
          content: jsonContent(w.json(SettingsSchema)),
        },
      ],
      requestBody: { required: true, content: jsonContent({ oneOf: w.json(requests) }) },
      responses: {
        '200': {
          description: 'The answer, in the version of the request.',
          content: jsonContent({ anyOf: w.json(answers) }),
        },
        default: FAILURE,
      },
    },
  };
}

function discoveryPath(w: ComponentWriter): Json {
  return {
    get: {
      operationId: 'discover',
      summary: 'List the handlers a provider serves (a registration with discovery: true)',
      description:
        "Asked at <the URL's path>/<discoveryPath> (default discovery) when the provider is added, then every " +
        '5 minutes; an answer this document refuses counts as invalid_response. No settings header is sent.',
      responses: {
        '200': { description: 'The handlers.', content: jsonContent(w.json(DiscoveryDocumentSchema)) },
        default: FAILURE,
      },
    },
  };
}

const HEALTH_PATH: Json = {
  get: {
    operationId: 'health',
    summary: 'Liveness of a provider served by the SDK (the gateway does not call it)',
    responses: {
      '200': { description: 'Serving.', content: { 'text/plain': { schema: { type: 'string', const: 'ok' } } } },
    },
  },
};

/** The document; `version` is the gateway's (info.version). */
export function openApiDocument(version: string = packageVersion()): OpenApiDocument {
  const w = new ComponentWriter();
  const paths = { '/{handler}': reviewPath(w), '/discovery': discoveryPath(w), '/healthz': HEALTH_PATH };
  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: 'admission-gateway provider protocol',
      version,
      description:
        'What admission-gateway sends a remote provider and what it accepts back (docs/provider-protocol.md). ' +
        'A provider serves these paths over HTTPS below the URL it is registered with.',
      ...versionsInfo(),
    },
    paths,
    components: { schemas: w.schemas() },
  };
}
