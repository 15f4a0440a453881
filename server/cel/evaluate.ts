/**
 * evaluate(): runs a compiled expression against one review's values within its cost budget. It never throws:
 * a missing key, a division by zero, a failed conversion and an exhausted budget are all results the caller
 * reports (under the step's failurePolicy), with the position in the expression where the engine knows it.
 */
import type { CelProgram } from './compile.js';
import { type CostBudget, endMeter, meterUnderWay, startMeter, timeAllowedMs } from './cost.js';
import { DECLARATIONS, type Declaration, PolicyVariables } from './environment.js';
import { type Position, positionAt } from './position.js';
import { CelValueError, toCel } from './values.js';

/** The values an expression reads, already made CEL values (activation()). */
export type Activation = Readonly<Record<string, unknown>>;

export type EvalResult =
  | { readonly ok: true; readonly value: unknown; readonly cost: number }
  | {
      readonly ok: false;
      /** cost_exceeded: the expression's or the review's budget (of units or of time) ran out; error: anything else. */
      readonly reason: 'cost_exceeded' | 'error';
      /** The engine's or library's code: no_such_key, division_by_zero, no_such_overload, cost_exceeded, ... */
      readonly code: string;
      readonly message: string;
      readonly position?: Position;
      readonly cost: number;
    };

type ActivationInput = Partial<Record<Declaration, unknown>>;

/**
 * A review's values as an expression reads them, made once per review and shared by all its expressions:
 * integral numbers become ints (values.ts); one not given is null (a DELETE has no object, a CREATE no
 * oldObject). Throws CelValueError for an object nested past MAX_VALUE_DEPTH.
 */
export function activation(input: ActivationInput): Activation {
  const out: Record<string, unknown> = {};
  for (const name of DECLARATIONS) out[name] = toCel(input[name] ?? null);
  return out;
}

/**
 * `values` and a policy's `variables` (lazyVariables()): a copy with own fields (the engine reads a prototype's
 * slower), of the declarations activation() makes.
 */
export function withVariables(values: Activation, variables: PolicyVariables): Activation {
  // A literal of one shape, not a spread (which copies slower, and whose result's shape varies).
  return {
    object: values.object,
    oldObject: values.oldObject,
    request: values.request,
    params: values.params,
    namespaceObject: values.namespaceObject,
    variables,
  };
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
  if (budget.remaining <= 0 || budget.millisecondsLeft <= 0)
    return {
      ok: false,
      reason: 'cost_exceeded',
      code: 'cost_exceeded',
      message: `the review's CEL ${budget.remaining <= 0 ? 'cost budget' : 'time'} is spent`,
      cost: 0,
    };
  const limit = Math.min(budget.perExpression, budget.remaining);
  // No closure or result object per run: this is every expression of every review.
  const outer = meterUnderWay();
  const started = outer === undefined ? budget.clock() : 0;
  const allowedMs = Math.min(timeAllowedMs(limit), budget.millisecondsLeft);
  const meter = outer ?? startMeter(limit, started + allowedMs, budget.clock);
  const before = meter.remaining;
  let value: unknown;
  let error: unknown;
  let threw = false;
  // The engine makes an Error for every missing key or bad operand, and all() and exists() absorb one per
  // element: capturing a stack trace for each would make an expression failing on every element of a long list
  // many times slower than its cost limit allows for. Nobody reads those stacks (describe() keeps the message).
  const stackTraceLimit = Error.stackTraceLimit;
  if (outer === undefined) Error.stackTraceLimit = 0;
  try {
    value = program.run(values);
  } catch (err) {
    threw = true;
    error = err;
  } finally {
    if (outer === undefined) {
      endMeter();
      Error.stackTraceLimit = stackTraceLimit;
    }
  }
  const cost = Math.max(0, before - Math.max(meter.remaining, 0));
  if (outer === undefined) {
    budget.remaining -= cost;
    budget.millisecondsLeft -= budget.clock() - started;
  }
  if (meter.exceeded) {
    const whose = meter.timedOut
      ? allowedMs === timeAllowedMs(limit)
        ? `the ${allowedMs} ms its cost limit allows (it had spent ${cost} units)`
        : `what was left of the review's CEL time (${Math.round(allowedMs)} ms)`
      : limit === budget.perExpression
        ? `its cost limit of ${budget.perExpression}`
        : `what was left of the review's CEL cost budget (${limit})`;
    return {
      ok: false,
      reason: 'cost_exceeded',
      code: 'cost_exceeded',
      message: `the expression exceeded ${whose}`,
      cost,
    };
  }
  if (threw) return describe(program, error, cost);
  if (value instanceof Promise) {
    // Nothing registered is asynchronous; a promise would be a defect, and must not dangle unobserved.
    value.catch(() => undefined);
    return {
      ok: false,
      reason: 'error',
      code: 'internal_error',
      message: 'the expression did not finish synchronously',
      cost,
    };
  }
  return { ok: true, value, cost };
}

const STATE = Symbol('variables');

/** The variables of one policy, in order: made once per set of programs, shared by all its reviews. */
interface Layout {
  readonly names: readonly string[];
  readonly programs: readonly CelProgram[];
  /** A PolicyVariables with a getter per name (the engine reads a field as `obj[name]`, prototype included). */
  readonly proto: PolicyVariables;
}

/** One review's variables: what each came to, once read. */
interface VariablesState {
  readonly layout: Layout;
  readonly results: Array<EvalResult | undefined>;
  readonly values: () => Activation;
  readonly budget: CostBudget;
}

type StatefulVariables = PolicyVariables & { [STATE]: VariablesState };

const layouts = new WeakMap<ReadonlyMap<string, CelProgram>, Layout>();

function read(state: VariablesState, i: number): unknown {
  let result = state.results[i];
  if (result === undefined)
    result = state.results[i] = evaluate(state.layout.programs[i]!, state.values(), state.budget);
  if (result.ok) return result.value;
  throw new VariableError(state.layout.names[i]!, result);
}

function layoutOf(programs: ReadonlyMap<string, CelProgram>): Layout {
  let layout = layouts.get(programs);
  if (layout !== undefined) return layout;
  const names = [...programs.keys()];
  const proto = Object.create(PolicyVariables.prototype) as PolicyVariables;
  names.forEach((name, i) =>
    Object.defineProperty(proto, name, {
      enumerable: true,
      get(this: StatefulVariables) {
        return read(this[STATE], i);
      },
    }),
  );
  layout = { names, programs: [...programs.values()], proto };
  layouts.set(programs, layout);
  return layout;
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
  const layout = layoutOf(programs);
  const vars = Object.create(layout.proto) as StatefulVariables;
  vars[STATE] = { layout, results: new Array<EvalResult | undefined>(layout.names.length), values, budget };
  return vars;
}

/** What each of the variables read so far came to, by name (for a decision trace: nothing is evaluated). */
export function evaluatedVariables(variables: PolicyVariables): ReadonlyMap<string, EvalResult> {
  const state = (variables as Partial<StatefulVariables>)[STATE];
  const out = new Map<string, EvalResult>();
  state?.results.forEach((result, i) => {
    if (result !== undefined) out.set(state.layout.names[i]!, result);
  });
  return out;
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
