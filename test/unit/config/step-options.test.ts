/**
 * A step's options are written once in the code (server/config/step-options.ts); the operator's documents and
 * the AdmissionProvider schema say the same, and every source of a step resolves them the same way. So do its
 * declarations, `supplies` and `dependsOn` (server/config/step-declarations.ts).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import {
  FAILURE_POLICIES,
  MAX_TIMEOUT_SECONDS,
  MIN_TIMEOUT_SECONDS,
  MODES,
  REINVOCATION_POLICIES,
  SIDE_EFFECTS,
  STEP_DEFAULTS,
  resolveStepOptions,
} from '../../../server/config/step-options.js';
import { MAX_DECLARED_PATHS, MAX_DECLARED_PATH_CHARS } from '../../../server/config/step-declarations.js';
import { resolveProvider } from '../../../server/kube/admission-provider.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

/** The cells of the Markdown table row whose first cell is `field` in backticks. */
function row(markdown: string, field: string): string[] {
  const line = markdown.split('\n').find((l) => l.startsWith(`| \`${field}\``));
  assert.ok(line, `no table row for ${field}`);
  return line
    .split('|')
    .slice(2, -1)
    .map((cell) => cell.trim());
}

const code = (values: readonly (string | number)[]) => values.map((v) => `\`${v}\``);

/** The AdmissionProvider CRD's schema of `spec`, field by field. */
function crdSpec(): Record<string, object> {
  interface Schema {
    spec: {
      versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, object> } } } } }[];
    };
  }
  const crd = parse(read('manifests/crd-admissionprovider.yaml')) as Schema;
  return crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties;
}

describe('step options', () => {
  it('resolve each option from the first source that sets it, then from the defaults', () => {
    assert.deepEqual(resolveStepOptions(), STEP_DEFAULTS);
    assert.deepEqual(
      resolveStepOptions({ timeoutSeconds: 2 }, { timeoutSeconds: 5, mode: 'warn' }, { failurePolicy: 'Ignore' }),
      { ...STEP_DEFAULTS, timeoutSeconds: 2, mode: 'warn', failurePolicy: 'Ignore' },
    );
    assert.deepEqual(resolveStepOptions(undefined, { sideEffects: 'Some' }), { ...STEP_DEFAULTS, sideEffects: 'Some' });
  });

  it('are documented for chain entries with their values, defaults and bounds', () => {
    const doc = read('docs/configuration.md');
    const [type, failureDefault] = row(doc, 'failurePolicy');
    assert.equal(type, code(FAILURE_POLICIES).join(' or '));
    assert.equal(failureDefault, `plugin's default, then \`${STEP_DEFAULTS.failurePolicy}\``);
    const [, timeoutDefault, timeoutNotes] = row(doc, 'timeoutSeconds');
    assert.equal(timeoutDefault, `plugin's default, then \`${STEP_DEFAULTS.timeoutSeconds}\``);
    assert.ok(timeoutNotes!.startsWith(`${MIN_TIMEOUT_SECONDS}–${MAX_TIMEOUT_SECONDS}.`), timeoutNotes);
    const [modes, modeDefault] = row(doc, 'mode');
    assert.equal(modes, `${code(MODES).slice(0, -1).join(', ')} or ${code(MODES).at(-1)}`);
    assert.equal(modeDefault, `plugin's default, then \`${STEP_DEFAULTS.mode}\``);
    assert.deepEqual(row(doc, 'sideEffects').slice(0, 2), [
      code(SIDE_EFFECTS).join(' or '),
      `\`${STEP_DEFAULTS.sideEffects}\``,
    ]);
    assert.deepEqual(row(doc, 'reinvocationPolicy').slice(0, 2), [
      code(REINVOCATION_POLICIES).join(' or '),
      `plugin's default, then \`${STEP_DEFAULTS.reinvocationPolicy}\``,
    ]);
  });

  it('are documented, and declared in the schema, for AdmissionProviders alike', () => {
    const doc = read('docs/admission-provider-crd.md');
    const field = (name: string) => row(doc, name).slice(0, 2);
    assert.deepEqual(field('failurePolicy'), [code(FAILURE_POLICIES).join(', '), `\`${STEP_DEFAULTS.failurePolicy}\``]);
    assert.deepEqual(field('timeoutSeconds'), ['integer', `\`${STEP_DEFAULTS.timeoutSeconds}\``]);
    assert.equal(row(doc, 'timeoutSeconds')[2], `1–${MAX_TIMEOUT_SECONDS}`);
    assert.deepEqual(field('mode'), [code(MODES).join(', '), `\`${STEP_DEFAULTS.mode}\``]);
    assert.deepEqual(field('sideEffects'), [code(SIDE_EFFECTS).join(', '), `\`${STEP_DEFAULTS.sideEffects}\``]);
    assert.deepEqual(field('reinvocationPolicy'), [
      code(REINVOCATION_POLICIES).join(', '),
      `\`${STEP_DEFAULTS.reinvocationPolicy}\``,
    ]);

    const spec = crdSpec();
    assert.deepEqual(spec.timeoutSeconds, { type: 'integer', minimum: 1, maximum: MAX_TIMEOUT_SECONDS });
    assert.deepEqual(spec.failurePolicy, { type: 'string', enum: FAILURE_POLICIES });
    assert.deepEqual(spec.mode, { type: 'string', enum: MODES });
    assert.deepEqual(spec.sideEffects, { type: 'string', enum: SIDE_EFFECTS });
    assert.deepEqual(spec.reinvocationPolicy, { type: 'string', enum: REINVOCATION_POLICIES });
  });

  describe('declarations', () => {
    interface ListSchema {
      type: string;
      description?: string;
      maxItems: number;
      items: { type: string; maxLength: number; pattern: string };
    }

    /** What the gateway says of an AdmissionProvider declaring `field: [item]`: accepted, or the message. */
    function gateway(field: 'supplies' | 'dependsOn', item: string): string {
      const { error } = resolveProvider(
        {
          apiVersion: 'admissiongateway.io/v1alpha1',
          kind: 'AdmissionProvider',
          metadata: { name: 'p' },
          spec: { url: 'https://p.example/', [field]: [item] },
        },
        new Set(),
      );
      return error ? error.message : 'accepted';
    }

    const ITEMS = [
      '/metadata/labels/team',
      '/spec/containers/*/resources',
      '/metadata/annotations/admissiongateway.io~1owner',
      '/a~0b',
      '/a~2',
      '/a~',
      '/',
      '//',
      'metadata/labels',
      '',
      'default-labels',
      'Default-labels',
      'default-labels-',
      '-default-labels',
      'a'.repeat(63),
      'a'.repeat(64),
      'scan.scanner',
      `/${'a'.repeat(MAX_DECLARED_PATH_CHARS - 1)}`,
    ];

    for (const field of ['supplies', 'dependsOn'] as const) {
      it(`${field}: the schema has the gateway's bounds, and its pattern accepts what the gateway accepts`, () => {
        const schema = crdSpec()[field] as ListSchema;
        const { description, ...bounds } = schema;
        assert.ok(description, 'described for kubectl explain');
        assert.deepEqual(bounds, {
          type: 'array',
          maxItems: MAX_DECLARED_PATHS,
          items: { type: 'string', maxLength: MAX_DECLARED_PATH_CHARS, pattern: schema.items.pattern },
        });
        const pattern = new RegExp(schema.items.pattern);
        const verdicts = ITEMS.map((item) => [item, gateway(field, item) === 'accepted']);
        assert.deepEqual(
          ITEMS.map((item) => [item, pattern.test(item)]),
          verdicts,
        );
        // Both say yes to some and no to others, so the comparison above compares something.
        assert.deepEqual(new Set(verdicts.map(([, accepted]) => accepted)), new Set([true, false]));
      });
    }

    it('are bounded as the schema says', () => {
      assert.equal(gateway('supplies', `/${'a'.repeat(MAX_DECLARED_PATH_CHARS - 1)}`), 'accepted');
      assert.equal(
        gateway('supplies', `/${'a'.repeat(MAX_DECLARED_PATH_CHARS)}`),
        `spec.supplies[0]: expected at most ${MAX_DECLARED_PATH_CHARS} characters`,
      );
      const { error } = resolveProvider(
        {
          apiVersion: 'admissiongateway.io/v1alpha1',
          kind: 'AdmissionProvider',
          metadata: { name: 'p' },
          spec: {
            url: 'https://p.example/',
            dependsOn: Array.from({ length: MAX_DECLARED_PATHS + 1 }, (_, i) => `/metadata/labels/l${i}`),
          },
        },
        new Set(),
      );
      assert.equal(
        error?.message,
        `spec.dependsOn: expected at most ${MAX_DECLARED_PATHS} entries, got ${MAX_DECLARED_PATHS + 1}`,
      );
    });
  });
});
