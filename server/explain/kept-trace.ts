/**
 * A review's trace input made small and bounded before the trace buffer keeps it, whatever the review carried:
 * the request without its object; every string clipped, saying so in the string itself (and `clipped` in the
 * trace); at most MAX_TRACED_OPS patch operations per step and for the review; their values (object content)
 * only when configured, redacted as a recording redacts them, each at most MAX_TRACED_VALUE_BYTES and all of a
 * trace's at most MAX_TRACED_VALUES_BYTES; each step's own operations instead of the phase's writes. What is
 * kept is counted (`bytes`, about what the heap holds for it), so that the buffer can hold its total under a
 * ceiling. The trace itself is built only when someone asks for it.
 */
import type {
  AdmissionRequest,
  AdmissionResponse,
  GroupVersionKind,
  GroupVersionResource,
  JsonPatchOperation,
  KubeObject,
} from '../admission/types.js';
import { MAX_ECHO_CHARS, MAX_MESSAGE_CHARS, clip } from '../base/limits.js';
import type { TraceInput } from '../trace/decision-trace.js';
import { traceIdOf } from '../trace/decision-trace.js';
import { NAMESPACE_SELECTOR_DOES_NOT_MATCH, OBJECT_SELECTOR_DOES_NOT_MATCH } from '../steps/match.js';
import type { PatchConflict, StepDetail } from '../trace/step-report.js';
import { MAX_SHADOW_MESSAGE_CHARS, MAX_SHADOW_TRACED_OPS } from '../dispatch/shadow.js';
import type { Redaction } from '../recording/redact.js';
import { explainPolicyRun, explainedBytes, type PolicyTrace } from '../policy/explain-policy.js';
import { policyRunOf } from '../policy/policy-runs.js';

/** Patch operations kept per step and for the review; the rest are counted. */
export const MAX_TRACED_OPS = 50;
/** Characters kept of a patch operation's path (or `from`). */
export const MAX_TRACED_PATH_CHARS = 1024;
/** Bytes (as JSON) of one operation's value kept with explain.includeObjects; a larger value is left out. */
export const MAX_TRACED_VALUE_BYTES = 4096;
/** Bytes (as JSON) of all the values one trace keeps; past them, values are left out. */
export const MAX_TRACED_VALUES_BYTES = 32 * 1024;
/** Labels of an object kept to explain a selector's skip; an object with more keeps none. */
const MAX_KEPT_LABELS = 64;

// What the heap holds besides the strings counted one by one: the objects of a trace, a step, an operation.
const TRACE_BYTES = 1280;
const STEP_BYTES = 256;
const OP_BYTES = 128;
/** One shadow step's entry at most (shadow.ts bounds it), counted for each shadow step run for the review. */
const SHADOW_ENTRY_BYTES = STEP_BYTES + MAX_SHADOW_MESSAGE_CHARS + MAX_SHADOW_TRACED_OPS * (OP_BYTES + MAX_ECHO_CHARS);

export interface KeepOptions {
  /** Keep the values of patch operations (explain.includeObjects). */
  readonly includeObjects: boolean;
  /** What a recording redacts, redacted in the values kept too. */
  readonly redaction: Redaction;
}

/** A trace input as the buffer keeps it. */
export interface KeptInput {
  readonly input: TraceInput;
  /** About what the heap holds for it. */
  readonly bytes: number;
  /** Some string or value was cut or left out (each says so where it was). */
  readonly clipped: boolean;
}

/** What a value left out reads. */
const TOO_LARGE = `<left out: more than ${MAX_TRACED_VALUE_BYTES} bytes>`;
const NO_ROOM = `<left out: the trace keeps ${MAX_TRACED_VALUES_BYTES} bytes of values at most>`;

/** The size of `value` as JSON, or undefined once it passes `max` (never walking further than that). */
export function jsonBytesWithin(value: unknown, max: number): number | undefined {
  let total = 0;
  const walk = (v: unknown): boolean => {
    if (typeof v === 'string') total += v.length + 2;
    else if (typeof v !== 'object' || v === null) total += String(v).length;
    else if (Array.isArray(v)) {
      total += 2;
      for (const item of v as unknown[]) if (!walk(item) || ++total > max) return false;
    } else {
      total += 2;
      for (const key in v) {
        total += key.length + 4;
        if (!walk((v as Record<string, unknown>)[key]) || total > max) return false;
      }
    }
    return total <= max;
  };
  return walk(value) ? total : undefined;
}

/**
 * Keeps one review's strings and values within their bounds, counting what it keeps: for `keptInput`, and for
 * the packer that writes an ordinary review's trace straight from its input (packed-trace.ts, `packReview`).
 */
export class Keeper {
  bytes = TRACE_BYTES;
  clipped = false;
  private valueRoom = MAX_TRACED_VALUES_BYTES;

  constructor(
    private readonly options: KeepOptions,
    private readonly request: AdmissionRequest,
  ) {}

  text(s: string, max: number): string {
    if (s.length <= max) {
      this.bytes += s.length;
      return s;
    }
    this.clipped = true;
    const cut = clip(s, max);
    // Its ellipsis makes it two bytes a character.
    this.bytes += 2 * cut.length;
    return cut;
  }

  /** Counts a review's step reports and its shadow steps' entries. */
  steps(input: TraceInput): void {
    this.bytes += input.reports.length * STEP_BYTES + (input.shadowSteps ?? 0) * SHADOW_ENTRY_BYTES;
  }

  /** Counts an operation kept (its path and `from` are counted by `text`). */
  op(): void {
    this.bytes += OP_BYTES;
  }

  /** The first operations of `ops`, as kept. */
  ops(ops: readonly JsonPatchOperation[]): JsonPatchOperation[] {
    const first = ops.length > MAX_TRACED_OPS ? ops.slice(0, MAX_TRACED_OPS) : ops;
    if (!this.options.includeObjects) return first.map((op) => this.keptOp(op, undefined));
    return this.options.redaction
      .patch(this.request, first)!
      .map((op) => this.keptOp(op, 'value' in op ? op : undefined));
  }

  private keptOp(op: JsonPatchOperation, valued: { readonly value: unknown } | undefined): JsonPatchOperation {
    this.op();
    const path = this.text(op.path, MAX_TRACED_PATH_CHARS);
    if (op.op === 'remove') return { op: op.op, path };
    if (op.op === 'move' || op.op === 'copy')
      return { op: op.op, from: this.text(op.from, MAX_TRACED_PATH_CHARS), path };
    // JSON leaves out a value that is undefined: without includeObjects, an operation keeps its op and path.
    return { op: op.op, path, value: valued ? this.value(valued.value) : undefined };
  }

  /** A copy of the value, or a note of why it was left out. */
  private value(value: unknown): unknown {
    const bytes = jsonBytesWithin(value, MAX_TRACED_VALUE_BYTES);
    if (bytes === undefined || bytes > this.valueRoom) {
      this.clipped = true;
      return this.text(bytes === undefined ? TOO_LARGE : NO_ROOM, Infinity);
    }
    this.valueRoom -= bytes;
    this.bytes += bytes;
    return structuredClone(value);
  }

  /** `v` itself when no part needs clipping (the common case: nothing to copy). */
  gvk(v: GroupVersionKind): GroupVersionKind {
    const { group, version, kind } = v;
    if (this.keptWhole(group, version, kind)) return v;
    return {
      group: this.text(group, MAX_ECHO_CHARS),
      version: this.text(version, MAX_ECHO_CHARS),
      kind: this.text(kind, MAX_ECHO_CHARS),
    };
  }

  gvr(v: GroupVersionResource): GroupVersionResource {
    const { group, version, resource } = v;
    if (this.keptWhole(group, version, resource)) return v;
    return {
      group: this.text(group, MAX_ECHO_CHARS),
      version: this.text(version, MAX_ECHO_CHARS),
      resource: this.text(resource, MAX_ECHO_CHARS),
    };
  }

  /** Whether three strings are kept as they are (none over MAX_ECHO_CHARS), counting them when they are. */
  private keptWhole(a: string, b: string, c: string): boolean {
    if (a.length > MAX_ECHO_CHARS || b.length > MAX_ECHO_CHARS || c.length > MAX_ECHO_CHARS) return false;
    this.bytes += a.length + b.length + c.length;
    return true;
  }

  /** The labels of an object, when a selector's skip is to be explained and there are not too many. */
  labels(object: KubeObject | null | undefined): KubeObject | undefined {
    const labels = object?.metadata?.labels;
    if (!labels || typeof labels !== 'object') return undefined;
    const entries = Object.entries(labels);
    if (entries.length > MAX_KEPT_LABELS) return undefined;
    const kept = entries.map(([k, v]) => [this.text(k, MAX_ECHO_CHARS), this.text(String(v), MAX_ECHO_CHARS)]);
    return { metadata: { labels: Object.fromEntries(kept) as Record<string, string> } };
  }

  /**
   * A policy step's run, explained (bounded by explain-policy.ts); the values of its variables are object
   * content, kept only as patch values are (includeObjects), and never for a request the redaction covers.
   */
  policy(step: string): PolicyTrace | undefined {
    const run = policyRunOf(this.request, step);
    if (!run) return undefined;
    const { includeObjects, redaction } = this.options;
    const redacted = includeObjects && redaction.redacts(this.request);
    const explained = explainPolicyRun(run, {
      values: includeObjects && !redacted,
      omitted: redacted ? 'redacted (record.redact, or a Secret)' : 'explain.includeObjects is off',
    });
    this.bytes += explainedBytes(explained);
    return explained;
  }

  /** Counts strings kept as they are (bounded where they were made). */
  count(strings: readonly string[]): void {
    for (const s of strings) this.bytes += s.length;
  }

  /** Counts the keys and values of a record kept as it is. */
  countRecord(record: Readonly<Record<string, string>>): void {
    for (const key in record) this.bytes += key.length + record[key]!.length;
  }
}

/** The request without its object: what a trace names, and the labels a selector's skip is explained with. */
function keptRequest(
  request: AdmissionRequest,
  withLabels: boolean,
  k: Keeper,
  redaction: Redaction,
): AdmissionRequest {
  const { username } = request.userInfo;
  const kept: AdmissionRequest = {
    // At most MAX_UID_CHARS (admission/codec.ts), and the key the trace is found by: never cut.
    uid: k.text(request.uid, Infinity),
    kind: k.gvk(request.kind),
    resource: k.gvr(request.resource),
    operation: request.operation,
    userInfo: username === undefined ? {} : { username: k.text(username, MAX_ECHO_CHARS) },
  };
  if (request.subResource) kept.subResource = k.text(request.subResource, MAX_ECHO_CHARS);
  if (request.name) kept.name = k.text(request.name, MAX_ECHO_CHARS);
  if (request.namespace) kept.namespace = k.text(request.namespace, MAX_ECHO_CHARS);
  if (request.dryRun) kept.dryRun = true;
  if (!withLabels) return kept;
  const object = k.labels(request.object);
  const oldObject = k.labels(request.oldObject);
  if (object) kept.object = object;
  if (oldObject) kept.oldObject = oldObject;
  return object || oldObject ? redaction.request(kept) : kept;
}

/** The response without its base64 patch, which can be as large as the object. */
function keptResponse(response: AdmissionResponse, k: Keeper): AdmissionResponse {
  const kept: AdmissionResponse = { uid: response.uid, allowed: response.allowed };
  const { status, warnings, auditAnnotations } = response;
  if (status) {
    const message = status.message === undefined ? undefined : k.text(status.message, MAX_MESSAGE_CHARS);
    kept.status = message === status.message ? status : { ...status, message };
  }
  if (warnings) {
    k.count(warnings);
    kept.warnings = warnings;
  }
  if (auditAnnotations) {
    k.countRecord(auditAnnotations);
    kept.auditAnnotations = auditAnnotations;
  }
  return kept;
}

/**
 * The steps' details with their messages clipped and their patches kept small (an in-process step's worked out
 * from the phase's writes, which are not kept); the same array when nothing changes.
 */
function keptDetails(input: TraceInput, k: Keeper): readonly StepDetail[] {
  const { details, writes } = input;
  let kept = details;
  for (let i = 0; i < details.length; i++) {
    const detail = details[i]!;
    const message = detail.message === undefined ? undefined : k.text(detail.message, MAX_MESSAGE_CHARS);
    const written = detail.written === undefined ? undefined : writes?.patchOf(detail.written);
    const patch = detail.patch ?? (written?.length ? written : undefined);
    const policy = detail.step.source === 'policy' ? k.policy(detail.step.name) : undefined;
    if (!patch && !policy && detail.written === undefined && message === detail.message) continue;
    if (kept === details) kept = details.slice();
    (kept as StepDetail[])[i] = {
      step: detail.step,
      message,
      patch: patch ? k.ops(patch) : undefined,
      written: undefined,
      patchOpsOmitted: patch ? Math.max(patch.length - MAX_TRACED_OPS, 0) : undefined,
      deadlineLeftMs: detail.deadlineLeftMs,
      decided: detail.decided,
      ...(policy ? { policy } : {}),
    };
  }
  return kept;
}

type Conflicts = TraceInput['conflicts'];

/** The paths each step overwrote, clipped; the same map when none needs it. */
function keptConflicts(conflicts: Conflicts, k: Keeper): Conflicts {
  if (!conflicts) return undefined;
  let clipped = false;
  const kept = new Map<string, { readonly count: number; readonly first: PatchConflict }>();
  for (const [step, { count, first }] of conflicts) {
    const path = k.text(first.path, MAX_TRACED_PATH_CHARS);
    const earlierPath = k.text(first.earlierPath, MAX_TRACED_PATH_CHARS);
    k.bytes += STEP_BYTES;
    if (path !== first.path || earlierPath !== first.earlierPath) clipped = true;
    kept.set(step, { count, first: { ...first, path, earlierPath } });
  }
  return clipped ? kept : conflicts;
}

const SELECTOR_SKIPS: ReadonlySet<string> = new Set([
  NAMESPACE_SELECTOR_DOES_NOT_MATCH,
  OBJECT_SELECTOR_DOES_NOT_MATCH,
]);

/** Whether a step was skipped by a selector: its trace keeps the labels that explain why. */
export function explainsSelectors(reports: TraceInput['reports']): boolean {
  for (const report of reports) if (report.reason !== undefined && SELECTOR_SKIPS.has(report.reason)) return true;
  return false;
}

/** A review's trace input made small enough to keep (see the header). */
export function keptInput(input: TraceInput, options: KeepOptions): KeptInput {
  const k = new Keeper(options, input.request);
  // One object literal of one shape, no spreads: this runs for every review kept.
  const patch = input.decision.patch;
  const ops = patch?.length ? k.ops(patch) : undefined;
  const { reports } = input;
  const withLabels = explainsSelectors(reports);
  k.steps(input);
  const namespaceLabels = withLabels ? input.namespaceLabels : undefined;
  if (namespaceLabels) k.countRecord(namespaceLabels);
  const kept: TraceInput = {
    request: keptRequest(input.request, withLabels, k, options.redaction),
    response: keptResponse(input.response, k),
    decision: ops ? { allowed: true, patch: ops } : keptDecision(input.decision, k),
    route: input.route,
    phase: input.phase,
    traceId: traceIdOf(input),
    startedAt: input.startedAt,
    ms: input.ms,
    reports,
    details: keptDetails(input, k),
    namespaceLabels,
    writes: undefined,
    conflicts: keptConflicts(input.conflicts, k),
    // The same array: the shadow steps fill it in after the answer (their entries are counted above).
    shadow: input.shadow,
    shadowSteps: input.shadowSteps,
    patchOpsOmitted: patch && patch.length > MAX_TRACED_OPS ? patch.length - MAX_TRACED_OPS : undefined,
  };
  return { input: kept, bytes: k.bytes, clipped: k.clipped };
}

/** A decision without a patch to keep: a denial's message clipped. */
function keptDecision(decision: TraceInput['decision'], k: Keeper): TraceInput['decision'] {
  if (decision.allowed) return decision;
  const message = k.text(decision.message, MAX_MESSAGE_CHARS);
  return message === decision.message ? decision : { ...decision, message };
}
