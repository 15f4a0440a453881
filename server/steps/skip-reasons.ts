/** The reasons a step is skipped that need no review's context: dry-run side effects, opt-in, no object to patch. */
import type { AdmissionRequest } from '../admission/types.js';
import type { Step } from './step.js';

/** Dry-run promises no side effects; a step that declares some cannot honour that (apiserver semantics). */
export const DRY_RUN_WITH_SIDE_EFFECTS = 'dry-run request and the step has side effects';
/** How the skip reason of a step an exception let off begins (dispatch/review-exceptions.ts makes it). */
export const EXEMPTED_BY_EXCEPTION = 'skipped-by-exception: ';
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
