/**
 * What each policy step of a review came to (run-policy.ts's PolicyRun), kept by the review's request object,
 * so that the decision trace can say which expression decided when someone reads it, and it goes when the
 * review does. Nothing here is built unless a trace is read.
 */
import type { AdmissionRequest } from '../admission/types.js';
import type { PolicyRun } from './run-policy.js';

const runs = new WeakMap<AdmissionRequest, Map<string, PolicyRun>>();

/** Keeps the run of step `step` for `request` (its latest, when it ran again). */
export function keepPolicyRun(request: AdmissionRequest, step: string, run: PolicyRun): void {
  let byStep = runs.get(request);
  if (byStep === undefined) runs.set(request, (byStep = new Map<string, PolicyRun>()));
  byStep.set(step, run);
}

export function policyRunOf(request: AdmissionRequest, step: string): PolicyRun | undefined {
  return runs.get(request)?.get(step);
}
