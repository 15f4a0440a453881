/**
 * evaluate(): runs a compiled expression against one review's values within its cost budget. It never throws:
 * a missing key, a division by zero, a failed conversion and an exhausted budget are all results the caller
 * reports (under the step's failurePolicy), with the position in the expression where the engine knows it.
 */
import type { CelProgram } from './compile.js';
import { type CostBudget, metered } from './cost.js';
import { DECLARATIONS, PolicyVariables } from './environment.js';
import { type Position, positionAt } from './position.js';
import { CelValueError, toCel } from './values.js';

/** The values an expression reads, already made CEL values (activation()). */
export type Activation = Readonly<Record<string, unknown>>;

export type EvalResult =
  | { readonly ok: true; readonly value: unknown; readonly cost: number }
  | {
      readonly ok: false;
      /** cost_exceeded: the expression's or the review's budget ran out; error: anything else. */
      readonly reason: 'cost_exceeded' | 'error';
      /** The engine's or library's code: no_such_key, division_by_zero, no_such_overload, cost_exceeded, ... */
      readonly code: string;
      readonly message: string;
      readonly position?: Position;
      readonly cost: number;
    };

/**
 * A review's values as an expression reads them, made once per review and shared by all its expressions:
 * integral numbers become ints (values.ts); one not given is null (a DELETE has no object, a CREATE no
 * oldObject). Throws CelValueError for an object nested past MAX_VALUE_DEPTH.
 */
export function activation(values: {
  object?: unknown;
  oldObject?: unknown;
  request?: unknown;
  params?: unknown;
  namespaceObject?: unknown;
}): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of DECLARATIONS) out[name] = toCel(values[name] ?? null);
  return out;
}

interface EngineError {
  readonly code?: unknown;
  readonly message?: unknown;
  readonly summary?: unknown;
  readonly range?: { readonly start: number };
}

function describe(program: CelProgram, error: unknown, cost: number): EvalResult {
  if (typeof error === 'object' && error !== null) {
    const e = error as EngineError;
    const text =
      typeof e.summary === 'string' ? e.summary : typeof e.message === 'string' ? e.message : 'unknown error';
    return {
      ok: false,
      reason: 'error',
      code: typeof e.code === 'string' ? e.code : error instanceof CelValueError ? 'invalid_value' : 'internal_error',
      message: text.split('\n')[0] ?? text,
      position: e.range
        ? positionAt(program.expression, program.originOf?.(e.range.start) ?? e.range.start)
        : undefined,
      cost,
    };
  }
  return { ok: false, reason: 'error', code: 'internal_error', message: String(error), cost };
}

/** Runs `program` against `values`, spending from `budget` (one per review: createCostBudget()). */
export function evaluate(program: CelProgram, values: Activation, budget: CostBudget): EvalResult {
  if (budget.remaining <= 0)
    return {
      ok: false,
      reason: 'cost_exceeded',
      code: 'cost_exceeded',
      message: "the review's CEL cost budget is spent",
      cost: 0,
    };
  const limit = Math.min(budget.perExpression, budget.remaining);
  const run = metered(limit, () => program.run(values));
  if (!run.nested) budget.remaining -= run.cost;
  if (run.exceeded) {
    const whose =
      limit === budget.perExpression
        ? `its cost limit of ${budget.perExpression}`
        : `what was left of the review's CEL cost budget (${limit})`;
    return {
      ok: false,
      reason: 'cost_exceeded',
      code: 'cost_exceeded',
      message: `the expression exceeded ${whose}`,
      cost: run.cost,
    };
  }
  if (!run.outcome.ok) return describe(program, run.outcome.error, run.cost);
  const value = run.outcome.value;
  if (value instanceof Promise) {
    // Nothing registered is asynchronous; a promise would be a defect, and must not dangle unobserved.
    value.catch(() => undefined);
    return {
      ok: false,
      reason: 'error',
      code: 'internal_error',
      message: 'the expression did not finish synchronously',
      cost: run.cost,
    };
  }
  return { ok: true, value, cost: run.cost };
}

/**
 * A policy's `variables`, each evaluated when an expression first reads it and then kept for the review (as the
 * apiserver does). A variable that fails makes every expression reading it fail the same way.
 */
export function lazyVariables(
  programs: ReadonlyMap<string, CelProgram>,
  values: () => Activation,
  budget: CostBudget,
): PolicyVariables {
  const vars = new PolicyVariables();
  for (const [name, program] of programs) {
    let result: EvalResult | undefined;
    Object.defineProperty(vars, name, {
      enumerable: true,
      get() {
        result ??= evaluate(program, values(), budget);
        if (result.ok) return result.value;
        throw new VariableError(name, result);
      },
    });
  }
  return vars;
}

/** Thrown into the engine by a variable that failed, so that the expression reading it fails with its reason. */
export class VariableError extends Error {
  override readonly name = 'VariableError';
  readonly code: string;
  constructor(
    readonly variable: string,
    readonly result: Extract<EvalResult, { ok: false }>,
  ) {
    super(`variables.${variable}: ${result.message}`);
    this.code = result.code;
  }
}
