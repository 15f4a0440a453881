/**
 * The discovery document's schema (in the OpenAPI document) and the gateway's parser of discovery documents
 * (providers/discovery.ts) agree: each bound the parser checks is in the schema, at the same edge. A document
 * the schema accepts is one the gateway takes; one the gateway refuses, the schema refuses too (but for what
 * JSON Schema cannot say: unique names, and `<name>.<provider>` within 63 characters).
 */
import assert from 'node:assert/strict';
import { parseDiscovery } from '../../../server/providers/discovery.js';
import { openApiDocument } from '../../../server/protocol/openapi.js';
import { documentSchemas } from '../../helpers/openapi-schemas.js';

const PROVIDER = 'p';
const RULE = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };

const handler = (fields: Record<string, unknown> = {}) => ({ name: 'labels', phase: 'mutate', ...fields });
const withHandler = (fields: Record<string, unknown>) => ({ handlers: [handler(fields)] });
const pointers = (count: number) => Array.from({ length: count }, (_, i) => `/metadata/labels/l${i}`);

/** Documents the gateway takes, each at a bound's edge where it has one. */
const ACCEPTED: Readonly<Record<string, unknown>> = {
  'the smallest document': { handlers: [handler()] },
  'every field': {
    apiVersion: 'admissiongateway.io/v1alpha1',
    kind: 'DiscoveryResponse',
    handlers: [
      handler({
        apiVersion: 'admissiongateway.io/v1alpha1',
        admissionReviewVersions: ['v1beta1', 'v1'],
        path: '/v2/labels',
        match: {
          rules: [{ ...RULE, operations: ['*'], resources: ['pods/status'], scope: 'Namespaced' }],
          namespaceSelector: { matchLabels: { team: 'a' } },
          objectSelector: {
            matchExpressions: [
              { key: 'tier', operator: 'In', values: ['web'] },
              { key: 'legacy', operator: 'DoesNotExist' },
            ],
          },
        },
        timeoutSeconds: 2.5,
        failurePolicy: 'Ignore',
        supplies: ['/metadata/labels/team', '/spec/containers/*/resources', '/a~1b~0c'],
        dependsOn: ['/metadata/annotations', 'default-labels'],
      }),
      handler({ name: 'check', phase: 'validate' }),
    ],
  },
  'a name of 61 characters (63 with ".p")': withHandler({ name: 'a'.repeat(61) }),
  'timeoutSeconds 0.001': withHandler({ timeoutSeconds: 0.001 }),
  'timeoutSeconds 30': withHandler({ timeoutSeconds: 30 }),
  '64 pointers in supplies': withHandler({ supplies: pointers(64) }),
  'a pointer of 512 characters': withHandler({ dependsOn: [`/${'a'.repeat(511)}`] }),
};

/** Documents the gateway refuses, and why. */
const REFUSED: Readonly<Record<string, unknown>> = {
  'no handlers': { handlers: [] },
  'no handlers field': { kind: 'DiscoveryResponse' },
  'an unknown top-level field': { handlers: [handler()], extra: true },
  'another kind': { kind: 'Discovery', handlers: [handler()] },
  'an unknown hook API version': { apiVersion: 'admissiongateway.io/v2', handlers: [handler()] },
  'an unknown handler field': withHandler({ timeout: 2 }),
  'a handler without a phase': { handlers: [{ name: 'labels' }] },
  'an unknown phase': withHandler({ phase: 'authorize' }),
  'an upper-case name': withHandler({ name: 'Labels' }),
  'a name ending in "-"': withHandler({ name: 'labels-' }),
  'a name of 64 characters': withHandler({ name: 'a'.repeat(64) }),
  'an unknown handler hook API version': withHandler({ apiVersion: 'admissiongateway.io/v1' }),
  'no review versions': withHandler({ admissionReviewVersions: [] }),
  'an unknown review version': withHandler({ admissionReviewVersions: ['v2'] }),
  'a relative path': withHandler({ path: 'labels' }),
  'a path with a query': withHandler({ path: '/labels?x=1' }),
  'timeoutSeconds 0': withHandler({ timeoutSeconds: 0 }),
  'timeoutSeconds 30.5': withHandler({ timeoutSeconds: 30.5 }),
  'timeoutSeconds as text': withHandler({ timeoutSeconds: '2' }),
  'an unknown failurePolicy': withHandler({ failurePolicy: 'fail' }),
  '65 pointers in supplies': withHandler({ supplies: pointers(65) }),
  'a pointer of 513 characters': withHandler({ supplies: [`/${'a'.repeat(512)}`] }),
  'the root pointer': withHandler({ supplies: ['/'] }),
  'a step name in supplies': withHandler({ supplies: ['default-labels'] }),
  'a "~" not escaping anything': withHandler({ dependsOn: ['/a~2b'] }),
  'a match without rules': withHandler({ match: { rules: [] } }),
  'a rule without operations': withHandler({ match: { rules: [{ ...RULE, operations: [] }] } }),
  'an unknown operation': withHandler({ match: { rules: [{ ...RULE, operations: ['PATCH'] }] } }),
  'a resource of three parts': withHandler({ match: { rules: [{ ...RULE, resources: ['a/b/c'] }] } }),
  'an unknown rule field': withHandler({ match: { rules: [{ ...RULE, verbs: ['get'] }] } }),
  'In without values': withHandler({
    match: { rules: [RULE], objectSelector: { matchExpressions: [{ key: 'a', operator: 'In' }] } },
  }),
  'Exists with values': withHandler({
    match: { rules: [RULE], objectSelector: { matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] } },
  }),
};

/** The parser's verdict: undefined when it takes the document, else its message. */
function parserRefusal(document: unknown): string | undefined {
  try {
    parseDiscovery(document, PROVIDER, '/hooks');
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

describe('the discovery document schema and the gateway’s discovery parser', () => {
  const schemas = documentSchemas(openApiDocument());
  const validate = schemas.component('DiscoveryDocument');

  for (const [what, document] of Object.entries(ACCEPTED)) {
    it(`both take ${what}`, () => {
      assert.equal(parserRefusal(document), undefined);
      assert.ok(validate(document), schemas.errors(validate));
    });
  }

  for (const [what, document] of Object.entries(REFUSED)) {
    it(`both refuse ${what}`, () => {
      assert.notEqual(parserRefusal(document), undefined, 'the parser took it');
      assert.equal(validate(document), false, 'the schema took it');
    });
  }

  it('leave to the parser alone what JSON Schema cannot say: unique names, the step name’s length', () => {
    const twice = { handlers: [handler(), handler()] };
    const long = withHandler({ name: 'a'.repeat(62) });
    assert.match(parserRefusal(twice) ?? '', /listed twice/);
    assert.match(parserRefusal(long) ?? '', /DNS-1123 label/);
    assert.ok(validate(twice) && validate(long));
  });
});
