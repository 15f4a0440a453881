/**
 * Shadow steps (a chain entry's `shadow: true`; README "Shadow steps"): each runs on real traffic beside the
 * live chain and never affects the answer — it starts after the answer is decided (on a later turn of the event
 * loop, so not even its synchronous work is on the review's path), alone, on the object the live phase saw, as
 * if it enforced. What it would have done is compared with the answer: a denial of an allowed review is
 * `would_deny`, an approval of a denied one `would_allow`, and a mutating step's operations the answer's patch
 * lacks `patch_differs`. Calls at once are bounded; one over the bound is dropped and counted, never queued.
 */
import { Registry } from 'prom-client';
import type { Decision } from '../admission/decision.js';
import type { AdmissionRequest, JsonPatchOperation, Phase } from '../admission/types.js';
import { errorMessage } from '../base/errors.js';
import { uncounted, type ExceptionSource } from '../exceptions/exception-source.js';
import { MAX_ECHO_CHARS, clip } from '../base/limits.js';
import type { BindableLogger } from '../base/log.js';
import { createMetrics, type Metrics, type StepOutcome } from '../metrics/metrics.js';
import type { Labels } from '../steps/label-selector.js';
import { runMutatePhase } from './mutate.js';
import { ReviewNotes } from './notes.js';
import type { ReviewContext } from './review-context.js';
import { ReviewObserver } from './review-observer.js';
import { reviewExceptions } from './review-exceptions.js';
import { planSteps } from '../steps/step-graph.js';
import type { Step } from '../steps/step.js';
import { runValidatePhase } from './validate.js';
import type { Disagreement, ShadowStepTrace } from '../trace/step-report.js';

/** Shadow step calls in flight at most, across reviews; more are dropped (`shadow_calls_total{outcome="dropped"}`). */
export const MAX_SHADOW_CALLS = 64;

/**
 * What one shadow step's entry of a decision trace holds at most (the trace buffer counts it against its
 * bytes): its message cut to this many characters, and this many of its operations, each path cut to
 * MAX_ECHO_CHARS; the rest are counted.
 */
export const MAX_SHADOW_MESSAGE_CHARS = 1024;
export const MAX_SHADOW_TRACED_OPS = 10;

export interface ShadowRun {
  readonly request: AdmissionRequest;
  readonly phase: Phase;
  readonly steps: readonly Step[];
  /** The live answer's decision. */
  readonly decision: Decision;
  readonly namespaceLabels: Labels | undefined;
  /** The exceptions in force: a step one lets the request off is skipped in shadow too (not counted as use). */
  readonly exceptions?: ExceptionSource | undefined;
  /** Each step's entry is pushed here as it finishes (the decision trace's `shadow` list). */
  readonly traced?: ShadowStepTrace[];
}

export interface ShadowDeps {
  readonly metrics: Metrics;
  readonly log: BindableLogger;
  readonly now: () => number;
  readonly maxCalls?: number;
}

/** Whether the answer lacks any of `ops` (compared as JSON). */
function opsMissing(ops: readonly JsonPatchOperation[], answer: readonly JsonPatchOperation[] | undefined) {
  const have = new Set((answer ?? []).map((op) => JSON.stringify(op)));
  return ops.filter((op) => !have.has(JSON.stringify(op)));
}

export function disagreementOf(
  outcome: StepOutcome,
  live: Decision,
  shadow: Decision | undefined,
): { kind: Disagreement; patch?: JsonPatchOperation[] } | undefined {
  if (outcome === 'denied') return live.allowed ? { kind: 'would_deny' } : undefined;
  if (outcome !== 'allowed' && outcome !== 'patched') return undefined;
  if (!live.allowed) return { kind: 'would_allow' };
  const missing = shadow?.allowed && shadow.patch ? opsMissing(shadow.patch, live.patch) : [];
  return missing.length > 0 ? { kind: 'patch_differs', patch: missing } : undefined;
}

export class ShadowRunner {
  private calls = 0;
  private readonly maxCalls: number;
  /** The shadow steps' own step metrics and review lines are not the live chain's: they go to a registry of their own. */
  private readonly quiet: Metrics;

  constructor(private readonly deps: ShadowDeps) {
    this.maxCalls = deps.maxCalls ?? MAX_SHADOW_CALLS;
    this.quiet = createMetrics(new Registry(), { defaultMetrics: false });
  }

  /** Starts the run on a later turn; returns at once. */
  run(run: ShadowRun): void {
    const admitted = run.steps.filter((step) => {
      if (this.calls < this.maxCalls) {
        this.calls++;
        return true;
      }
      this.deps.metrics.shadowCalls.inc({ step: step.name, outcome: 'dropped' });
      run.traced?.push({ step: step.name, outcome: 'dropped' });
      return false;
    });
    if (admitted.length === 0) return;
    setImmediate(() => {
      for (const step of admitted) {
        void this.runStep(step, run)
          .catch((err: unknown) =>
            this.deps.log.warn({ step: step.name, err: errorMessage(err) }, 'shadow step failed'),
          )
          .finally(() => this.calls--);
      }
    });
  }

  private async runStep(original: Step, run: ShadowRun): Promise<void> {
    // As if it enforced: what it would do to the answer if it were live.
    const step: Step = { ...original, mode: 'enforce' };
    const { request, phase } = run;
    const started = this.deps.now();
    const observer = new ReviewObserver(this.quiet, this.deps.log.child({ shadow: true }), request, phase);
    const notes = new ReviewNotes();
    const ctx: ReviewContext = {
      request,
      phase,
      deadline: started + step.timeoutMs,
      namespaceLabels: run.namespaceLabels,
      extensions: undefined,
      notes,
      observer,
      now: this.deps.now,
      large: false,
      exceptions: reviewExceptions(run.exceptions && uncounted(run.exceptions), request, run.namespaceLabels, notes),
    };
    const decision =
      phase === 'mutate' ? await runMutatePhase(planSteps([step]), ctx) : await runValidatePhase([step], ctx);
    const report = observer.reports[0];
    const outcome: StepOutcome = report?.outcome ?? 'skipped';
    this.deps.metrics.shadowCalls.inc({ step: step.name, outcome });
    if (outcome === 'skipped') return;
    const found = disagreementOf(outcome, run.decision, decision);
    if (found) this.deps.metrics.shadowDisagreements.inc({ step: step.name, kind: found.kind });
    run.traced?.push({
      step: step.name,
      outcome,
      ms: report?.ms ?? Math.round((this.deps.now() - started) * 1000) / 1000,
      ...(found ? { disagreement: found.kind } : {}),
      ...(!decision.allowed ? { message: clip(decision.message, MAX_SHADOW_MESSAGE_CHARS) } : {}),
      ...(found?.patch ? tracedPatch(found.patch) : {}),
    });
  }
}

/** A shadow step's operations as its trace entry shows them: the first few, op and path. */
function tracedPatch(ops: readonly JsonPatchOperation[]): Pick<ShadowStepTrace, 'patch' | 'patchOpsOmitted'> {
  const patch = ops.slice(0, MAX_SHADOW_TRACED_OPS).map(({ op, path }) => ({ op, path: clip(path, MAX_ECHO_CHARS) }));
  return ops.length > patch.length ? { patch, patchOpsOmitted: ops.length - patch.length } : { patch };
}
