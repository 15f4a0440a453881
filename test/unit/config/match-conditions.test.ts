import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { readFileSync } from 'node:fs';
import { STEP_FIELDS } from '../../../server/config/entry-fields.js';
import { resolveProvider } from '../../../server/kube/admission-provider.js';
import { configError, parseConfig } from '../../helpers/config.js';

const PLUGIN = 'chain:\n  - plugin: require-labels\n    settings: { labels: [team] }\n';

describe('matchConditions on a chain entry', () => {
  it('are read, compiled, on plugin, provider and policy entries alike', () => {
    const config = parseConfig(
      `${PLUGIN}    matchConditions:\n      - { name: pods, expression: "request.resource.resource == 'pods'" }\n` +
        '  - provider: p\n    url: https://p.example/\n    matchConditions: [{ name: ns, expression: "namespaceObject == null" }]\n' +
        "  - policy: q\n    match: { rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] }\n" +
        '    matchConditions: [{ name: old, expression: "oldObject == null" }]\n    validations: [{ expression: "true" }]\n',
    );
    assert.deepEqual(
      config.chain.map((entry) => entry.matchConditions?.map((c) => [c.name, c.program.expression])),
      [
        [['pods', "request.resource.resource == 'pods'"]],
        [['ns', 'namespaceObject == null']],
        [['old', 'oldObject == null']],
      ],
    );
  });

  it('are left out when the list is empty', () => {
    assert.equal(parseConfig(`${PLUGIN}    matchConditions: []\n`).chain[0]!.matchConditions, undefined);
  });

  const invalid: readonly [string, string, string][] = [
    [
      'an expression that does not parse: the file, line, field and the column inside the expression',
      `${PLUGIN}    matchConditions:\n      - name: broken\n        expression: "object.metadata.name == "\n`,
      'gateway.yaml:6:9: chain[0].matchConditions[0].expression: Unexpected token: EOF (at column 25 of the expression)',
    ],
    [
      'an expression that reads params, which a webhook condition has not',
      `${PLUGIN}    matchConditions: [{ name: p, expression: "params == null" }]\n`,
      'gateway.yaml:4:34: chain[0].matchConditions[0].expression: Unknown variable: params (at column 1 of the expression)',
    ],
    [
      'an expression that gives no bool',
      `${PLUGIN}    matchConditions: [{ name: s, expression: "'a' + 'b'" }]\n`,
      'gateway.yaml:4:34: chain[0].matchConditions[0].expression: the expression gives string, where bool is expected',
    ],
    [
      'more than 64',
      `${PLUGIN}    matchConditions: [${Array.from({ length: 65 }, (_, i) => `{ name: m${i}, expression: "true" }`).join(', ')}]\n`,
      'gateway.yaml:4:5: chain[0].matchConditions: expected at most 64 items, got 65',
    ],
    [
      'two of one name',
      `${PLUGIN}    matchConditions: [{ name: m, expression: "true" }, { name: m, expression: "true" }]\n`,
      'gateway.yaml:4:58: chain[0].matchConditions[1].name: the name "m" is already used in this list',
    ],
    [
      'a name that is no qualified name',
      `${PLUGIN}    matchConditions: [{ name: "-m", expression: "true" }]\n`,
      'gateway.yaml:4:25: chain[0].matchConditions[0].name: expected a name of up to 63 letters',
    ],
  ];
  for (const [name, yaml, message] of invalid) {
    it(`refuses ${name}`, () => {
      const got = configError(yaml);
      assert.ok(got.startsWith(message), `got: ${got}`);
    });
  }

  it('say where in a multi-line expression the mistake is', () => {
    const got = configError(
      `${PLUGIN}    matchConditions:\n      - name: m\n        expression: |\n          true &&\n          object.x ==\n`,
    );
    assert.equal(
      got,
      'gateway.yaml:6:9: chain[0].matchConditions[0].expression: Unexpected token: EOF (at line 3, column 1 of the expression)',
    );
  });
});

describe('matchConditions on an AdmissionProvider', () => {
  it('are read from spec, and refused there with the field named', () => {
    const ok = resolveProvider(
      {
        apiVersion: 'admissiongateway.io/v1alpha1',
        kind: 'AdmissionProvider',
        metadata: { name: 'p' },
        spec: { url: 'https://p.example/', matchConditions: [{ name: 'c', expression: 'object != null' }] },
      },
      new Set(),
    );
    assert.deepEqual(
      ok.entry?.matchConditions?.map((c) => c.name),
      ['c'],
    );
    const bad = resolveProvider(
      {
        apiVersion: 'admissiongateway.io/v1alpha1',
        kind: 'AdmissionProvider',
        metadata: { name: 'p' },
        spec: { url: 'https://p.example/', matchConditions: [{ name: 'c', expression: 'object.' }] },
      },
      new Set(),
    );
    assert.equal(bad.error?.reason, 'InvalidSpec');
    assert.match(
      bad.error?.message ?? '',
      /^spec\.matchConditions\[0\]\.expression: .*\(at column \d+ of the expression\)$/,
    );
  });
});

describe('the step fields', () => {
  it('are each declared in the AdmissionProvider schema and documented for it', () => {
    interface Schema {
      spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: object } } } } }[] };
    }
    const crd = parse(readFileSync('manifests/crd-admissionprovider.yaml', 'utf8')) as Schema;
    const schema = crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties;
    const doc = readFileSync('docs/admission-provider-crd.md', 'utf8');
    for (const field of STEP_FIELDS) {
      assert.ok(field in schema, `${field} is not in the CRD's spec schema`);
      assert.ok(doc.includes(`| \`${field}\``), `${field} has no row in docs/admission-provider-crd.md`);
    }
  });
});
