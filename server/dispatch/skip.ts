/** Why a step does not run for a review: shared by both dispatchers. */
import type { ReviewContext } from './review-context.js';
import { DRY_RUN_WITH_SIDE_EFFECTS, NOT_REFERENCED } from '../steps/skip-reasons.js';
import type { Step } from '../steps/step.js';

/** Why an `OptIn` step does not run for this review (its extension not referenced, or set aside), if it does not. */
function optInSkipReason(step: Step, ctx: ReviewContext): string | undefined {
  const extensions = ctx.extensions;
  if (!extensions?.referenced.has(step.extension)) return NOT_REFERENCED;
  return extensions.setAside.get(step.extension);
}

/** Why `step` does not apply to this review, or undefined when it runs. */
export function skipReason(step: Step, ctx: ReviewContext): string | undefined {
  // The OptIn check in a function of its own, and the match and dry-run checks inline, not behind a shared helper:
  // either other shape costs every step of every review more instructions (callgrind, bench/in-process.mjs).
  // review-references.ts whyNotApplies makes the same two checks for its words.
  if (step.attach === 'OptIn') {
    const optIn = optInSkipReason(step, ctx);
    if (optIn !== undefined) return optIn;
  }
  const reason = step.match.matches(ctx.request, ctx.namespaceLabels);
  if (reason) return reason;
  if (ctx.request.dryRun && step.sideEffects === 'Some') return DRY_RUN_WITH_SIDE_EFFECTS;
  // Last: an exception is decided (and counted) only for a step that would otherwise run.
  return ctx.exceptions?.exemption(step);
}
