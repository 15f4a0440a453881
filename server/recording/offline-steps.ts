/**
 * `replay --offline`: the candidate chain with each remote provider step replaced by a stand-in that answers
 * what the recording says that step (by name) answered for the review being replayed — allowed, the patch it
 * returned, its denial with the message, its failure (settled by the candidate step's own failurePolicy and
 * mode), and its warnings. A provider step the recording has no answer of for a review (not in the recording,
 * or skipped there) allows, and is reported as "not recorded" with the lines it happened on.
 */
import { APPROVED, type Decision } from '../admission/decision.js';
import { StepFailedError, type FailureReason } from '../base/errors.js';
import { createChain, type Chain } from '../chain/chain.js';
import { denialConsequence, failureConsequence } from '../steps/policy.js';
import type { Step } from '../steps/step.js';
import type { RecordedReview } from './recorded-review.js';

const FAILURES: Readonly<Record<string, FailureReason>> = {
  error: 'error',
  timeout: 'timeout',
  circuit_open: 'breaker_open',
};

/** The review being replayed, and the provider steps it had no answer of. */
export class OfflineAnswers {
  private current: { review: RecordedReview; line: number } | undefined;
  private readonly missing = new Map<string, number[]>();

  replaying(review: RecordedReview, line: number): void {
    this.current = { review, line };
  }

  /** The recorded answer of step `name` for the review being replayed, or undefined after noting it missing. */
  answerOf(name: string): RecordedReview['steps'][number] | undefined {
    const found = this.current?.review.steps.find((s) => s.step === name && s.source === 'provider');
    if (found && found.outcome !== 'skipped') return found;
    if (this.current) {
      const lines = this.missing.get(name) ?? [];
      if (lines.at(-1) !== this.current.line) lines.push(this.current.line);
      this.missing.set(name, lines);
    }
    return undefined;
  }

  notRecorded(): { step: string; lines: number[] }[] {
    return [...this.missing].sort(([a], [b]) => (a < b ? -1 : 1)).map(([step, lines]) => ({ step, lines }));
  }
}

/** What the gateway itself would have warned about a step's denial in warn mode, or about its failing open. */
function gatewayWarnings(
  step: Step,
  outcome: string,
  failure: FailureReason | undefined,
  message: string,
): Set<string> {
  const said = new Set<string>();
  const consequence = failure
    ? failureConsequence({ ...step, failurePolicy: 'Ignore' }, { reason: failure, message })
    : outcome === 'denied'
      ? denialConsequence({ ...step, mode: 'warn' }, { message, code: 403 })
      : undefined;
  if (consequence?.kind === 'warn' || consequence?.kind === 'fail-open')
    said.add(`${step.name}: ${consequence.warning}`);
  return said;
}

/** A provider step answering from the recording. */
export function offlineStep(step: Step, answers: OfflineAnswers): Step {
  return {
    ...step,
    invoke(invocation): Decision {
      const recorded = answers.answerOf(step.name);
      if (!recorded) return APPROVED;
      const failure = recorded.reason ?? FAILURES[recorded.outcome];
      const message = recorded.message ?? `${recorded.outcome} (recorded)`;
      // The step's warnings as the answer carried them; those the gateway gave about its denial or failure (warn
      // mode, failing open) are left out: the candidate's own mode and failurePolicy say them again, or not.
      const gateways = gatewayWarnings(step, recorded.outcome, failure, message);
      const prefix = `${step.name}: `;
      for (const warning of recorded.warnings ?? []) {
        if (gateways.has(warning)) continue;
        invocation.warn(warning.startsWith(prefix) ? warning.slice(prefix.length) : warning);
      }
      if (failure) throw new StepFailedError(failure, message);
      if (recorded.outcome === 'denied') {
        return { allowed: false, message: recorded.message ?? 'denied (recorded)', code: 403 };
      }
      return recorded.patch?.length ? { allowed: true, patch: [...recorded.patch] } : APPROVED;
    },
  };
}

/** The chain with its provider steps answering from the recording; its plugin steps run as they are. */
export function offlineChain(chain: Chain, answers: OfflineAnswers): Chain {
  return createChain(
    chain.steps.map((step) => (step.source === 'provider' ? offlineStep(step, answers) : step)),
    chain.authorize,
  );
}
