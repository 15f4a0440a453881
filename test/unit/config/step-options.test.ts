/**
 * A step's options are written once in the code (server/config/step-options.ts); the operator's documents and
 * the AdmissionProvider schema say the same, and every source of a step resolves them the same way.
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

    interface Schema {
      spec: {
        versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, object> } } } } }[];
      };
    }
    const crd = parse(read('manifests/crd-admissionprovider.yaml')) as Schema;
    const spec = crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties;
    assert.deepEqual(spec.timeoutSeconds, { type: 'integer', minimum: 1, maximum: MAX_TIMEOUT_SECONDS });
    assert.deepEqual(spec.failurePolicy, { type: 'string', enum: FAILURE_POLICIES });
    assert.deepEqual(spec.mode, { type: 'string', enum: MODES });
    assert.deepEqual(spec.sideEffects, { type: 'string', enum: SIDE_EFFECTS });
    assert.deepEqual(spec.reinvocationPolicy, { type: 'string', enum: REINVOCATION_POLICIES });
  });
});
