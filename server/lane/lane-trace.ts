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
  /** `live`: the main thread started its span as the step called out (liveStepOf), not when the answer came. */
  | {
      readonly hook: 'started';
      readonly step: string;
      readonly phase: Phase;
      readonly at: number;
      readonly live?: true;
    }
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
 * What a worker's provider step is given as its trace context: not headers to send, but which step of which job
 * calls out. The main thread, which makes the call, starts the step's span then and sends that span's context
 * instead (provider-host.ts); the header itself never leaves the process.
 */
const LIVE_STEP = 'x-admission-gateway-lane-step';

/** The job, phase and step a worker's trace context names (see LIVE_STEP); undefined for any other headers. */
export function liveStepOf(
  headers: readonly string[] | undefined,
): { readonly job: number; readonly phase: Phase; readonly step: string } | undefined {
  if (headers?.length !== 2 || headers[0] !== LIVE_STEP) return undefined;
  try {
    const [job, phase, step] = JSON.parse(headers[1]!) as unknown[];
    if (!Number.isSafeInteger(job) || (phase !== 'mutate' && phase !== 'validate') || typeof step !== 'string') return;
    return { job: job as number, phase, step };
  } catch {
    return undefined;
  }
}

/**
 * The worker's tracer: each review's trace has the id `traceId()` gives (the main thread's span's), and hands what
 * it is told to `record`. A step that calls out (a provider's) is given the context that has the main thread start
 * its span as it makes the call (job `job()`), as the main lane starts it.
 */
export function recordingTracer(
  traceId: () => string,
  record: (event: TraceEvent) => void,
  job: () => number | undefined,
): ReviewTracer {
  return {
    startReview: () => ({
      traceId: traceId(),
      stepStarted(step) {
        const id = job();
        if (step.source !== 'provider' || id === undefined || (step.phase !== 'mutate' && step.phase !== 'validate')) {
          record({ hook: 'started', step: step.name, phase: step.phase, at: epochNow() });
          return [];
        }
        record({ hook: 'started', step: step.name, phase: step.phase, at: epochNow(), live: true });
        return [LIVE_STEP, JSON.stringify([id, step.phase, step.name])];
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
    if (event.hook === 'started') {
      if (!event.live) trace.stepStarted(step, event.at);
    } else if (event.hook === 'skipped') trace.stepSkipped(step, event.reason, event.at);
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
