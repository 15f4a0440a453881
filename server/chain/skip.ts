/** Why a step does not run for a review: shared by both dispatchers. */
import type { AdmissionRequest } from '../admission/types.js';
import type { ReviewContext } from './review-context.js';
import type { Step } from './step.js';

/** Dry-run promises no side effects; a step that declares some cannot honour that (apiserver semantics). */
export const DRY_RUN_WITH_SIDE_EFFECTS = 'dry-run request and the step has side effects';
/** An `OptIn` step whose extension the review does not reference (README "Opt-in providers"). */
export const NOT_REFERENCED =
  'attach: OptIn, and neither the object nor its namespace references it in admissiongateway.io/extensions';

/** Operations whose object cannot be patched (the apiserver refuses such patches). */
const UNPATCHABLE = new Set(['DELETE', 'CONNECT']);

/** Whether the request has an object the mutate phase may change: CREATE and UPDATE (not DELETE, CONNECT). */
export function isPatchable(request: AdmissionRequest): boolean {
  return !!request.object && !UNPATCHABLE.has(request.operation);
}

/** A step that edits the object (an in-process mutator) and a request with none it may edit. */
export function mutatesNothing(step: Step, request: AdmissionRequest): boolean {
  return step.needsObject && !isPatchable(request);
}

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
  return undefined;
}
