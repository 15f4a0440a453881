/**
 * Per-review state shared by the mutate and validate dispatchers, and the one place where a step's denial or
 * failure is turned into what it does to the review: the rules of policy.ts applied to the review's notes,
 * and told to its observer.
 */
import type { Denial } from '../admission/decision.js';
import type { AdmissionRequest, Phase } from '../admission/types.js';
import { StepFailedError } from '../base/errors.js';
import type { Labels } from '../steps/label-selector.js';
import type { ReviewNotes } from './notes.js';
import { denialConsequence, failureConsequence, shown, type Consequence } from '../steps/policy.js';
import { warnedText, type ReviewExceptions } from './review-exceptions.js';
import type { ReviewExtensions } from '../extensions/review-references.js';
import type { ReviewObserver } from './review-observer.js';
import type { Step } from '../steps/step.js';

export interface ReviewContext {
  readonly request: AdmissionRequest;
  readonly phase: Phase;
  /** performance.now() value by which the chain must have answered. */
  readonly deadline: number;
  readonly namespaceLabels: Labels | undefined;
  /**
   * The opt-in extensions the review references, resolved (review-references.ts); undefined when the chain
   * has no `OptIn` step nor conflict group and the object references nothing.
   */
  readonly extensions: ReviewExtensions | undefined;
  readonly notes: ReviewNotes;
  readonly observer: ReviewObserver;
  readonly now: () => number;
  /** The object is large: the phase lets other work run between its steps (see yieldIfLarge). */
  readonly large: boolean;
  /** The exceptions in force for this review (review-exceptions.ts); undefined when there are none. */
  readonly exceptions?: ReviewExceptions | undefined;
}

/**
 * For a large object, a turn of the event loop for whatever else is ready (ordinary reviews above all):
 * each step of a large review is synchronous work of its own size, and without this the whole review would
 * hold every other one until its answer. Nothing for an ordinary review.
 */
export function yieldIfLarge(ctx: ReviewContext): Promise<void> | undefined {
  return ctx.large ? new Promise((resolve) => setImmediate(resolve)) : undefined;
}

/** Remaining budget for a step, in whole milliseconds. */
export function timeLeft(ctx: ReviewContext, step: Step): number {
  return Math.min(step.timeoutMs, Math.floor(ctx.deadline - ctx.now()));
}

/** Milliseconds since `started`, to the microsecond: plenty for logs, and it keeps the review line short. */
export function elapsedMs(ctx: ReviewContext, started: number): number {
  return Math.round((ctx.now() - started) * 1000) / 1000;
}

/**
 * A step's denial or failure, settled by its mode and failurePolicy: recorded, its warning or annotation
 * noted, and the denial that ends the review returned when it does.
 */
export function settleRefusal(
  ctx: ReviewContext,
  step: Step,
  ms: number,
  refusal: Denial | StepFailedError,
  round: number,
): Denial | undefined {
  let consequence: Consequence;
  if (refusal instanceof StepFailedError) {
    consequence = failureConsequence(step, refusal);
    ctx.observer.failed(step, ms, refusal, round, consequence.kind !== 'block');
  } else {
    consequence = denialConsequence(step, refusal);
    // A Warn exception changes only a denial that would refuse the review.
    const warnedBy = consequence.kind === 'block' ? ctx.exceptions?.warnedBy(step) : undefined;
    if (warnedBy) consequence = { kind: 'warn', warning: warnedText(shown(refusal.message), warnedBy) };
    ctx.observer.denied(step, ms, round, refusal, consequence.kind === 'block');
  }
  switch (consequence.kind) {
    case 'block':
      return consequence.denial;
    case 'warn':
      ctx.notes.warn(step.name, consequence.warning);
      return undefined;
    case 'annotate':
      ctx.notes.annotate(step.name, consequence.key, consequence.value);
      return undefined;
    case 'fail-open':
      ctx.notes.annotate(step.name, consequence.key, consequence.value);
      ctx.notes.warn(step.name, consequence.warning);
      return undefined;
  }
}
