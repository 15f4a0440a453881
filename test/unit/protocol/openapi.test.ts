/**
 * The OpenAPI document of the provider protocol: valid OpenAPI 3.1 for a maintained validator, every schema in
 * it compiles as JSON Schema 2020-12, and what it says of versions comes from the catalog and package.json.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { openApiDocument, type OpenApiDocument } from '../../../server/protocol/openapi.js';
import { HOOK_API_VERSIONS, REVIEW_VERSIONS, isDeprecated } from '../../../server/protocol/versions.js';
import { documentSchemas } from '../../helpers/openapi-schemas.js';

const PACKAGE = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** The validator's verdict on `document`, with its errors as text. */
async function validateOpenApi(document: object): Promise<{ valid: boolean; errors: string }> {
  const validator = new Validator();
  // A copy: the validator may write into what it is given.
  const result = await validator.validate(structuredClone({ ...document }));
  return { valid: result.valid && validator.version === '3.1', errors: JSON.stringify(result.errors) };
}

type Schema = { readonly [key: string]: unknown };

const componentOf = (document: OpenApiDocument, name: string): Schema => {
  const schema = document.components.schemas[name];
  assert.ok(schema && typeof schema === 'object', `no component ${name}`);
  return schema as Schema;
};

describe('the OpenAPI document of the provider protocol', () => {
  const document = openApiDocument();

  it('is valid OpenAPI 3.1', async () => {
    const { valid, errors } = await validateOpenApi(document);
    assert.ok(valid, errors);
  });

  it('is refused by the same validator when an operation is broken (the check can fail)', async () => {
    const broken = structuredClone(document) as unknown as {
      paths: { '/{handler}': { post: { parameters: object[] } } };
    };
    broken.paths['/{handler}'].post.parameters[1] = { name: 'timeout', schema: { type: 'string' } };
    assert.equal((await validateOpenApi(broken)).valid, false);
  });

  it('has schemas that all compile as JSON Schema 2020-12, each $ref found in the document', () => {
    const schemas = documentSchemas(document);
    const names = Object.keys(document.components.schemas);
    assert.deepEqual(names, [
      'AdmissionRequest',
      'AdmissionResponse',
      'AdmissionReviewRequestV1',
      'AdmissionReviewRequestV1beta1',
      'AdmissionReviewResponseV1',
      'AdmissionReviewResponseV1beta1',
      'DiscoveryDocument',
      'DiscoveryHandler',
      'GroupVersionKind',
      'GroupVersionResource',
      'JsonPatch',
      'JsonPatchOperation',
      'KubeObject',
      'LabelSelector',
      'LabelSelectorRequirement',
      'Match',
      'NonResourceAttributes',
      'ObjectMeta',
      'Operation',
      'ResourceAttributes',
      'RuleWithOperations',
      'SelectorAttributes',
      'SelectorRequirement',
      'Settings',
      'Status',
      'SubjectAccessReviewAnswer',
      'SubjectAccessReviewRequest',
      'UserInfo',
    ]);
    for (const name of names) schemas.component(name);
  });

  it('names the gateway version and the hook API versions', () => {
    assert.equal(document.info.version, PACKAGE.version);
    assert.deepEqual(document.info['x-hook-api-versions'], [...HOOK_API_VERSIONS]);
  });

  it('has each review version’s request and answer, the deprecated ones marked from the catalog', () => {
    for (const version of REVIEW_VERSIONS) {
      const suffix = `${version[0]!.toUpperCase()}${version.slice(1)}`;
      for (const name of [`AdmissionReviewRequest${suffix}`, `AdmissionReviewResponse${suffix}`]) {
        assert.equal(componentOf(document, name).deprecated === true, isDeprecated(version), name);
      }
    }
    assert.equal(componentOf(document, 'AdmissionReviewRequestV1beta1').deprecated, true);
    assert.equal(componentOf(document, 'AdmissionReviewRequestV1').deprecated, undefined);
  });

  it('describes POST /{handler}, GET /discovery and GET /healthz', () => {
    assert.deepEqual(
      Object.entries(document.paths).map(([path, item]) => [path, Object.keys(item as object)]),
      [
        ['/{handler}', ['post']],
        ['/discovery', ['get']],
        ['/healthz', ['get']],
      ],
    );
  });

  it('is written the same way every time, its components sorted by name', () => {
    const names = Object.keys(document.components.schemas);
    assert.deepEqual(names, [...names].sort());
    assert.equal(JSON.stringify(openApiDocument()), JSON.stringify(document));
  });
});
