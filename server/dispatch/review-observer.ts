/**
 * Records what happened in one review: a report per step, the metrics, and the log lines (the review's one
 * `review` line, and a warning for a step that failed). The dispatchers only say what happened; this decides
 * how it is counted and told. One per review, its child loggers made on first use.
 */
import type { Denial } from '../admission/decision.js';
import { kindName } from '../admission/kind-name.js';
import type { AdmissionRequest, AdmissionResponse, JsonPatchOperation, Phase } from '../admission/types.js';
import type { StepFailedError } from '../base/errors.js';
import { MAX_MESSAGE_CHARS, clip } from '../base/limits.js';
import type { BindableLogger, Logger } from '../base/log.js';
import type { Metrics, StepOutcome } from '../metrics/metrics.js';
import type { PatchConflict, StepDetail, StepReport } from '../trace/step-report.js';
import type { StepLogs } from './invoke-step.js';
import type { WriteHistory } from '../patch/write-history.js';
import { shown } from '../steps/policy.js';
import type { ReviewTrace } from '../trace/review-trace.js';
import type { Step } from '../steps/step.js';

const NONE: ReadonlySet<string> = new Set();

const OUTCOME_OF_FAILURE: Readonly<Record<string, StepOutcome>> = { timeout: 'timeout', breaker_open: 'circuit_open' };

/** The step outcome a failure counts as: timeout, circuit_open, or error. */
export const outcomeOfFailure = (reason: string): StepOutcome => OUTCOME_OF_FAILURE[reason] ?? 'error';

/**
 * The stack of what a step threw, for its author: a failure of the gateway's own making (a timeout, an unusable
 * answer, a provider call) has none worth showing.
 */
function thrownStack(failure: StepFailedError): { stack: string } | undefined {
  const { cause } = failure;
  return failure.reason === 'error' && cause instanceof Error && cause.stack
    ? { stack: clip(cause.stack, MAX_MESSAGE_CHARS) }
    : undefined;
}

/** What a traced review's observer needs to say how much of the deadline each step had left. */
export interface TraceClock {
  readonly deadline: number;
  readonly now: () => number;
}

export class ReviewObserver implements StepLogs {
  readonly reports: StepReport[] = [];
  /** Per report, what the decision trace adds (decision-trace.ts); only for a traced review. */
  readonly details: StepDetail[] | undefined;
  /** The mutate phase's writes, each step's own patch worked out from them when a trace is read (traced reviews). */
  writes: WriteHistory | undefined;
  /** Each step's patch conflicts, for the trace. */
  conflicts: Map<string, { count: number; first: PatchConflict }> | undefined;
  private bound: BindableLogger | undefined;
  private stepLogs: Map<string, Logger> | undefined;
  /** The `OptIn` extensions whose steps were called, and those of them a step approved for (made on first use). */
  private optInCalled: Set<string> | undefined;
  private optInApproved: Set<string> | undefined;

  constructor(
    private readonly metrics: Metrics,
    private readonly log: BindableLogger,
    private readonly request: AdmissionRequest,
    private readonly phase: Phase,
    private readonly clock?: TraceClock,
    /** The review's trace, when tracing is on: told each step's outcome, and the review's answer. */
    readonly trace?: ReviewTrace,
  ) {
    this.details = clock ? [] : undefined;
  }

  /** The logger bound to the request's uid. */
  requestLog(): BindableLogger {
    return (this.bound ??= this.log.child({ uid: this.request.uid }));
  }

  /** The logger bound to the request and a step (a plugin's `ctx.log`). */
  stepLog(step: string): Logger {
    this.stepLogs ??= new Map();
    let log = this.stepLogs.get(step);
    if (!log) this.stepLogs.set(step, (log = this.requestLog().child({ step })));
    return log;
  }

  /** `round` 1: a reinvocation its matchConditions turned down. */
  skipped(step: Step, reason: string, round = 0): void {
    this.reports.push(
      round
        ? { step: step.name, outcome: 'skipped', ms: 0, reason, round }
        : { step: step.name, outcome: 'skipped', ms: 0, reason },
    );
    this.details?.push({
      step,
      message: undefined,
      patch: undefined,
      written: undefined,
      deadlineLeftMs: undefined,
      decided: false,
    });
    this.metrics.stepCalls.inc({ step: step.name, phase: this.phase, outcome: 'skipped' });
    this.trace?.stepSkipped(step, reason);
  }

  /**
   * For the trace: `patch`, what a provider returned; `written`, the number of the step's writes in the phase's
   * WriteHistory, from which its own patch is worked out.
   */
  approved(
    step: Step,
    ms: number,
    changed: boolean,
    round: number,
    patch?: readonly JsonPatchOperation[],
    written?: number,
  ): void {
    const outcome = changed ? 'patched' : 'allowed';
    // Every review reports each step: one object of one shape, not a spread of a conditional one.
    this.record(step, round ? { step: step.name, outcome, ms, round } : { step: step.name, outcome, ms });
    if (this.details) this.detail(step, ms, undefined, step.source === 'provider' ? patch : undefined, false, written);
  }

  /** `blocked`: the denial refuses the review (mode enforce). */
  denied(step: Step, ms: number, round: number, denial: Denial, blocked: boolean): void {
    this.record(step, {
      step: step.name,
      outcome: 'denied',
      ms,
      ...(round ? { round } : {}),
      ...(step.mode !== 'enforce' ? { mode: step.mode } : {}),
    });
    if (this.details) this.detail(step, ms, denial.message, undefined, blocked);
  }

  /** A failure, which refused the review or was ignored (`failedOpen`). */
  failed(step: Step, ms: number, failure: StepFailedError, round: number, failedOpen: boolean): void {
    this.record(
      step,
      {
        step: step.name,
        outcome: outcomeOfFailure(failure.reason),
        ms,
        reason: failure.reason,
        ...(failedOpen ? { failedOpen: true } : {}),
        ...(round ? { round } : {}),
      },
      failure,
    );
    if (this.details) this.detail(step, ms, failure.message, undefined, !failedOpen);
    if (failedOpen) this.metrics.failOpen.inc({ step: step.name });
    // An open breaker fails every review fast: its opening was logged once (warn), and each review's line
    // records circuit_open + failedOpen; a warn line per review on top would be thousands a second of noise.
    if (failedOpen && failure.reason === 'breaker_open') return;
    this.requestLog().warn(
      { step: step.name, reason: failure.reason, err: shown(failure.message), ...thrownStack(failure) },
      failedOpen ? 'step failed, failing open' : 'step failed, refusing the request',
    );
  }

  /** A step declaring `supplies` wrote outside them (its failure is reported as such too). */
  wroteOutsideSupplies(step: Step): void {
    this.metrics.writesOutsideSupplies.inc({ step: step.name });
  }

  /** Says which level each step ran in, for a phase whose plan ran steps concurrently. */
  leveled(levelOf: ReadonlyMap<string, number>): void {
    for (let i = 0; i < this.reports.length; i++) {
      const report = this.reports[i]!;
      const level = levelOf.get(report.step);
      if (level !== undefined) this.reports[i] = { ...report, level };
    }
  }

  /** A step rewrote or removed what earlier steps wrote: `count` paths, the first of them `first`. */
  patchConflicts(step: Step, count: number, first: PatchConflict): void {
    this.metrics.patchConflicts.inc({ step: step.name }, count);
    if (this.details) (this.conflicts ??= new Map()).set(step.name, { count, first });
    this.requestLog().debug({ step: step.name, ...first, conflicts: count }, 'patch conflict');
  }

  /** What each step had dropped of its own warnings and annotations over its limit. */
  notesDropped(dropped: Record<string, { warnings: number; annotations: number }> | undefined): void {
    if (dropped) this.requestLog().warn({ dropped }, 'warnings or audit annotations over a step limit were dropped');
  }

  /** The review's metrics and its one line; `route` names the steps it ran (README "Routes"). */
  reviewed(
    route: string,
    response: AdmissionResponse,
    patch: readonly JsonPatchOperation[] | undefined,
    seconds: number,
  ): void {
    const { request, phase } = this;
    this.trace?.reviewed(response, patch?.length ?? 0);
    this.metrics.requests.inc({ phase, operation: request.operation, allowed: String(response.allowed) });
    this.metrics.requestDuration.observe({ phase }, seconds);
    const fields = {
      uid: request.uid,
      route,
      operation: request.operation,
      // What the client named is its own to choose, of any length: the line stays bounded.
      kind: clip(kindName(request.kind)),
      namespace: request.namespace === undefined ? undefined : clip(request.namespace),
      name: request.name === undefined ? undefined : clip(request.name),
      dryRun: request.dryRun === true,
      allowed: response.allowed,
      ...(response.status ? { code: response.status.code, message: response.status.message } : {}),
      patchOps: patch?.length ?? 0,
      ms: Math.round(seconds * 1e6) / 1000,
      steps: this.reports,
      ...(this.log.isLevelEnabled?.('debug') && patch ? { patch } : {}),
    };
    if (this.log.infoData) this.log.infoData(fields, 'review');
    else this.log.info(fields, 'review');
  }

  /** The `OptIn` extensions a step was called for in this phase (README "Opt-in providers"). */
  calledOptIn(): ReadonlySet<string> {
    return this.optInCalled ?? NONE;
  }

  /** The `OptIn` extensions a step approved for in this phase: ran without failing, and not denied. */
  approvedOptIn(): ReadonlySet<string> {
    return this.optInApproved ?? NONE;
  }

  private detail(
    step: Step,
    ms: number,
    message: string | undefined,
    patch: readonly JsonPatchOperation[] | undefined,
    decided: boolean,
    written?: number,
  ): void {
    const clock = this.clock!;
    // One shape for every detail: this runs for every step of every traced review.
    this.details!.push({
      step,
      message,
      patch: patch?.length ? patch : undefined,
      written,
      deadlineLeftMs: Math.round((clock.deadline - clock.now() + ms) * 1000) / 1000,
      decided,
    });
  }

  private record(step: Step, report: StepReport, failure?: StepFailedError): void {
    if (step.attach === 'OptIn') {
      (this.optInCalled ??= new Set()).add(step.extension);
      if (report.outcome === 'allowed' || report.outcome === 'patched') {
        (this.optInApproved ??= new Set()).add(step.extension);
      }
    }
    this.reports.push(report);
    this.metrics.stepCalls.inc({ step: step.name, phase: this.phase, outcome: report.outcome });
    this.metrics.stepDuration.observe({ step: step.name, phase: this.phase }, report.ms / 1000);
    this.trace?.stepSettled(step, report, failure);
  }
}
