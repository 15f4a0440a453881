/** Compiles and evaluates an expression against a review's values: the value, or an AssertionError saying why not. */
import assert from 'node:assert/strict';
import {
  activation,
  compile,
  createCostBudget,
  evaluate,
  type CompileOptions,
  type CompileResult,
  type EvalResult,
} from '../../../server/cel/index.js';

export interface Values {
  object?: unknown;
  oldObject?: unknown;
  request?: unknown;
  params?: unknown;
  namespaceObject?: unknown;
}

/** The result of `expression` (which must compile) on `values`. */
export function run(expression: string, values: Values = {}, options?: CompileOptions): EvalResult {
  const compiled = compile(expression, options);
  assert.ok(compiled.ok, `${expression}: ${compiled.ok ? '' : compiled.error.message}`);
  return evaluate(compiled.program, activation(values), createCostBudget());
}

/** The value of `expression`, which must compile and evaluate. */
export function value(expression: string, values: Values = {}): unknown {
  const result = run(expression, values);
  assert.ok(result.ok, `${expression}: ${result.ok ? '' : `${result.code}: ${result.message}`}`);
  return result.value;
}

/** The evaluation error of `expression`, which must compile and fail. */
export function failure(expression: string, values: Values = {}): Extract<EvalResult, { ok: false }> {
  const result = run(expression, values);
  assert.ok(!result.ok, `${expression} evaluated to ${String(result.ok && result.value)}`);
  return result;
}

/** The compile error of `expression`, which must not compile. */
export function compileError(
  expression: string,
  options?: CompileOptions,
): Extract<CompileResult, { ok: false }>['error'] {
  const compiled = compile(expression, options);
  assert.ok(!compiled.ok, `${expression} compiled`);
  return compiled.error;
}

/** Each `[expression, expected]` evaluates to its value (deep equality). */
export function expectValues(cases: ReadonlyArray<readonly [string, unknown]>, values: Values = {}): void {
  for (const [expression, expected] of cases) assert.deepEqual(value(expression, values), expected, expression);
}
