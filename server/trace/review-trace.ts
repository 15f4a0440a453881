/**
 * What the chain needs of tracing, and nothing of how it is done: `server/tracing/` implements these with
 * OpenTelemetry, loaded only when tracing is configured. Without it the reviewer has no tracer, and each
 * hook on the review path is one check for `undefined`.
 */
import type { AdmissionRequest, AdmissionResponse, Phase } from '../admission/types.js';
import type { StepFailedError } from '../base/errors.js';
import type { StepReport } from './step-report.js';
import type { Step } from '../steps/step.js';

/** The headers of the webhook request, read for the caller's W3C trace context (`traceparent`, `tracestate`). */
export type IncomingHeaders = Readonly<Record<string, string | readonly string[] | undefined>>;

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;
const NO_TRACE = '0'.repeat(32);

/**
 * The trace id of the request's W3C `traceparent`, without a tracer: what the decision trace carries when
 * tracing is off, so that the caller's trace still finds it. Undefined when absent or malformed.
 */
export function incomingTraceId(incoming: IncomingHeaders | undefined): string | undefined {
  const header = incoming?.traceparent;
  const id = typeof header === 'string' ? TRACEPARENT.exec(header.trim())?.[1] : undefined;
  return id === NO_TRACE ? undefined : id;
}

/** What a review's span says of its request. */
export type SpanRequest = Pick<AdmissionRequest, 'uid' | 'operation' | 'kind' | 'namespace' | 'name' | 'dryRun'>;

/** Starts the trace of each review. */
export interface ReviewTracer {
  /** The review's span, a child of the caller's when `incoming` carries a valid `traceparent`. */
  startReview(request: SpanRequest, phase: Phase, route: string, incoming: IncomingHeaders | undefined): ReviewTrace;
}

/**
 * One review's trace: its span, and a span per step invocation below it. Each hook takes `at`, when what it says
 * happened elsewhere earlier (a review in a worker of the large-review lane, server/lane/): milliseconds since the
 * epoch, fractions included; undefined: now.
 */
export interface ReviewTrace {
  /** The trace's id, 32 lowercase hex digits (what other records of the review carry to be found with it). */
  readonly traceId: string;
  /**
   * A step asks for its trace context, as it calls out (a provider): its span starts. Returns the headers
   * (flat name/value pairs: `traceparent`, and `tracestate` when there is one) that make what the step calls a
   * child of its span. At most once per invocation.
   */
  stepStarted(step: Step, at?: number): readonly string[];
  /**
   * What came of the step's invocation (its report, whose `ms` dates the start of a span not started yet),
   * and the failure when it failed: its span ends.
   */
  stepSettled(step: Step, report: StepReport, failure: StepFailedError | undefined, at?: number): void;
  /** A step that did not apply: an event on the review's span, not a span of its own. */
  stepSkipped(step: Step, reason: string, at?: number): void;
  /** The review's answer: its span ends, with those of steps whose outcome was never settled. */
  reviewed(response: AdmissionResponse, patchOps: number, at?: number): void;
}
