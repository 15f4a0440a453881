/**
 * The cost budget: counted as cel-go counts it, per expression and per review, and enforced even where the
 * engine would swallow an error (a `||` with a true side, an `all()` with a false element). These tests are
 * also what fails if an upgrade of the engine moves the fields instrument.ts hooks into: every cost below
 * would then read 0 or the limits would not cut.
 */
import assert from 'node:assert/strict';
import {
  activation,
  compile,
  createCostBudget,
  evaluate,
  PER_EXPRESSION_COST_LIMIT,
  PER_REVIEW_COST_LIMIT,
  type CelProgram,
  type CostBudget,
  type EvalResult,
} from '../../../server/cel/index.js';

const program = (expression: string): CelProgram => {
  const compiled = compile(expression);
  assert.ok(compiled.ok, compiled.ok ? '' : compiled.error.message);
  return compiled.program;
};

const evaluateOn = (expression: string, object: unknown, budget: CostBudget = createCostBudget()): EvalResult =>
  evaluate(program(expression), activation({ object }), budget);

const costOf = (expression: string, object: unknown = {}): number => {
  const result = evaluateOn(expression, object);
  assert.ok(result.ok, result.ok ? '' : result.message);
  return result.cost;
};

const podWith = (containers: number): unknown => ({
  spec: { containers: Array.from({ length: containers }, (_, i) => ({ name: `c${i}`, image: 'nginx:1.25.3' })) },
});

const QUADRATIC = "object.spec.containers.all(c, !object.spec.containers.exists(d, d.name == c.name + 'x'))";

describe('cel cost', () => {
  it("charges cel-go's units: 1 a variable or field read, nothing a constant, 10 a list literal, 30 a map literal", () => {
    assert.equal(costOf('object.a', { a: 1 }), 2);
    assert.equal(costOf('object.a == 1', { a: 1 }), 3);
    assert.equal(costOf('true'), 0);
    assert.equal(costOf('[object.a, object.a]', { a: 1 }), 14);
    assert.equal(costOf("{'a': object.a}", { a: 1 }), 32);
    assert.equal(costOf('[1, 2, 3]'), 1, 'a literal of constants (folded by cel-go)');
  });

  it('charges a comprehension per element, so a walk costs in proportion to the list', () => {
    const walk = 'object.spec.containers.all(c, c.name != "")';
    const perElement = (costOf(walk, podWith(20)) - costOf(walk, podWith(10))) / 10;
    assert.ok(perElement >= 3, `${perElement} per element`);
    assert.equal(costOf(walk, podWith(30)) - costOf(walk, podWith(20)), perElement * 10);
  });

  it('charges a traversal of strings and lists by their size', () => {
    const long = { s: 'x'.repeat(10_000) };
    assert.ok(costOf('object.s.contains("y")', long) >= 1000);
    assert.ok(costOf('object.s == object.s', long) >= 1000);
    const list = { l: Array.from({ length: 1000 }, (_, i) => i) };
    assert.ok(costOf('999 in object.l', list) >= 1000);
  });

  it('cuts off an expression that walks a 40,000-container Pod quadratically, at the per-expression limit', () => {
    // A clock that stands still: this is the cut for units, whatever the machine's speed.
    const budget = createCostBudget({ clock: () => 0 });
    const result = evaluateOn(QUADRATIC, podWith(40_000), budget);
    assert.ok(!result.ok);
    assert.equal(result.reason, 'cost_exceeded');
    assert.equal(result.code, 'cost_exceeded');
    assert.equal(result.cost, budget.perExpression);
    assert.match(result.message, /exceeded its cost limit/);
  });

  it('lets the same walk pass on an ordinary Pod, and a linear walk pass on the 40,000-container Pod', () => {
    const small = evaluateOn(QUADRATIC, podWith(2));
    assert.deepEqual(small.ok && small.value, true);
    const linear = evaluateOn(
      'object.spec.containers.all(c, !c.?securityContext.?privileged.orValue(false))',
      podWith(40_000),
    );
    assert.deepEqual(linear.ok && linear.value, true);
  });

  it('is not swallowed by a `||` whose other side is true, nor by an all() with a false element', () => {
    const big = podWith(40_000);
    assert.equal((evaluateOn(`(${QUADRATIC}) || true`, big) as { reason?: string }).reason, 'cost_exceeded');
    assert.equal((evaluateOn(`true || (${QUADRATIC})`, big) as { ok: boolean }).ok, true, 'short-circuited first');
    const falseAfter = `[1, 2].all(i, i == 2 ? false : ${QUADRATIC})`;
    assert.equal((evaluateOn(falseAfter, big) as { reason?: string }).reason, 'cost_exceeded');
  });

  it("stops the review's expressions once the review's budget is spent", () => {
    const budget = createCostBudget({ perExpression: 1_000, perReview: 1_800, clock: () => 0 });
    const walk = program('object.spec.containers.all(c, c.name != "")');
    const values = activation({ object: podWith(200) });
    const first = evaluate(walk, values, budget);
    const second = evaluate(walk, values, budget);
    assert.ok(first.ok && second.ok);
    const third = evaluate(walk, values, budget);
    assert.ok(!third.ok);
    assert.equal(third.reason, 'cost_exceeded');
    assert.match(third.message, /what was left of the review's CEL cost budget/);
    const fourth = evaluate(program('true'), values, budget);
    assert.ok(!fourth.ok);
    assert.match(fourth.message, /budget is spent/);
  });

  it('cuts off an expression whose units are cheap but whose work is not, when its time is up', () => {
    // The engine throws and catches an Error for each container: 5 units, far more than 5 units' time.
    const failing = 'object.spec.containers.all(c, int(c.name) > 0 || true)';
    const stillClock = evaluateOn(failing, podWith(40_000), createCostBudget({ clock: () => 0 }));
    assert.deepEqual(stillClock, { ok: true, value: true, cost: 200_003 });

    let now = 0;
    const budget = createCostBudget({ clock: () => (now += 50) });
    const result = evaluateOn(failing, podWith(40_000), budget);
    assert.ok(!result.ok);
    assert.equal(result.reason, 'cost_exceeded');
    assert.match(
      result.message,
      /^the expression exceeded the 500 ms its cost limit allows \(it had spent \d+ units\)$/,
    );
    assert.ok(result.cost < 20_000, `cut within the clock's first looks, not after ${result.cost} units`);
    assert.equal(budget.remaining, PER_REVIEW_COST_LIMIT - result.cost, 'what it spent is spent');
  });

  it("stops the review's expressions once the review's time is spent, each evaluation's time counted", () => {
    let now = 0;
    const budget = createCostBudget({ clock: () => (now += 150) }); // 150 ms from an evaluation's start to its end
    const cheap = program('object.a == 1');
    const values = activation({ object: { a: 1 } });
    for (let i = 0; i < 16; i++) assert.deepEqual(evaluate(cheap, values, budget), { ok: true, value: true, cost: 3 });
    assert.equal(budget.millisecondsLeft, 100);
    const spent = evaluate(cheap, values, budget);
    assert.ok(spent.ok, 'what is left is checked on the clock only every so many units');
    const refused = evaluate(cheap, values, budget);
    assert.deepEqual(refused, {
      ok: false,
      reason: 'cost_exceeded',
      code: 'cost_exceeded',
      message: "the review's CEL time is spent",
      cost: 0,
    });
  });

  it('charges functions whose result can outgrow their input before they build it', () => {
    const budget = (): CostBudget => createCostBudget({ perExpression: 100_000 });
    const range = evaluateOn('lists.range(1000000000000).size()', {}, budget());
    assert.equal(!range.ok && range.reason, 'cost_exceeded');
    const replace = evaluateOn("object.s.replace('', object.s)", { s: 'x'.repeat(100_000) }, budget());
    assert.equal(!replace.ok && replace.reason, 'cost_exceeded');
    const sets = evaluateOn(
      'sets.contains(object.l, object.l)',
      { l: Array.from({ length: 2_000 }, (_, i) => i) },
      budget(),
    );
    assert.equal(!sets.ok && sets.reason, 'cost_exceeded');
  });

  it("has the apiserver's per-expression limit, and half its per-binding budget for a review", () => {
    assert.equal(PER_EXPRESSION_COST_LIMIT, 1_000_000);
    assert.equal(PER_REVIEW_COST_LIMIT, 5_000_000);
    const { clock, ...limits } = createCostBudget();
    assert.deepEqual(limits, {
      remaining: PER_REVIEW_COST_LIMIT,
      perExpression: PER_EXPRESSION_COST_LIMIT,
      millisecondsLeft: 2_500,
    });
    assert.equal(typeof clock(), 'number');
  });
});
