/** Why a step does not run for a review: shared by both dispatchers. */
import type { ReviewContext } from './review-context.js';
import type { Step } from './step.js';

/** Why `step` does not apply to this review, or undefined when it runs. */
export function skipReason(step: Step, ctx: ReviewContext): string | undefined {
  const reason = step.match.matches(ctx.request, ctx.namespaceLabels);
  if (reason) return reason;
  // Dry-run promises no side effects; a step that declares some cannot honour that (apiserver semantics).
  if (ctx.request.dryRun && step.sideEffects === 'Some') return 'dry-run request and the step has side effects';
  return undefined;
}
