/**
 * What a review says about each of its steps: the report the observer keeps, what a traced review keeps beyond
 * it, and a shadow step's call. Types only, shared by the dispatchers that fill them in and the trace that reads
 * them.
 */
import type { JsonPatchOperation } from '../admission/types.js';
import type { Mode } from '../config/step-options.js';
import type { StepOutcome } from '../metrics/metrics.js';
import type { Step } from '../steps/step.js';
import type { PolicyTrace } from '../policy/explain-policy.js';

export interface StepReport {
  readonly step: string;
  readonly outcome: StepOutcome;
  readonly ms: number;
  /** Why it was skipped, or the failure reason. */
  readonly reason?: string;
  /** 1 for a reinvocation (reinvocationPolicy IfNeeded). */
  readonly round?: number;
  /** The failure was ignored (failurePolicy Ignore, or mode warn/audit). */
  readonly failedOpen?: boolean;
  /** A denial that did not refuse: the step's mode (warn or audit), read beside the answer that allowed. */
  readonly mode?: Exclude<Mode, 'enforce'>;
  /** The level it ran in, when some level of the mutate phase ran several steps at once (step-graph.ts). */
  readonly level?: number;
}

/** The first path a step overwrote, and whose write it was. */
export interface PatchConflict {
  readonly path: string;
  readonly earlier: string;
  readonly earlierPath: string;
}

/** What the observer keeps per report beyond the log line's fields, when the review is traced. */
export interface StepDetail {
  readonly step: Step;
  readonly message: string | undefined;
  readonly patch: readonly JsonPatchOperation[] | undefined;
  /** Its writes' number in the phase's WriteHistory (TraceInput.writes), when it wrote and `patch` is not given. */
  readonly written: number | undefined;
  /** Operations of `patch` left out when the input was made smaller to be kept. */
  readonly patchOpsOmitted?: number;
  readonly deadlineLeftMs: number | undefined;
  /** Its refusal is in the answer (a denial in mode enforce, a failure not let through). */
  readonly decided: boolean;
  /** A policy step's run as a kept trace keeps it (bounded; a live trace reads it from the review instead). */
  readonly policy?: PolicyTrace;
}

export type Disagreement = 'would_deny' | 'would_allow' | 'patch_differs';

/** One shadow step's call, as the decision trace shows it. */
export interface ShadowStepTrace {
  readonly step: string;
  readonly outcome: StepOutcome | 'dropped';
  readonly ms?: number;
  readonly disagreement?: Disagreement;
  /** Its denial's or failure's message. */
  readonly message?: string;
  /** A mutating shadow step's operations the answer's patch does not have: op and path, no object content. */
  readonly patch?: ReadonlyArray<{ readonly op: string; readonly path: string }>;
  /** Operations of `patch` left out (past MAX_SHADOW_TRACED_OPS). */
  readonly patchOpsOmitted?: number;
}
