/**
 * What one object's review says about each step, in PolicyReport words: what would happen to the object if the
 * step were enforced. Pure.
 *
 * - allowed → `pass`;
 * - denied → `fail` with the step's message, whatever the step's mode: a step in `warn` or `audit` mode only
 *   warns or annotates at admission, and the report is where the operator sees what `enforce` would refuse;
 * - failed (error, timeout, open circuit) → `error` with the reason and message;
 * - skipped because the audit's request is a dry run and the step declares side effects → `skip`: the step does
 *   apply to the object, but the audit cannot run it without its side effects;
 * - skipped because an exception lets the object off the step → `skip`, naming the exception and until when, the
 *   answer admission gives the object (README "Exceptions");
 * - skipped because its rules, selectors or `attach: OptIn` leave the object out → no result: the step would
 *   not apply to the object if enforced, and a `skip` for every object some other step matches would bury the
 *   results that matter.
 */
import type { DecisionTrace } from '../trace/decision-trace.js';
import { shown } from '../steps/policy.js';
import type { StepReport } from '../trace/step-report.js';
import { DRY_RUN_WITH_SIDE_EFFECTS, EXEMPTED_BY_EXCEPTION } from '../steps/skip-reasons.js';

export type PolicyResult = 'pass' | 'fail' | 'warn' | 'error' | 'skip';

/** One step's PolicyReport result for one object. */
export interface StepPolicyResult {
  readonly step: string;
  readonly result: PolicyResult;
  readonly message?: string;
}

/**
 * What each step that denied or failed said, from the review's decision trace (the answer itself only carries
 * the refusals of enforcing steps; a warn step's message is a warning, an audit step's an annotation).
 */
export function stepMessages(trace: DecisionTrace | undefined): Map<string, string> {
  const messages = new Map<string, string>();
  for (const step of trace?.steps ?? []) {
    if (step.message === undefined) continue;
    // A policy step's refusal names its validation, as its failure names the expression that failed.
    const decided = step.policy?.decidedBy;
    const validation = step.outcome === 'denied' && decided?.result === 'false' ? `${decided.field}: ` : '';
    messages.set(step.step, shown(`${validation}${step.message}`));
  }
  return messages;
}

/** The result of each step that applied to the object, in the order the review reported them. */
export function stepResults(
  reports: readonly StepReport[],
  messages: ReadonlyMap<string, string> | undefined,
): StepPolicyResult[] {
  const results: StepPolicyResult[] = [];
  for (const report of reports) {
    const message = messages?.get(report.step);
    switch (report.outcome) {
      case 'allowed':
      case 'patched':
        results.push({ step: report.step, result: 'pass' });
        break;
      case 'denied':
        results.push({ step: report.step, result: 'fail', message: message || 'denied without explanation' });
        break;
      case 'error':
      case 'timeout':
      case 'circuit_open':
        results.push({
          step: report.step,
          result: 'error',
          message: `${report.reason ?? report.outcome}${message ? `: ${message}` : ''}`,
        });
        break;
      case 'skipped':
        if (report.reason === DRY_RUN_WITH_SIDE_EFFECTS) {
          results.push({
            step: report.step,
            result: 'skip',
            message: 'not run: the step declares side effects, and the audit reviews as a dry run',
          });
        } else if (report.reason?.startsWith(EXEMPTED_BY_EXCEPTION)) {
          results.push({ step: report.step, result: 'skip', message: report.reason });
        }
        break;
      case 'no_opinion':
        break;
    }
  }
  return results;
}
