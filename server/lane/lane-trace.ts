/**
 * The OpenTelemetry trace of a review in a worker of the large-review lane. The main thread starts the review's
 * span (from the apiserver's `traceparent`, as the main lane does) when the worker has decoded the review, and tells
 * the worker the trace's id; the worker's reviewer traces into a recorder that keeps what each hook was told and
 * when; the main thread tells its own span the same, dated then, once the answer comes. The spans are the main
 * lane's: names, attributes, parents, times.
 */
import { performance } from 'node:perf_hooks';
import type { AdmissionResponse, Phase } from '../admission/types.js';
import { StepFailedError, type FailureReason } from '../base/errors.js';
import type { ReviewTrace, ReviewTracer } from '../trace/review-trace.js';
import type { StepReport } from '../trace/step-report.js';
import type { Step } from '../steps/step.js';

/** One hook's call, its step named (a plugin's mutate and validate steps share a name: with its phase), and when. */
export type TraceEvent =
  | { readonly hook: 'started'; readonly step: string; readonly phase: Phase; readonly at: number }
  | {
      readonly hook: 'settled';
      readonly step: string;
      readonly phase: Phase;
      readonly report: StepReport;
      readonly failure?: { readonly reason: FailureReason; readonly message: string };
      readonly at: number;
    }
  | {
      readonly hook: 'skipped';
      readonly step: string;
      readonly phase: Phase;
      readonly reason: string;
      readonly at: number;
    }
  | {
      readonly hook: 'reviewed';
      readonly allowed: boolean;
      readonly code?: number;
      readonly patchOps: number;
      readonly at: number;
    };

/** Now, in milliseconds since the epoch with the fraction a thread's clock has (both threads read the same). */
const epochNow = (): number => performance.timeOrigin + performance.now();

/**
 * The worker's tracer: each review's trace has the id `traceId()` gives (the main thread's span's), and hands what
 * it is told to `record`. A step that calls out would get no trace context (the lane runs no provider steps).
 */
export function recordingTracer(traceId: () => string, record: (event: TraceEvent) => void): ReviewTracer {
  return {
    startReview: () => ({
      traceId: traceId(),
      stepStarted(step) {
        record({ hook: 'started', step: step.name, phase: step.phase, at: epochNow() });
        return [];
      },
      stepSettled(step, report, failure) {
        const failed = failure ? { failure: { reason: failure.reason, message: failure.message } } : {};
        record({ hook: 'settled', step: step.name, phase: step.phase, report, ...failed, at: epochNow() });
      },
      stepSkipped(step, reason) {
        record({ hook: 'skipped', step: step.name, phase: step.phase, reason, at: epochNow() });
      },
      reviewed(response, patchOps) {
        const code = response.status?.code;
        record({
          hook: 'reviewed',
          allowed: response.allowed,
          ...(code === undefined ? {} : { code }),
          patchOps,
          at: epochNow(),
        });
      },
    }),
  };
}

/**
 * Tells `trace` what the worker's was told, each at its time; steps are found by name and phase with `stepNamed` (the
 * main thread's chain, built from the same configuration): a step it no longer has (the chain changed) is passed over.
 */
export function replayTrace(
  trace: ReviewTrace,
  events: readonly TraceEvent[],
  uid: string,
  stepNamed: (name: string, phase: Phase) => Step | undefined,
): void {
  for (const event of events) {
    if (event.hook === 'reviewed') {
      const { allowed, code, patchOps, at } = event;
      const response: AdmissionResponse = { uid, allowed, ...(code === undefined ? {} : { status: { code } }) };
      trace.reviewed(response, patchOps, at);
      continue;
    }
    const step = stepNamed(event.step, event.phase);
    if (!step) continue;
    if (event.hook === 'started') trace.stepStarted(step, event.at);
    else if (event.hook === 'skipped') trace.stepSkipped(step, event.reason, event.at);
    else {
      const { failure } = event;
      trace.stepSettled(
        step,
        event.report,
        failure ? new StepFailedError(failure.reason, failure.message) : undefined,
        event.at,
      );
    }
  }
}
