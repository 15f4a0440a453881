/**
 * The decision traces of the most recent reviews, for `GET /explain/<uid>`: a ring of a fixed number of reviews.
 * What a review leaves here is made small and bounded as it is added, whatever the object: the request without
 * its object, at most a few dozen patch operations per step and for the review, their values (object content)
 * only when configured, and who wrote each of them instead of the written-paths tree. The trace itself is built
 * only when someone asks for it.
 */
import { kindName } from '../admission/kind-name.js';
import type { AdmissionRequest, AdmissionResponse, JsonPatchOperation, KubeObject } from '../admission/types.js';
import { clip } from '../base/limits.js';
import type { DecisionTrace, ReviewedRequest, StepDetail, TraceInput } from '../chain/decision-trace.js';
import { buildDecisionTrace, traceIdOf } from '../chain/decision-trace.js';
import { writersAt } from '../patch/written-paths.js';
import { NAMESPACE_SELECTOR_DOES_NOT_MATCH, OBJECT_SELECTOR_DOES_NOT_MATCH } from '../chain/match.js';

/** Patch operations kept per step and for the review; the rest are counted. */
export const MAX_TRACED_OPS = 50;
/** Labels of an object kept to explain a selector's skip; an object with more keeps none. */
const MAX_KEPT_LABELS = 64;

/** A trace as `GET /explain` serves it. */
export type KeptTrace = DecisionTrace & {
  /** The values of patch operations were left out (explain.includeObjects is off). */
  readonly redacted: boolean;
};

/** A recent review, as `GET /explain` lists it. */
export interface TraceSummary {
  readonly uid: string;
  readonly traceId: string;
  readonly route: string;
  readonly startedAt: string;
  readonly operation: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly allowed: boolean;
  readonly ms: number;
}

/** An operation as kept: its value only with objects kept (JSON leaves out a value that is undefined). */
function keptOp(op: JsonPatchOperation, includeObjects: boolean): JsonPatchOperation {
  if (includeObjects) return structuredClone(op);
  if (op.op === 'remove') return { op: op.op, path: op.path };
  if (op.op === 'move' || op.op === 'copy') return { op: op.op, from: op.from, path: op.path };
  return { op: op.op, path: op.path, value: undefined };
}

function keptOps(ops: readonly JsonPatchOperation[], includeObjects: boolean): JsonPatchOperation[] {
  return ops.slice(0, MAX_TRACED_OPS).map((op) => keptOp(op, includeObjects));
}

/** The labels of an object, when a selector's skip is to be explained and there are not too many. */
function keptLabels(object: KubeObject | null | undefined): KubeObject | undefined {
  const labels = object?.metadata?.labels;
  if (!labels || typeof labels !== 'object') return undefined;
  const entries = Object.entries(labels);
  if (entries.length > MAX_KEPT_LABELS) return undefined;
  return { metadata: { labels: Object.fromEntries(entries.map(([k, v]) => [clip(k), clip(String(v))])) } };
}

/** The request without its object: what a trace names, and the labels a selector's skip is explained with. */
function keptRequest(request: AdmissionRequest, withLabels: boolean): AdmissionRequest {
  const kept: AdmissionRequest = {
    uid: request.uid,
    kind: request.kind,
    resource: request.resource,
    operation: request.operation,
    userInfo: request.userInfo.username === undefined ? {} : { username: clip(request.userInfo.username) },
  };
  if (request.subResource) kept.subResource = request.subResource;
  if (request.name) kept.name = request.name;
  if (request.namespace) kept.namespace = request.namespace;
  if (request.dryRun) kept.dryRun = true;
  if (!withLabels) return kept;
  const object = keptLabels(request.object);
  const oldObject = keptLabels(request.oldObject);
  if (object) kept.object = object;
  if (oldObject) kept.oldObject = oldObject;
  return kept;
}

const SELECTOR_SKIPS = new Set([NAMESPACE_SELECTOR_DOES_NOT_MATCH, OBJECT_SELECTOR_DOES_NOT_MATCH]);

/** A review's trace input made small enough to keep (see the header). */
export function keptInput(input: TraceInput, includeObjects: boolean): TraceInput {
  // One object literal of one shape, no spreads: this runs once for every review.
  const patch = input.decision.patch;
  const ops = patch?.length ? keptOps(patch, includeObjects) : undefined;
  let details = input.details;
  for (let i = 0; i < details.length; i++) {
    const detail = details[i]!;
    if (!detail.patch) continue;
    if (details === input.details) details = details.slice();
    (details as StepDetail[])[i] = {
      step: detail.step,
      message: detail.message,
      patch: keptOps(detail.patch, includeObjects),
      patchOpsOmitted: Math.max(detail.patch.length - MAX_TRACED_OPS, 0),
      deadlineLeftMs: detail.deadlineLeftMs,
      decided: detail.decided,
    };
  }
  const { owners, response, reports } = input;
  let withLabels = false;
  for (const report of reports) if (report.reason !== undefined && SELECTOR_SKIPS.has(report.reason)) withLabels = true;
  return {
    request: keptRequest(input.request, withLabels),
    response: keptResponse(response),
    decision: ops ? { allowed: true, patch: ops } : input.decision,
    route: input.route,
    phase: input.phase,
    traceId: traceIdOf(input),
    startedAt: input.startedAt,
    ms: input.ms,
    reports,
    details,
    namespaceLabels: input.namespaceLabels,
    owners: undefined,
    conflicts: input.conflicts,
    // The same array: the shadow steps fill it in after the answer.
    shadow: input.shadow,
    writers: ops && owners ? ops.map((_, i) => (owners[i] ? writersAt(owners[i]) : [])) : undefined,
    patchOpsOmitted: patch && patch.length > MAX_TRACED_OPS ? patch.length - MAX_TRACED_OPS : undefined,
  };
}

/** The response without its base64 patch, which can be as large as the object. */
function keptResponse(response: AdmissionResponse): AdmissionResponse {
  const kept: AdmissionResponse = { uid: response.uid, allowed: response.allowed };
  if (response.status) kept.status = response.status;
  if (response.warnings) kept.warnings = response.warnings;
  if (response.auditAnnotations) kept.auditAnnotations = response.auditAnnotations;
  return kept;
}

export class TraceBuffer {
  private readonly ring: Array<TraceInput | undefined>;
  private readonly byUid = new Map<string, number>();
  private next = 0;

  constructor(
    readonly size: number,
    private readonly includeObjects: boolean,
    /** `notable`: only refused, warned or annotated reviews (the rest would flush them out, and cost more). */
    readonly keep: 'notable' | 'all' = 'all',
  ) {
    this.ring = new Array<TraceInput | undefined>(size);
  }

  /** Keeps a review's trace, in place of the oldest. */
  add(reviewed: ReviewedRequest): void {
    if (this.size === 0 || (this.keep === 'notable' && !reviewed.notable)) return;
    const slot = this.next;
    this.next = (slot + 1) % this.size;
    const old = this.ring[slot];
    if (old && this.byUid.get(old.request.uid) === slot) this.byUid.delete(old.request.uid);
    this.ring[slot] = keptInput(reviewed.traceInput, this.includeObjects);
    this.byUid.set(reviewed.request.uid, slot);
  }

  /** The trace of the review with this uid, if it is still kept. */
  get(uid: string): KeptTrace | undefined {
    const slot = this.byUid.get(uid);
    const input = slot === undefined ? undefined : this.ring[slot];
    return input ? this.trace(input) : undefined;
  }

  /** The kept traces with this trace id (a review's mutate and validate calls may share one), oldest first. */
  withTraceId(traceId: string): KeptTrace[] {
    return this.newestFirst(Number.MAX_SAFE_INTEGER, (t) => traceIdOf(t) === traceId)
      .reverse()
      .map((input) => this.trace(input));
  }

  /** The most recent reviews, newest first; `denied` keeps only refused ones. */
  recent(limit: number, denied = false): TraceSummary[] {
    return this.newestFirst(limit, (t) => !denied || !t.response.allowed).map((t) => {
      const { request } = t;
      return {
        uid: request.uid,
        traceId: traceIdOf(t),
        route: t.route,
        startedAt: new Date(t.startedAt).toISOString(),
        operation: request.operation,
        kind: kindName(request.kind),
        ...(request.namespace ? { namespace: request.namespace } : {}),
        ...(request.name ? { name: request.name } : {}),
        allowed: t.response.allowed,
        ms: t.ms,
      };
    });
  }

  private trace(input: TraceInput): KeptTrace {
    return { ...buildDecisionTrace(input), redacted: !this.includeObjects };
  }

  private newestFirst(limit: number, keep: (t: TraceInput) => boolean): TraceInput[] {
    const out: TraceInput[] = [];
    for (let i = 1; i <= this.size && out.length < limit; i++) {
      const input = this.ring[(this.next - i + this.size) % this.size];
      if (input && keep(input)) out.push(input);
    }
    return out;
  }
}
