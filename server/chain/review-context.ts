/**
 * Per-review state shared by the mutate and validate dispatchers, and the one place where a step's
 * result is turned into an outcome: reports, metrics, notes, and whether the review stops.
 */
import type { AdmissionRequest, Phase } from '../admission/types.js';
import type { StepFailedError } from '../base/errors.js';
import { MAX_MESSAGE_CHARS, clip, stripControl } from '../base/limits.js';
import type { StepOutcome, Metrics } from '../metrics/metrics.js';
import type { Logger } from '../base/log.js';
import type { Labels } from './label-selector.js';
import type { ReviewNotes } from './notes.js';
import type { Step } from './step.js';

export interface StepReport {
  readonly step: string;
  readonly outcome: StepOutcome;
  readonly ms: number;
  /** Why it was skipped, or the failure reason. */
  readonly reason?: string;
  /** 1 for a reinvocation (reinvocationPolicy IfNeeded). */
  readonly round?: number;
  /** The failure was ignored (failurePolicy Ignore, or mode warn/audit). */
  readonly failedOpen?: boolean;
}

/** The review's refusal: a denial by an enforcing step, or a failure of an enforcing `Fail` step. */
export interface Rejection {
  readonly message: string;
  readonly code: number;
}

export interface ReviewContext {
  readonly request: AdmissionRequest;
  readonly phase: Phase;
  /** performance.now() value by which the chain must have answered. */
  readonly deadline: number;
  readonly namespaceLabels: Labels | undefined;
  readonly notes: ReviewNotes;
  readonly reports: StepReport[];
  readonly metrics: Metrics;
  /** Request-bound logger, created on first use. */
  readonly log: () => Logger;
  /** Logger bound to the request and a step, created on first use. */
  readonly stepLog: (step: string) => Logger;
  readonly now: () => number;
  /** The object is large: the phase lets other work run between its steps (see yieldIfLarge). */
  readonly large: boolean;
}

/**
 * For a large object, a turn of the event loop for whatever else is ready (ordinary reviews above all):
 * each step of a large review is synchronous work of its own size, and without this the whole review would
 * hold every other one until its answer. Nothing for an ordinary review.
 */
export function yieldIfLarge(ctx: ReviewContext): Promise<void> | undefined {
  return ctx.large ? new Promise((resolve) => setImmediate(resolve)) : undefined;
}

const OUTCOME_OF_FAILURE: Readonly<Record<string, StepOutcome>> = { timeout: 'timeout', breaker_open: 'circuit_open' };

/** Remaining budget for a step, in whole milliseconds. */
export function timeLeft(ctx: ReviewContext, step: Step): number {
  return Math.min(step.timeoutMs, Math.floor(ctx.deadline - ctx.now()));
}

export function recordSkip(ctx: ReviewContext, step: Step, reason: string): void {
  ctx.reports.push({ step: step.name, outcome: 'skipped', ms: 0, reason });
  ctx.metrics.stepCalls.inc({ step: step.name, phase: ctx.phase, outcome: 'skipped' });
}

/** Milliseconds since `started`, to the microsecond: plenty for logs, and it keeps the review line short. */
export function elapsedMs(ctx: ReviewContext, started: number): number {
  return Math.round((ctx.now() - started) * 1000) / 1000;
}

function record(ctx: ReviewContext, step: Step, report: StepReport): void {
  ctx.reports.push(report);
  ctx.metrics.stepCalls.inc({ step: step.name, phase: ctx.phase, outcome: report.outcome });
  ctx.metrics.stepDuration.observe({ step: step.name, phase: ctx.phase }, report.ms / 1000);
}

export function settleSuccess(ctx: ReviewContext, step: Step, ms: number, changed: boolean, round: number): void {
  const outcome = changed ? 'patched' : 'allowed';
  // Every review reports each step: one object of one shape, not a spread of a conditional one.
  record(ctx, step, round ? { step: step.name, outcome, ms, round } : { step: step.name, outcome, ms });
}

/**
 * What a step says reaches users' terminals and the log: control characters (terminal escapes, forged log
 * lines) are removed and the length is bounded, as for warnings.
 */
const shown = (message: string): string => clip(stripControl(message), MAX_MESSAGE_CHARS);

/** A returned deny: final in enforce mode, a warning in warn mode, an annotation in audit mode. */
export function settleDenial(
  ctx: ReviewContext,
  step: Step,
  ms: number,
  denial: Rejection,
  round: number,
): Rejection | undefined {
  record(ctx, step, { step: step.name, outcome: 'denied', ms, ...(round ? { round } : {}) });
  const message = shown(denial.message) || 'denied without explanation';
  switch (step.mode) {
    case 'enforce':
      return { message: `${step.name}: ${message}`, code: denial.code };
    case 'warn':
      ctx.notes.warn(step.name, `${message} (mode warn: not enforced)`);
      return undefined;
    case 'audit':
      ctx.notes.annotate(step.name, 'would-deny', message);
      return undefined;
  }
}

/**
 * A failure: `Fail` on an enforcing step refuses the review with code 500 naming the step; otherwise the
 * gateway fails open — counted, annotated, warned and logged, and the chain continues.
 */
export function settleFailure(
  ctx: ReviewContext,
  step: Step,
  ms: number,
  failure: StepFailedError,
  round: number,
): Rejection | undefined {
  const outcome = OUTCOME_OF_FAILURE[failure.reason] ?? 'error';
  const blocking = step.failurePolicy === 'Fail' && step.mode === 'enforce';
  const message = shown(failure.message);
  record(ctx, step, {
    step: step.name,
    outcome,
    ms,
    reason: failure.reason,
    ...(blocking ? {} : { failedOpen: true }),
    ...(round ? { round } : {}),
  });
  if (blocking) {
    ctx.log().warn({ step: step.name, reason: failure.reason, err: message }, 'step failed, refusing the request');
    return { message: `${step.source} "${step.name}" failed (${failure.reason}): ${message}`, code: 500 };
  }
  ctx.metrics.failOpen.inc({ step: step.name });
  ctx.notes.annotate(step.name, 'failed-open', `${failure.reason}: ${message}`);
  ctx.notes.warn(step.name, `failed open (${failure.reason}): ${message}`);
  // An open breaker fails every review fast: its opening was logged once (warn), and each review's line
  // records circuit_open + failedOpen; a warn line per review on top would be thousands a second of noise.
  if (failure.reason !== 'breaker_open') {
    ctx.log().warn({ step: step.name, reason: failure.reason, err: message }, 'step failed, failing open');
  }
  return undefined;
}
