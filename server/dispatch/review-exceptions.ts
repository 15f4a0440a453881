/**
 * What the exceptions in force do to one review (README "Exceptions"): read once when the review starts, at
 * one instant. An Exempt exception skips the step it covers, saying which and until when; a Warn exception
 * lets the step run and settleRefusal turns its denial into a warning naming it; an exception that would
 * have covered the step but has expired is ignored, and a warning names it.
 *
 * Each step an exception lets off or warns of is counted once (`applied`, the metric), and each exception once
 * per review however many steps it covered (`used`, its status's usage count).
 */
import type { AdmissionRequest } from '../admission/types.js';
import type { GatewayException } from '../exceptions/exception.js';
import type { ExceptionIndex } from '../exceptions/exception-index.js';
import type { ExceptionSource } from '../exceptions/exception-source.js';
import type { Labels } from '../steps/label-selector.js';
import { EXEMPTED_BY_EXCEPTION } from '../steps/skip-reasons.js';
import type { Step } from '../steps/step.js';
import type { ReviewNotes } from './notes.js';

/** The skip reason of a step an exception let off, as reports, traces and logs give it. */
export function exemptedReason(exception: GatewayException): string {
  return `${EXEMPTED_BY_EXCEPTION}${exception.ref} (until ${exception.expiresAtText})`;
}

/** The warning a Warn exception makes of a step's denial. */
export function warnedText(message: string, exception: GatewayException): string {
  return `${message} (not enforced: ${exception.ref}, mode Warn, until ${exception.expiresAtText})`;
}

/** The warning for an expired exception that would have covered a step. */
export function expiredText(exception: GatewayException): string {
  return `${exception.ref} expired at ${exception.expiresAtText} and no longer applies`;
}

export class ReviewExceptions {
  /** Steps a Warn exception covers in this review (made on first use). */
  private warned: Map<Step, GatewayException> | undefined;
  /** Steps already decided: a reinvoked step is decided once. */
  private readonly decided = new Set<Step>();
  /** Steps whose Warn exception turned a denial into a warning, counted. */
  private readonly counted = new Set<Step>();
  /** Exceptions this review used, counted. */
  private readonly used = new Set<GatewayException>();

  constructor(
    private readonly source: ExceptionSource,
    private readonly index: ExceptionIndex,
    private readonly request: AdmissionRequest,
    private readonly namespaceLabels: Labels | undefined,
    private readonly notes: ReviewNotes,
    /** The review's instant, ms since the epoch: every step of the review is judged at it. */
    private readonly now: number,
  ) {}

  /** The skip reason when an Exempt exception covers `step`; records a Warn one, warns of an expired one. */
  exemption(step: Step): string | undefined {
    const decision = this.index.decide(step.name, this.request, this.namespaceLabels, this.now);
    if (!decision) return undefined;
    const first = !this.decided.has(step);
    this.decided.add(step);
    const { applied, expired } = decision;
    if (!applied) {
      if (expired && first) this.notes.warn(step.name, expiredText(expired));
      return undefined;
    }
    if (applied.mode === 'Exempt') {
      if (first) this.count(step, applied);
      return exemptedReason(applied);
    }
    (this.warned ??= new Map()).set(step, applied);
    return undefined;
  }

  /** The Warn exception that covers `step` in this review: its denial is then a warning (counted once). */
  warnedBy(step: Step): GatewayException | undefined {
    const exception = this.warned?.get(step);
    if (exception && !this.counted.has(step)) {
      this.counted.add(step);
      this.count(step, exception);
    }
    return exception;
  }

  private count(step: Step, exception: GatewayException): void {
    this.source.applied(step.name, exception);
    if (this.used.has(exception)) return;
    this.used.add(exception);
    this.source.used(exception);
  }
}

/** The review's exceptions, or undefined when none are in force (the review then pays nothing more). */
export function reviewExceptions(
  source: ExceptionSource | undefined,
  request: AdmissionRequest,
  namespaceLabels: Labels | undefined,
  notes: ReviewNotes,
): ReviewExceptions | undefined {
  const index = source?.current();
  if (!source || !index || index.size === 0) return undefined;
  return new ReviewExceptions(source, index, request, namespaceLabels, notes, source.now());
}
