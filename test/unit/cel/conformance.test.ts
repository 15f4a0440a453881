/**
 * The cel-spec conformance suite (from @bufbuild/cel-spec, which packages cel-spec's test data) on the engine as
 * this gateway runs it: its libraries registered, every expression instrumented and evaluated inside the cost
 * meter. The sections of CEL that the engine implements run; the rest are listed in SKIPPED_SECTIONS with why,
 * and the tests of a run section that fail are listed in KNOWN_FAILURES with why, so that a change in either
 * direction (a new failure, or a listed one passing) fails this test and the lists stay true.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Value } from '@bufbuild/cel-spec/cel/expr/value_pb.js';
import {
  getConformanceSuite,
  type IncrementalTest,
  type IncrementalTestSuite,
} from '@bufbuild/cel-spec/testdata/tests.js';
import { metered } from '../../../server/cel/cost.js';
import { newEnvironment, OVERRIDES } from '../../../server/cel/environment.js';
import { instrument } from '../../../server/cel/instrument.js';

/** Sections not run, and why. */
const SKIPPED_SECTIONS: Readonly<Record<string, string>> = {
  dynamic: 'protobuf messages, wrappers, Any and Struct: Kubernetes objects are JSON, and the engine has no protobuf',
  enums: 'protobuf enums',
  proto2: 'protobuf messages',
  proto2_ext: 'protobuf extensions',
  proto3: 'protobuf messages',
  wrappers: 'protobuf wrapper types',
  namespace: 'containers (qualified names resolved in a protobuf package): not used by Kubernetes',
  unknowns: 'partial evaluation with unknowns: not used by Kubernetes',
  type_deductions: 'checked types of protobuf-typed expressions',
  macros2: 'two-variable comprehensions: the engine has none (refused at compile time: unavailable.ts)',
  math_ext: 'cel-go math extension: not in the apiserver',
  encoders_ext: 'cel-go encoders extension: not in the apiserver',
  bindings_ext: 'covered by macros (cel.bind); its other tests need cel.@block',
  block_ext: 'cel.@block, an optimizer form: not in the apiserver',
};

/** Tests of run sections that fail, by section/suite/name, and why (a JSON file: there are many). */
const KNOWN_FAILURES = JSON.parse(
  readFileSync(fileURLToPath(new URL('./conformance-known-failures.json', import.meta.url)), 'utf8'),
) as Readonly<Record<string, string>>;

function* testsOf(suite: IncrementalTestSuite, path: string): Generator<[string, IncrementalTest]> {
  for (const test of suite.tests) yield [`${path}/${test.name}`, test];
  for (const child of suite.suites) yield* testsOf(child, `${path}/${child.name}`);
}

/** Why a test of a run section cannot run here (it needs protobuf), or undefined. */
function unsupported(test: IncrementalTest): string | undefined {
  const t = test.original;
  if (t.container !== '') return 'container';
  if (t.checkOnly) return 'check only';
  if (t.typeEnv.some((d) => d.declKind.case === 'ident' && d.declKind.value.type?.typeKind.case === 'messageType'))
    return 'message-typed variable';
  const json = JSON.stringify(t, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  if (/"(objectValue|enumValue)"/.test(json)) return 'protobuf value';
  if (t.resultMatcher.case === 'unknown' || t.resultMatcher.case === 'anyUnknowns') return 'unknowns';
  if (t.resultMatcher.case === 'typedResult') return 'typed result';
  return undefined;
}

/** A cel-spec Value as the engine gives it. */
function fromValue(v: Value): unknown {
  const k = v.kind;
  switch (k.case) {
    case 'nullValue':
      return null;
    case 'boolValue':
    case 'stringValue':
    case 'doubleValue':
    case 'int64Value':
      return k.value;
    case 'uint64Value':
      return { uint: k.value };
    case 'bytesValue':
      return k.value;
    case 'listValue':
      return k.value.values.map(fromValue);
    case 'mapValue':
      return new Map(
        k.value.entries.map((e) => [e.key ? fromValue(e.key) : null, e.value ? fromValue(e.value) : null]),
      );
    case 'typeValue':
      return { type: k.value };
    default:
      throw new Error(`unsupported value ${k.case ?? 'none'}`);
  }
}

/** Whether the engine's `actual` is the expected value (NaN equals NaN here). */
function same(actual: unknown, expected: unknown): boolean {
  if (expected === null) return actual === null;
  if (typeof expected === 'number')
    return typeof actual === 'number' && (Object.is(actual, expected) || actual === expected);
  if (typeof expected !== 'object') return actual === expected;
  if (expected instanceof Uint8Array)
    return actual instanceof Uint8Array && Buffer.compare(Buffer.from(actual), Buffer.from(expected)) === 0;
  if (Array.isArray(expected))
    return Array.isArray(actual) && actual.length === expected.length && expected.every((v, i) => same(actual[i], v));
  if ('uint' in expected)
    return typeof actual === 'object' && actual !== null && (actual.valueOf() as unknown) === expected.uint;
  if ('type' in expected) {
    // The engine's type values print as Type<name>.
    const name =
      typeof actual === 'object' && actual !== null
        ? (actual as { toString(): string }).toString().replace(/^Type<(.*)>$/, '$1')
        : undefined;
    return name === String(expected.type);
  }
  if (expected instanceof Map) {
    const entries: [unknown, unknown][] =
      actual instanceof Map
        ? [...(actual as Map<unknown, unknown>)]
        : typeof actual === 'object' && actual !== null
          ? Object.entries(actual)
          : [];
    if (entries.length !== expected.size) return false;
    return [...(expected as Map<unknown, unknown>)].every(([ek, ev]) =>
      entries.some(([ak, av]) => (same(ak, ek) || String(ak) === String(ek)) && same(av, ev)),
    );
  }
  return false;
}

/** Runs one test: undefined when it passes, what went wrong otherwise. */
function runTest(test: IncrementalTest, homogeneous: boolean): string | undefined {
  const t = test.original;
  const env = newEnvironment({ homogeneousAggregateLiterals: homogeneous });
  const bindings: Record<string, unknown> = {};
  for (const d of t.typeEnv) if (d.declKind.case === 'ident') env.registerVariable(d.name, 'dyn');
  for (const [name, expr] of Object.entries(t.bindings)) {
    if (expr.kind.case !== 'value') return 'binding is not a value';
    if (!t.typeEnv.some((d) => d.name === name)) env.registerVariable(name, 'dyn');
    const v = fromValue(expr.kind.value);
    bindings[name] = v instanceof Map ? Object.fromEntries(v) : v;
  }
  const expectError = t.resultMatcher.case === 'evalError' || t.resultMatcher.case === 'anyEvalErrors';
  let parsed;
  try {
    parsed = env.parse(t.expr);
  } catch (err) {
    return expectError ? undefined : `parse: ${(err as Error).message.split('\n')[0]}`;
  }
  const checked = parsed.check();
  if (!checked.valid) return expectError ? undefined : `check: ${checked.error?.message.split('\n')[0]}`;
  instrument(parsed.ast, OVERRIDES);
  const run = metered(1_000_000, () => parsed(bindings) as unknown);
  if (!run.outcome.ok || run.exceeded)
    return expectError
      ? undefined
      : `eval: ${String((run.outcome as { error?: Error }).error?.message ?? 'cost').split('\n')[0]}`;
  if (expectError) return `expected an error, got ${String(run.outcome.value)}`;
  // A test without a matcher expects true.
  if (t.resultMatcher.case === undefined)
    return run.outcome.value === true ? undefined : `got ${String(run.outcome.value)}`;
  if (t.resultMatcher.case !== 'value') return `matcher ${t.resultMatcher.case}`;
  const expected = fromValue(t.resultMatcher.value);
  return same(run.outcome.value, expected) ? undefined : `got ${String(run.outcome.value)}`;
}

describe('cel-spec conformance', function () {
  this.timeout(60_000);
  const suite = getConformanceSuite();

  it('names every section it skips', () => {
    const sections = suite.suites.map((s) => s.name);
    for (const name of Object.keys(SKIPPED_SECTIONS)) assert.ok(sections.includes(name), `no section ${name}`);
  });

  for (const section of suite.suites.filter((s) => !(s.name in SKIPPED_SECTIONS))) {
    it(`passes the ${section.name} section, its known failures aside`, () => {
      const failures: string[] = [];
      const passingKnown: string[] = [];
      let ran = 0;
      for (const [name, test] of testsOf(section, section.name)) {
        if (unsupported(test)) continue;
        ran++;
        const problem = runTest(test, false);
        if (name in KNOWN_FAILURES) {
          if (problem === undefined) passingKnown.push(name);
        } else if (problem !== undefined) failures.push(`${name} [${test.original.expr}]: ${problem}`);
      }
      assert.ok(ran > 0);
      assert.deepEqual(failures, [], `${failures.length} of ${ran} failed`);
      assert.deepEqual(passingKnown, [], 'listed as failing, but passes: take it off KNOWN_FAILURES');
    });
  }
});
