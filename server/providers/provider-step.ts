/** Adapts a remote provider (or one of its discovered handlers) to the chain's Step. */
import type { AdmissionApiVersion, Phase } from '../admission/types.js';
import type { Decision } from '../admission/decision.js';
import { describePlacement, placedFields, type StepPlacement } from '../steps/placement.js';
import type { Step, StepInvocation } from '../steps/step.js';
import type { ProviderBreaker } from './provider-breaker.js';
import type { ProviderClient } from './provider-client.js';
import type { ProviderCallError } from '../base/errors.js';

export interface ProviderStepOptions extends StepPlacement {
  readonly provider: string;
  readonly phase: Phase;
  readonly url: string;
  /** Path to POST to, when it differs from the provider URL's (a discovered handler). */
  readonly path?: string;
  /** The AdmissionReview version it is called in. */
  readonly apiVersion: AdmissionApiVersion;
  readonly client: ProviderClient;
  readonly breaker: ProviderBreaker;
}

export function createProviderStep(o: ProviderStepOptions): Step {
  const mutating = o.phase === 'mutate';
  const call = async (inv: StepInvocation): Promise<Decision> => {
    const answer = await o.breaker.fire(() =>
      o.client.call({
        request: inv.request,
        object: inv.plainObject,
        mutating,
        timeoutMs: inv.timeoutMs,
        signal: inv.signal,
        apiVersion: o.apiVersion,
        ...(o.path ? { path: o.path } : {}),
        traceHeaders: inv.traceHeaders,
      }),
    );
    for (const warning of answer.warnings) inv.warn(warning);
    for (const [key, value] of Object.entries(answer.auditAnnotations)) inv.annotate(key, value);
    return answer.decision;
  };
  return {
    ...placedFields(o, o.phase),
    source: 'provider',
    phase: o.phase,
    // A remote webhook is called on DELETE and CONNECT too (it may deny); a patch there is refused.
    needsObject: false,
    // A failed call rejects with a ProviderCallError, itself the step's failure (a StepFailedError). Behind an
    // open breaker that failure is returned at once: no deadline timer, no promise, no throw.
    invoke(inv): Promise<Decision> | ProviderCallError {
      return o.breaker.failingFast() ?? call(inv);
    },
    breakerState: () => o.breaker.state(),
    describe: () => ({
      name: o.name,
      source: 'provider',
      provider: o.provider,
      phase: o.phase,
      order: o.order,
      url: o.path ? new URL(o.path, o.url).toString() : o.url,
      admissionReviewVersion: o.apiVersion,
      ...describePlacement(o, o.phase),
      breaker: { state: o.breaker.state(), ...o.breaker.stats() },
    }),
  };
}
