/**
 * What a step's denial or failure does to the review, by the step's mode and failurePolicy (README
 * "Semantics in one screen"). Pure rules: the dispatchers apply what these return.
 */
import type { Denial } from '../admission/decision.js';
import type { FailureReason } from '../base/errors.js';
import { MAX_MESSAGE_CHARS, clip, stripControl } from '../base/limits.js';
import type { FailurePolicy, Mode } from '../config/step-options.js';

/** What the rules need to know of a step. */
export interface GuardedStep {
  readonly name: string;
  readonly source: 'plugin' | 'provider' | 'policy';
  readonly mode: Mode;
  readonly failurePolicy: FailurePolicy;
  /** Its denials are passed on as it words them (step.ts). */
  readonly ownWords?: boolean;
}

/**
 * What a denial or a failure comes to. Warnings and annotation keys are the step's own: the review's notes
 * put the step's name in front of them.
 */
export type Consequence =
  /** The review is refused with this. */
  | { readonly kind: 'block'; readonly denial: Denial }
  /** A warning to the client, and the review goes on (a denial in warn mode). */
  | { readonly kind: 'warn'; readonly warning: string }
  /** Only an audit annotation, and the review goes on (a denial in audit mode). */
  | { readonly kind: 'annotate'; readonly key: string; readonly value: string }
  /** The failure is ignored: warned, annotated and counted, and the review goes on without the step. */
  | { readonly kind: 'fail-open'; readonly warning: string; readonly key: string; readonly value: string };

/**
 * The failure policy a step acts on: a step in warn or audit mode never blocks, not even when it fails, so it
 * is an Ignore step whatever its `failurePolicy` says. The split routes (`/validate/fail`, …) and the rendered
 * webhook configurations use this, so the apiserver's own failurePolicy for an unreachable gateway matches
 * what the steps behind it would have done.
 */
export function effectiveFailurePolicy(step: Pick<GuardedStep, 'failurePolicy' | 'mode'>): FailurePolicy {
  return step.mode === 'enforce' ? step.failurePolicy : 'Ignore';
}

/**
 * What a step says reaches users' terminals and the log: control characters (terminal escapes, forged log
 * lines) are removed and the length is bounded, as for warnings.
 */
export function shown(message: string): string {
  return clip(stripControl(message), MAX_MESSAGE_CHARS);
}

/** A returned deny: final in enforce mode, a warning in warn mode, an annotation in audit mode. */
export function denialConsequence(step: GuardedStep, denial: Pick<Denial, 'message' | 'code'>): Consequence {
  const message = shown(denial.message) || 'denied without explanation';
  switch (step.mode) {
    case 'enforce':
      return {
        kind: 'block',
        denial: { allowed: false, message: step.ownWords ? message : `${step.name}: ${message}`, code: denial.code },
      };
    case 'warn':
      return { kind: 'warn', warning: `${message} (mode warn: not enforced)` };
    case 'audit':
      return { kind: 'annotate', key: 'would-deny', value: message };
  }
}

/**
 * A failure: an enforcing `Fail` step refuses the review with code 500 naming the step; any other fails open,
 * and the chain goes on.
 */
export function failureConsequence(
  step: GuardedStep,
  failure: { readonly reason: FailureReason; readonly message: string },
): Consequence {
  const message = shown(failure.message);
  if (effectiveFailurePolicy(step) === 'Fail') {
    return {
      kind: 'block',
      denial: { allowed: false, message: failureMessage(step, failure.reason, message), code: 500 },
    };
  }
  return {
    kind: 'fail-open',
    warning: `failed open (${failure.reason}): ${message}`,
    key: 'failed-open',
    value: `${failure.reason}: ${message}`,
  };
}

/** What refuses a request for a step's failure, in every chain: the step, the reason and what it said. */
export function failureMessage(
  step: Pick<GuardedStep, 'source' | 'name'>,
  reason: FailureReason,
  message: string,
): string {
  return `${step.source} "${step.name}" failed (${reason}): ${message}`;
}
