import assert from 'node:assert/strict';
import {
  activation,
  compile,
  createCostBudget,
  evaluate,
  lazyVariables,
  toCel,
  toJson,
  MAX_VALUE_DEPTH,
  CelValueError,
  type CelProgram,
} from '../../../server/cel/index.js';
import { failure, value } from './run-cel.js';

const program = (expression: string, variables?: string[]): CelProgram => {
  const compiled = compile(expression, { variables });
  assert.ok(compiled.ok, compiled.ok ? '' : compiled.error.message);
  return compiled.program;
};

describe('cel evaluate()', () => {
  it('reads integral JSON numbers as ints, as the apiserver does: integer division, int comparison', () => {
    const object = { spec: { replicas: 3, ratio: 0.5 }, metadata: { generation: 2 } };
    assert.equal(value('object.spec.replicas / 2', { object }), 1n);
    assert.equal(value('object.spec.replicas % 2 == 1', { object }), true);
    assert.equal(value('type(object.spec.replicas) == int', { object }), true);
    assert.equal(value('type(object.spec.ratio) == double', { object }), true);
    assert.equal(value('object.spec.replicas > object.spec.ratio', { object }), true);
  });

  it('reports a missing key, a division by zero and an overflow as results, with the position', () => {
    const missing = failure('object.spec.missing.name', { object: { spec: {} } });
    assert.equal(missing.reason, 'error');
    assert.equal(missing.code, 'no_such_key');
    assert.equal(missing.position?.column, 13, 'at .missing');
    assert.equal(failure('object.spec.replicas / 0', { object: { spec: { replicas: 1 } } }).code, 'division_by_zero');
    assert.equal(failure('9223372036854775807 + object.one', { object: { one: 1 } }).code, 'numeric_overflow');
    assert.equal(failure("int('x')").reason, 'error');
  });

  it('gives null for a missing object (a DELETE has no object)', () => {
    assert.equal(
      value('object == null && oldObject.metadata.name == "web"', { oldObject: { metadata: { name: 'web' } } }),
      true,
    );
  });

  it("evaluates a policy's variables lazily, once a review, and fails the expressions that read a failing one", () => {
    const values = activation({ object: { spec: { containers: [{ name: 'a' }, { name: 'b' }] } } });
    const budget = createCostBudget();
    let reads = 0;
    const containers = program('object.spec.containers');
    const broken = program('object.spec.missing');
    const counted: CelProgram = { ...containers, run: (a) => (reads++, containers.run(a)) };
    const variables = lazyVariables(
      new Map([
        ['containers', counted],
        ['broken', broken],
      ]),
      () => values,
      budget,
    );
    const withVariables = { ...values, variables };
    const size = evaluate(program('variables.containers.size()', ['containers', 'broken']), withVariables, budget);
    assert.deepEqual(size.ok && size.value, 2n);
    const names = evaluate(
      program('variables.containers.map(c, c.name)', ['containers', 'broken']),
      withVariables,
      budget,
    );
    assert.deepEqual(names.ok && names.value, ['a', 'b']);
    assert.equal(reads, 1);
    const viaBroken = evaluate(program('size(variables.broken) > 0', ['containers', 'broken']), withVariables, budget);
    assert.ok(!viaBroken.ok);
    assert.equal(viaBroken.code, 'no_such_key');
    assert.match(viaBroken.message, /variables\.broken: No such key: missing/);
  });
});

describe('cel evaluate() and stack traces', () => {
  it("leaves Error.stackTraceLimit as it found it, after a result, a failure and a variable's failure", () => {
    const before = Error.stackTraceLimit;
    Error.stackTraceLimit = 7;
    try {
      failure('object.spec.containers.exists(c, c.missing == 1)', { object: { spec: { containers: [{}, {}] } } });
      value('1 + 1');
      const values = activation({ object: {} });
      const budget = createCostBudget();
      const variables = lazyVariables(new Map([['broken', program('object.missing')]]), () => values, budget);
      evaluate(program('variables.broken == 1', ['broken']), { ...values, variables }, budget);
      assert.equal(Error.stackTraceLimit, 7);
    } finally {
      Error.stackTraceLimit = before;
    }
  });
});

describe('cel values', () => {
  it('copies only what holds a number, and keeps "__proto__" a key', () => {
    const labels = { app: 'web' };
    const object = JSON.parse('{"metadata":{"labels":{"app":"web"}},"spec":{"replicas":2},"__proto__":{"x":1}}') as {
      metadata: { labels: object };
    };
    object.metadata.labels = labels;
    const converted = toCel(object) as Record<string, { labels?: unknown; replicas?: unknown }>;
    assert.equal(converted.metadata?.labels, labels, 'no number below: shared');
    assert.equal(converted.spec?.replicas, 2n);
    assert.equal(Object.getPrototypeOf(converted), Object.prototype);
    assert.ok(Object.hasOwn(converted, '__proto__'));
    assert.equal(value('object["__proto__"].x', { object: JSON.parse('{"__proto__":{"x":1}}') }), 1n);
  });

  it('refuses a value nested deeper than MAX_VALUE_DEPTH', () => {
    let deep: unknown = 1;
    for (let i = 0; i < MAX_VALUE_DEPTH + 1; i++) deep = [deep];
    assert.throws(() => toCel(deep), CelValueError);
  });

  it('turns results back into JSON', () => {
    assert.deepEqual(toJson(value("{'a': [1, 2], 'b': [3]}")), { a: [1, 2], b: [3] });
    assert.deepEqual(toJson(value('[2.5, 1e300]')), [2.5, 1e300]);
    assert.deepEqual(toJson(value("[optional.of('x'), optional.none()]")), ['x', null]);
    assert.equal(toJson(value('9223372036854775807')), '9223372036854775807');
    assert.equal(toJson(value("b'hi'")), 'aGk=');
    assert.equal(toJson(value("ip('::1')")), '::1');
  });
});
