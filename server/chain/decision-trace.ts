/**
 * The decision trace of one review: each step in order with what it did and why (README "Explaining a
 * decision"). Built once the review has answered, from what the observer recorded while it ran; the live path
 * only keeps references (a provider's returned patch, the final patch, the written-paths tree), and everything
 * costly — which rule excluded a step, whose write each operation of the patch is — is worked out here.
 */
import type { Decision } from '../admission/decision.js';
import type { AdmissionRequest, AdmissionResponse, JsonPatchOperation, Phase } from '../admission/types.js';
import type { FailurePolicy, Mode } from '../config/step-options.js';
import type { StepOutcome } from '../metrics/metrics.js';
import type { WrittenPaths } from '../patch/written-paths.js';
import type { Labels } from './label-selector.js';
import { explainMismatch } from './match-explanation.js';
import type { PatchConflict, StepReport } from './review-observer.js';
import type { ShadowStepTrace } from './shadow.js';
import type { Step } from './step.js';

/** One step of the trace, in the order the review reached it. */
export interface StepTrace {
  readonly step: string;
  readonly phase: Phase;
  readonly source: 'plugin' | 'provider';
  readonly mode: Mode;
  readonly failurePolicy: FailurePolicy;
  readonly outcome: StepOutcome;
  readonly ms: number;
  readonly round?: number;
  readonly level?: number;
  /** Why it was skipped (with the rule or selector that excluded it), or the failure's reason. */
  readonly reason?: string;
  /** The denial's message, or the failure's. */
  readonly message?: string;
  /** The failure or the denial was let through (failurePolicy Ignore, or mode warn/audit). */
  readonly failedOpen?: boolean;
  /** The review ended on this step's refusal. */
  readonly decided?: boolean;
  /**
   * The JSON patch operations it contributed: a provider's as it returned them, an in-process step's as the
   * review's patch carries its writes.
   */
  readonly patch?: readonly JsonPatchOperation[];
  /** The review's warnings this step gave (or the gateway gave about it). */
  readonly warnings?: readonly string[];
  /** Paths it overwrote of earlier steps' writes: how many, and the first. */
  readonly conflicts?: { readonly count: number; readonly first: PatchConflict };
  /** A provider's circuit breaker, as the step's call left it. */
  readonly breaker?: string;
  /** Milliseconds left of the review's deadline when the step started. */
  readonly deadlineLeftMs?: number;
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
  readonly warnings?: readonly string[];
  readonly auditAnnotations?: Readonly<Record<string, string>>;
  readonly steps: readonly StepTrace[];
  /** The shadow steps' calls (README "Shadow steps"): filled in as each finishes, after the answer. */
  readonly shadow?: readonly ShadowStepTrace[];
}

/** What the observer keeps per report beyond the log line's fields, when the review is traced. */
export interface StepDetail {
  readonly step: Step;
  readonly message?: string;
  readonly patch?: readonly JsonPatchOperation[];
  readonly deadlineLeftMs?: number;
  /** Its refusal is in the answer (a denial in mode enforce, a failure not let through). */
  readonly decided?: boolean;
}

export interface TraceInput {
  readonly request: AdmissionRequest;
  readonly response: AdmissionResponse;
  readonly decision: Decision;
  readonly route: string;
  readonly phase: Phase;
  readonly traceId: string;
  readonly startedAt: number;
  readonly ms: number;
  readonly reports: readonly StepReport[];
  readonly details: readonly StepDetail[];
  readonly namespaceLabels: Labels | undefined;
  /** Who wrote what, for the mutate phase's patch. */
  readonly written: WrittenPaths | undefined;
  readonly conflicts: ReadonlyMap<string, { readonly count: number; readonly first: PatchConflict }> | undefined;
}

const groupKind = (request: AdmissionRequest): string =>
  `${request.kind.group ? `${request.kind.group}/` : ''}${request.kind.version}/${request.kind.kind}`;

const resourceOf = (request: AdmissionRequest): string =>
  `${request.resource.group ? `${request.resource.group}/` : ''}${request.resource.version}/${request.resource.resource}${
    request.subResource ? `/${request.subResource}` : ''
  }`;

/** Makes a W3C trace id of a request uid that is a UUID (32 hex digits once its dashes are gone). */
export function traceIdOfUid(uid: string): string | undefined {
  const hex = uid.replace(/-/g, '').toLowerCase();
  return /^[0-9a-f]{32}$/.test(hex) && !/^0+$/.test(hex) ? hex : undefined;
}

export function buildDecisionTrace(input: TraceInput): DecisionTrace {
  const { request, response, decision } = input;
  const warnings = response.warnings;
  const patchOf = attributedPatch(decision, input.written);
  const decidedBy: string[] = [];
  const steps = input.reports.map((report, i): StepTrace => {
    const detail = input.details[i];
    const step = detail?.step;
    const decided = detail?.decided === true;
    if (decided) decidedBy.push(report.step);
    const own = warnings?.filter((w) => w.startsWith(`${report.step}: `));
    const patch = detail?.patch ?? patchOf.get(report.step);
    const reason =
      report.outcome === 'skipped' && report.reason && step?.matchSpec
        ? explainMismatch(report.reason, step.matchSpec, request, input.namespaceLabels)
        : report.reason;
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
      ...(reason ? { reason } : {}),
      ...(detail?.message ? { message: detail.message } : {}),
      ...(report.failedOpen ? { failedOpen: true } : {}),
      ...(decided ? { decided: true } : {}),
      ...(patch?.length ? { patch } : {}),
      ...(own?.length ? { warnings: own } : {}),
      ...(input.conflicts?.has(report.step) ? { conflicts: input.conflicts.get(report.step)! } : {}),
      ...(step?.breakerState && report.outcome !== 'skipped' ? { breaker: step.breakerState() } : {}),
      ...(detail?.deadlineLeftMs !== undefined ? { deadlineLeftMs: detail.deadlineLeftMs } : {}),
    };
  });
  return {
    uid: request.uid,
    traceId: input.traceId,
    route: input.route,
    phase: input.phase,
    startedAt: new Date(input.startedAt).toISOString(),
    ms: input.ms,
    request: {
      operation: request.operation,
      kind: groupKind(request),
      resource: resourceOf(request),
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
    ...(warnings?.length ? { warnings } : {}),
    ...(response.auditAnnotations ? { auditAnnotations: response.auditAnnotations } : {}),
    steps,
  };
}

/** The review's patch, each operation given to the step whose write it carries. */
function attributedPatch(decision: Decision, written: WrittenPaths | undefined): Map<string, JsonPatchOperation[]> {
  const byStep = new Map<string, JsonPatchOperation[]>();
  if (!decision.patch || !written) return byStep;
  for (const op of decision.patch) {
    for (const writer of written.writersOf(op.path)) {
      let ops = byStep.get(writer);
      if (!ops) byStep.set(writer, (ops = []));
      ops.push(op);
    }
  }
  return byStep;
}
