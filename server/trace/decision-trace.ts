/**
 * The decision trace of one review: each step in order with what it did and why (README "Explaining a
 * decision"). A review ends with a `TraceInput`, references to what the observer recorded while it ran (the
 * reports, a provider's returned patch, the phase's writes); the trace itself, and everything costly in it —
 * which rule excluded a step, each step's own patch operations — is built from them only when someone reads it.
 */
import { randomBytes } from 'node:crypto';
import type { Decision } from '../admission/decision.js';
import { kindName, resourceName } from '../admission/kind-name.js';
import type { AdmissionRequest, AdmissionResponse, JsonPatchOperation, Phase } from '../admission/types.js';
import type { FailurePolicy, Mode } from '../config/step-options.js';
import type { StepOutcome } from '../metrics/metrics.js';
import type { WriteHistory } from '../patch/write-history.js';
import type { Labels } from '../steps/label-selector.js';
import { explainPolicyRun, type PolicyTrace } from '../policy/explain-policy.js';
import { policyRunOf } from '../policy/policy-runs.js';
import { describeRule, explainMismatch } from './match-explanation.js';
import type { PatchConflict, ShadowStepTrace, StepDetail, StepReport } from './step-report.js';

/** One step of the trace, in the order the review reached it. */
export interface StepTrace {
  readonly step: string;
  readonly phase: Phase;
  readonly source: 'plugin' | 'provider' | 'policy';
  readonly mode: Mode;
  readonly failurePolicy: FailurePolicy;
  readonly outcome: StepOutcome;
  readonly ms: number;
  readonly round?: number;
  readonly level?: number;
  /** The match rule that selected the request, for a step that ran. */
  readonly rule?: string;
  /** Why it was skipped (with the rule or selector that excluded it), or the failure's reason. */
  readonly reason?: string;
  /** The denial's message, or the failure's. */
  readonly message?: string;
  /** The failure or the denial was let through (failurePolicy Ignore, or mode warn/audit). */
  readonly failedOpen?: boolean;
  /** The review ended on this step's refusal. */
  readonly decided?: boolean;
  /**
   * The JSON patch operations it contributed: a provider's as it returned them, an in-process step's from the
   * object as it found it to the object as it left it (values as it left them, whatever later steps did).
   */
  readonly patch?: readonly JsonPatchOperation[];
  /** Operations of its patch a kept trace left out (explain/trace-buffer.ts). */
  readonly patchOpsOmitted?: number;
  /** The review's warnings this step gave (or the gateway gave about it). */
  readonly warnings?: readonly string[];
  /** Paths it overwrote of earlier steps' writes: how many, and the first. */
  readonly conflicts?: { readonly count: number; readonly first: PatchConflict };
  /** A provider's circuit breaker, as the step's call left it. */
  readonly breaker?: string;
  /** Milliseconds left of the review's deadline when the step started. */
  readonly deadlineLeftMs?: number;
  /** A policy step: the expression that decided, the variables it read, its audit annotations, its cost. */
  readonly policy?: PolicyTrace;
}

/** What the trace says about the request: enough to find it, never its object. */
export interface TracedRequest {
  readonly operation: string;
  readonly kind: string;
  readonly resource: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly dryRun: boolean;
  readonly user?: string;
}

export interface DecisionTrace {
  readonly uid: string;
  /** The W3C trace id (32 hex): the incoming traceparent's, the tracer's, or made from the uid. */
  readonly traceId: string;
  /** The route that ran it: mutate, validate, or a split of one. */
  readonly route: string;
  readonly phase: Phase;
  /** When the review started, ISO 8601. */
  readonly startedAt: string;
  readonly ms: number;
  readonly request: TracedRequest;
  readonly allowed: boolean;
  readonly code?: number;
  readonly message?: string;
  /** The steps whose refusal the answer carries. */
  readonly decidedBy?: readonly string[];
  readonly patch?: readonly JsonPatchOperation[];
  /** Operations of the review's patch a kept trace left out. */
  readonly patchOpsOmitted?: number;
  readonly warnings?: readonly string[];
  readonly auditAnnotations?: Readonly<Record<string, string>>;
  readonly steps: readonly StepTrace[];
  /** The shadow steps' calls (README "Shadow steps"): filled in as each finishes, after the answer. */
  readonly shadow?: readonly ShadowStepTrace[];
}

export interface TraceInput {
  readonly request: AdmissionRequest;
  readonly response: AdmissionResponse;
  readonly decision: Decision;
  readonly route: string;
  readonly phase: Phase;
  /**
   * The trace id when the review came with one (the tracer's, the caller's); else made from the uid on first
   * need (traceIdOf), so that the reviews whose trace nobody reads never make one.
   */
  traceId: string | undefined;
  readonly startedAt: number;
  readonly ms: number;
  readonly reports: readonly StepReport[];
  readonly details: readonly StepDetail[];
  readonly namespaceLabels: Labels | undefined;
  /** The mutate phase's writes: each step's own patch is worked out from them when the trace is built. */
  readonly writes: WriteHistory | undefined;
  /** Operations of the decision's patch left out of a kept input. */
  readonly patchOpsOmitted?: number | undefined;
  readonly conflicts: ReadonlyMap<string, { readonly count: number; readonly first: PatchConflict }> | undefined;
  /** The shadow steps' calls, filled in after the answer (the same array, so a kept trace shows them too). */
  readonly shadow?: readonly ShadowStepTrace[] | undefined;
  /** How many entries `shadow` will have at most: the shadow steps run for the review. */
  readonly shadowSteps?: number | undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * The last uid traceIdOfUid was asked about and its answer: a review's trace id is made for its audit annotation
 * and asked for again when its trace is kept (packed-trace.ts), and this answers that without reading the uid again.
 */
let lastUid = '';
let lastTraceId: string | undefined;

/** Makes a W3C trace id of a request uid that is a UUID (32 hex digits once its dashes are gone). */
export function traceIdOfUid(uid: string): string | undefined {
  if (uid === lastUid) return lastTraceId;
  // The apiserver's uids are lower-case UUIDs; anything else gets a trace id of its own.
  const traceId =
    uid.length !== 36 || uid === NIL_UUID || !UUID.test(uid)
      ? undefined
      : uid.slice(0, 8) + uid.slice(9, 13) + uid.slice(14, 18) + uid.slice(19, 23) + uid.slice(24);
  lastUid = uid;
  lastTraceId = traceId;
  return traceId;
}

const randomTraceId = (): string => randomBytes(16).toString('hex');

/** The audit annotation that links the apiserver's audit log to the decision trace (README "Explaining a decision"). */
export const TRACE_ANNOTATION = 'decision-trace';

let annotatedUid: string | undefined;
let annotatedTraceId: string | undefined;
let lastAnnotation = '';

/**
 * The `decision-trace` annotation's value: what `GET /explain/<uid>` and a tracing backend find it by. The last
 * one is remembered (a pure function's cache), so that keeping the trace right after can tell it is this value
 * by identity rather than by its text.
 */
export function traceAnnotation(uid: string, traceId: string): string {
  if (uid === annotatedUid && traceId === annotatedTraceId) return lastAnnotation;
  annotatedUid = uid;
  annotatedTraceId = traceId;
  lastAnnotation = `uid=${uid} traceId=${traceId}`;
  return lastAnnotation;
}

/** The review's trace id: the one it came with, else its uid's digits, else a random one; the same every time. */
export const traceIdOf = (input: TraceInput): string =>
  (input.traceId ??= traceIdOfUid(input.request.uid) ?? randomTraceId());

/** A review once answered, for `ReviewerDeps.onReviewed`: its trace is built on first read. */
export class ReviewedRequest {
  private built: DecisionTrace | undefined;

  constructor(
    readonly request: AdmissionRequest,
    readonly response: AdmissionResponse,
    readonly decision: Decision,
    /** Refused, or answered with warnings or audit annotations (reviewer.ts isNotable). */
    readonly notable: boolean,
    /** What the trace is built from: references into the review, to be made smaller before it is kept. */
    readonly traceInput: TraceInput,
  ) {}

  get trace(): DecisionTrace {
    return (this.built ??= buildDecisionTrace(this.traceInput));
  }
}

/**
 * A policy step's account: as kept (kept-trace.ts made it bounded, and left values out as configured), or, for a
 * review not kept (`review --explain`, whose user gave the object), from its run, with the variables' values.
 */
function policyOf(input: TraceInput, detail: StepDetail | undefined, step: string): PolicyTrace | undefined {
  if (detail?.policy) return detail.policy;
  const run = policyRunOf(input.request, step);
  return run ? explainPolicyRun(run, { values: true }) : undefined;
}

export function buildDecisionTrace(input: TraceInput): DecisionTrace {
  const { request, response, decision } = input;
  const warnings = response.warnings;
  const decidedBy: string[] = [];
  // In chain order, reinvocations last: the validate phase reports its skipped steps before those it ran.
  const indexes = input.reports.map((_, i) => i);
  const order = (i: number) => input.details[i]?.step.order ?? 0;
  indexes.sort((a, b) => (input.reports[a]!.round ?? 0) - (input.reports[b]!.round ?? 0) || order(a) - order(b));
  const steps = indexes.map((i): StepTrace => {
    const report = input.reports[i]!;
    const detail = input.details[i];
    const step = detail?.step;
    const decided = detail?.decided === true;
    if (decided) decidedBy.push(report.step);
    const own = warnings?.filter((w) => w.startsWith(`${report.step}: `));
    const patch = detail?.patch ?? (detail?.written === undefined ? undefined : input.writes?.patchOf(detail.written));
    const reason =
      report.outcome === 'skipped' && report.reason && step?.matchSpec
        ? explainMismatch(report.reason, step.matchSpec, request, input.namespaceLabels)
        : report.reason;
    const policy =
      step?.source === 'policy' && report.outcome !== 'skipped' ? policyOf(input, detail, report.step) : undefined;
    const rule =
      report.outcome !== 'skipped' && step?.matchSpec
        ? describeRule(step.matchSpec, step.match.ruleIndex(request))
        : undefined;
    return {
      step: report.step,
      phase: step?.phase ?? input.phase,
      source: step?.source ?? 'plugin',
      mode: step?.mode ?? 'enforce',
      failurePolicy: step?.failurePolicy ?? 'Fail',
      outcome: report.outcome,
      ms: report.ms,
      ...(report.round ? { round: report.round } : {}),
      ...(report.level !== undefined ? { level: report.level } : {}),
      ...(rule ? { rule } : {}),
      ...(reason ? { reason } : {}),
      ...(detail?.message ? { message: detail.message } : {}),
      ...(report.failedOpen ? { failedOpen: true } : {}),
      ...(decided ? { decided: true } : {}),
      ...(patch?.length ? { patch } : {}),
      ...(detail?.patchOpsOmitted ? { patchOpsOmitted: detail.patchOpsOmitted } : {}),
      ...(own?.length ? { warnings: own } : {}),
      ...(input.conflicts?.has(report.step) ? { conflicts: input.conflicts.get(report.step)! } : {}),
      ...(step?.breakerState && report.outcome !== 'skipped' ? { breaker: step.breakerState() } : {}),
      ...(detail?.deadlineLeftMs !== undefined ? { deadlineLeftMs: detail.deadlineLeftMs } : {}),
      ...(policy ? { policy } : {}),
    };
  });
  return {
    uid: request.uid,
    traceId: traceIdOf(input),
    route: input.route,
    phase: input.phase,
    startedAt: new Date(input.startedAt).toISOString(),
    ms: input.ms,
    request: {
      operation: request.operation,
      kind: kindName(request.kind),
      resource: resourceName(request),
      ...(request.namespace ? { namespace: request.namespace } : {}),
      ...(request.name ? { name: request.name } : {}),
      dryRun: request.dryRun === true,
      ...(request.userInfo?.username ? { user: request.userInfo.username } : {}),
    },
    allowed: response.allowed,
    ...(response.status?.code !== undefined ? { code: response.status.code } : {}),
    ...(response.status?.message ? { message: response.status.message } : {}),
    ...(decidedBy.length ? { decidedBy } : {}),
    ...(decision.patch?.length ? { patch: decision.patch } : {}),
    ...(input.patchOpsOmitted ? { patchOpsOmitted: input.patchOpsOmitted } : {}),
    ...(warnings?.length ? { warnings } : {}),
    ...(response.auditAnnotations ? { auditAnnotations: response.auditAnnotations } : {}),
    steps,
    ...(input.shadow ? { shadow: input.shadow } : {}),
  };
}
