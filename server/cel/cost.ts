/**
 * What an evaluation may cost, counted as the apiserver counts it (cel-go's runtime cost): every variable, field
 * or index read costs 1, a function call 1 unless its work grows with its input, then a tenth of a unit per
 * element or character it walks (`StringTraversalCostFactor`), a list literal 10, a map literal 30 (1 when all
 * their entries are constants), and each iteration of a comprehension what its body costs. An expression may
 * spend `perExpression` units (the apiserver's `PerCallLimit`) and all the expressions of one review `perReview`;
 * past either, the evaluation stops with `cost_exceeded`.
 *
 * Evaluation is synchronous, so the meter of the one under way is a module variable that the engine's wrapped
 * nodes (instrument.ts) and the library functions charge.
 *
 * Units price what cel-go does; here some work takes far longer than its units say (the engine makes, throws and
 * catches an Error for every element an all() or exists() absorbs an error from), and every other review waits
 * while one is evaluated. So an evaluation also has a time limit, what its units allow at NANOSECONDS_PER_UNIT,
 * and the review all its expressions' time (docs/decisions.md, "A time limit beside the cost limit").
 */
import { performance } from 'node:perf_hooks';

/** The apiserver's per-expression limit (`PerCallLimit` in k8s.io/apiserver/pkg/apis/cel), and ours. */
export const PER_EXPRESSION_COST_LIMIT = 1_000_000;
/**
 * What all the expressions of one review may spend. The apiserver gives each policy binding's evaluation 10,000,000
 * (`RuntimeCELCostBudget`), about a second of its CPU on one of its many threads; here every other review waits
 * while one is evaluated, so a review gets half that (docs/decisions.md).
 */
export const PER_REVIEW_COST_LIMIT = 5_000_000;
/**
 * The longest a unit may take on average before an evaluation is cut for time: a few times what the engine
 * takes for a unit of ordinary work (docs/decisions.md).
 */
export const NANOSECONDS_PER_UNIT = 500;
/** Charges between two looks at the clock: often enough to stop within milliseconds, rarely enough to cost nothing. */
const CLOCK_INTERVAL = 1024;
/** cel-go's `StringTraversalCostFactor`: a tenth of a unit per character or element walked. */
export const TRAVERSAL_FACTOR = 0.1;

/** What the expressions of one review may still spend. Make one per review, pass it to every evaluation. */
export interface CostBudget {
  /** Units left for the review. */
  remaining: number;
  /** The most one expression may spend. */
  readonly perExpression: number;
  /** Milliseconds of evaluation left for the review: what its units allow at NANOSECONDS_PER_UNIT. */
  millisecondsLeft: number;
  /** Milliseconds on a monotonic clock (performance.now; a test's own). */
  readonly clock: () => number;
}

/** The time `units` may take. */
export const timeAllowedMs = (units: number): number => (units * NANOSECONDS_PER_UNIT) / 1e6;

const monotonic = (): number => performance.now();

export function createCostBudget(
  limits: { perReview?: number; perExpression?: number; clock?: () => number } = {},
): CostBudget {
  const perReview = limits.perReview ?? PER_REVIEW_COST_LIMIT;
  return {
    remaining: perReview,
    perExpression: limits.perExpression ?? PER_EXPRESSION_COST_LIMIT,
    millisecondsLeft: timeAllowedMs(perReview),
    clock: limits.clock ?? monotonic,
  };
}

/** Thrown inside the engine when the meter runs out; evaluate() turns it into a `cost_exceeded` result. */
export class CostExceededError extends Error {
  override readonly name = 'CostExceededError';
  readonly code = 'cost_exceeded';
}

/** What one evaluation may still spend (the outermost of nested ones: see metered()). */
export interface Meter {
  remaining: number;
  exceeded: boolean;
  /** When, on `clock`, the evaluation is cut. */
  deadline: number;
  clock: () => number;
  /** Charges left before the next look at the clock. */
  ticks: number;
  /** It was cut for time, not for units. */
  timedOut: boolean;
  /** Made when first needed: an Error captures a stack trace, too slow to make for every evaluation. */
  error?: CostExceededError;
}

const exceeded = (meter: Meter): CostExceededError => (meter.error ??= new CostExceededError('cost limit exceeded'));

let current: Meter | undefined;

/** Whether the clock says the meter's time is up (once it has, every later look says so without the clock). */
function overtime(meter: Meter): boolean {
  if (!meter.timedOut) {
    meter.ticks = CLOCK_INTERVAL;
    if (meter.clock() <= meter.deadline) return false;
    meter.timedOut = true;
  }
  meter.ticks = 0;
  return true;
}

/** Spends `units` of the evaluation under way; throws CostExceededError once it has none left, or no time. */
export function charge(units: number): void {
  const meter = current;
  if (meter === undefined) return;
  if ((meter.remaining -= units) < 0 || (--meter.ticks <= 0 && overtime(meter))) {
    meter.exceeded = true;
    throw exceeded(meter);
  }
}

const outOf = (meter: Meter): boolean => meter.remaining < 0 || meter.timedOut;

/** Whether the evaluation under way has run out. */
export function exhausted(): boolean {
  return current !== undefined && outOf(current);
}

/** Throws when the evaluation under way has already run out (for code about to start costly work). */
export function checkBudget(): void {
  const meter = current;
  if (meter !== undefined && outOf(meter)) throw exceeded(meter);
}

/**
 * The one meter of the outermost evaluation: evaluations are synchronous, so one is under way at a time, and
 * reusing it makes none per evaluation.
 */
const outermost: Meter = { remaining: 0, exceeded: false, deadline: 0, clock: monotonic, ticks: 0, timedOut: false };

/** The meter under way, if an evaluation is (one starting now runs inside it: meterUnderWay() first). */
export const meterUnderWay = (): Meter | undefined => current;

/**
 * Starts an outermost evaluation with `limit` units, to be cut at `deadline` on `clock`; its meter is good until
 * the next one starts.
 */
export function startMeter(limit: number, deadline = Infinity, clock = monotonic): Meter {
  outermost.remaining = limit;
  outermost.exceeded = false;
  outermost.deadline = deadline;
  outermost.clock = clock;
  outermost.ticks = CLOCK_INTERVAL;
  outermost.timedOut = false;
  return (current = outermost);
}

/** Ends the outermost evaluation. */
export function endMeter(): void {
  current = undefined;
}

export interface Metered<T> {
  /** Set unless the evaluation threw. */
  readonly outcome: { ok: true; value: T } | { ok: false; error: unknown };
  /** Units spent. */
  readonly cost: number;
  /** The limit was reached: whatever `outcome` says, the evaluation did not finish. */
  readonly exceeded: boolean;
  /** It ran inside another run, whose cost includes this one's. */
  readonly nested: boolean;
}

/**
 * Runs `fn` with a meter of `limit` units. A run inside another (a variable evaluated while an expression that
 * reads it runs) spends from the outer meter, so the outer expression's limit covers what it caused.
 */
export function metered<T>(limit: number, fn: () => T): Metered<T> {
  const outer = current;
  const meter = outer ?? startMeter(limit);
  const before = meter.remaining;
  let outcome: Metered<T>['outcome'];
  try {
    outcome = { ok: true, value: fn() };
  } catch (error) {
    outcome = { ok: false, error };
  } finally {
    if (outer === undefined) endMeter();
  }
  return {
    outcome,
    cost: Math.max(0, before - Math.max(meter.remaining, 0)),
    exceeded: meter.exceeded,
    nested: outer !== undefined,
  };
}

const deepSizes = new WeakMap<object, number>();

/**
 * How much there is to walk in a value: a string's length, a list's or map's elements with what each holds,
 * 1 for anything else. Memoized per list or map, so asking again (an expression comparing the same list in each
 * iteration of a loop) costs nothing; the values an expression reads are never changed while it runs.
 */
export function deepSize(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (value === null || typeof value !== 'object') return 1;
  if (value instanceof Uint8Array) return value.length;
  const known = deepSizes.get(value);
  if (known !== undefined) return known;
  let size = 1;
  if (Array.isArray(value)) for (const v of value as unknown[]) size += deepSize(v);
  else if (value instanceof Map) for (const [k, v] of value as Map<unknown, unknown>) size += deepSize(k) + deepSize(v);
  else if (Object.getPrototypeOf(value) === Object.prototype)
    for (const key of Object.keys(value)) size += key.length + deepSize((value as Record<string, unknown>)[key]);
  deepSizes.set(value, size);
  return size;
}

/** The elements of a list or map, the characters of a string, the bytes of bytes; 1 for a scalar. */
export function shallowSize(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (Array.isArray(value)) return value.length;
  if (value instanceof Uint8Array) return value.length;
  if (value instanceof Map) return value.size;
  if (value !== null && typeof value === 'object') return deepSize(value); // a map's keys are not counted apart
  return 1;
}

/** The traversal cost of walking `n` characters or elements. */
export const traversal = (n: number): number => Math.ceil(n * TRAVERSAL_FACTOR);
