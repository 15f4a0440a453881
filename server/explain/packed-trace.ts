/**
 * A kept trace as the trace buffer holds it: its strings and numbers written as bytes (record-bytes.ts) into the
 * buffer's ring outside the JavaScript heap, beside the few objects a trace has to keep as objects (its steps,
 * and what only some reviews have). A kept trace lives until newer ones push it out of the ring, long enough to be
 * promoted to the old generation, where every mark-compact walks it; as bytes, an ordinary review's trace leaves
 * nothing on the heap but a reference to its route's steps array (docs/decisions.md, "Decision traces: what a trace
 * keeps is bounded, the buffer has a byte ceiling, lookups are indexed"). It is made back into a trace input only
 * when someone reads it. An ordinary review's is written straight from the review's trace input, clipped as it is
 * written (packReview), into the same bytes its kept input would give; the rest, and the kept inputs the
 * large-review lane sends, are written from a kept input (packTrace).
 */
import type { Decision } from '../admission/decision.js';
import type { AdmissionRequest, AdmissionResponse, JsonPatchOperation, Phase } from '../admission/types.js';
import { STEP_OUTCOMES } from '../metrics/metrics.js';
import type { PolicyTrace } from '../policy/explain-policy.js';
import type { Labels } from '../steps/label-selector.js';
import type { Step } from '../steps/step.js';
import {
  TRACE_ANNOTATION,
  traceAnnotation,
  traceIdOf,
  traceIdOfUid,
  type TraceInput,
} from '../trace/decision-trace.js';
import { MAX_ECHO_CHARS, MAX_MESSAGE_CHARS, clip } from '../base/limits.js';
import type { ShadowStepTrace, StepDetail, StepReport } from '../trace/step-report.js';
import {
  Keeper,
  MAX_TRACED_OPS,
  MAX_TRACED_PATH_CHARS,
  explainsSelectors,
  type KeepOptions,
  type KeptInput,
} from './kept-trace.js';
import { RecordReader, type RecordWriter } from './record-bytes.js';

/** What a packed trace keeps as objects: references, never copies. */
export interface TraceObjects {
  /** The trace input itself, when it could not be packed (an operation with a value). */
  readonly whole?: KeptInput;
  readonly status?: AdmissionResponse['status'];
  /** A refusal (an approval is packed). */
  readonly decision?: Decision;
  /** The labels a selector's skip is explained with. */
  readonly object?: AdmissionRequest['object'];
  readonly oldObject?: AdmissionRequest['oldObject'];
  readonly namespaceLabels?: Labels;
  readonly conflicts?: TraceInput['conflicts'];
  /** The same array the shadow steps fill in after the answer. */
  readonly shadow?: readonly ShadowStepTrace[];
  /** Each detail's policy account, by the detail's index. */
  readonly policies?: ReadonlyMap<number, PolicyTrace>;
}

/** What packing a trace leaves beside its bytes. */
export interface PackedTrace {
  readonly uid: string;
  /** The trace id it was given, or undefined when it is the uid's (traceIdOfUid). */
  readonly traceId: string | undefined;
  /** Each detail's step (interned: the reviews of one route share one array). */
  readonly steps: readonly Step[];
  readonly objects: TraceObjects | undefined;
}

/** What a packed trace is found by: the first parts of its bytes. */
export interface TraceKeys {
  readonly uid: string;
  readonly traceId: string | undefined;
}

// Bits of the flags parts.
const K_TRACE_ID = 1;
const K_CLIPPED = 2;
const K_WHOLE = 4;

const R_SUBRESOURCE = 1;
const R_USERNAME = 2;
const R_NAME = 4;
const R_NAMESPACE = 8;
const R_DRY_RUN = 16;
const R_RESPONSE_UID = 32;

const T_WARNINGS = 1;
const T_ANNOTATIONS = 2;
const T_PATCH = 4;
const T_PATCH_OMITTED = 8;
const T_SHADOW_STEPS = 16;
const T_ALLOWED = 32;

const S_REASON = 1;
const S_ROUND = 2;
const S_FAILED_OPEN = 4;
const S_MODE = 8;
const S_LEVEL = 16;

// What an audit annotation's value is: its text follows, or it is the decision-trace annotation of the keys.
const A_TEXT = 0;
const A_LINKED = 1;

const D_MESSAGE = 1;
const D_PATCH = 2;
const D_OMITTED = 4;
const D_DEADLINE = 8;
const D_DECIDED = 16;

/** Gives up on packing: an operation with a value (kept with explain.includeObjects). */
class CannotPack extends Error {}

/** An operation's code is its place here; a step's operation that is the review's operation k is OPS.length + k. */
const OPS: ReadonlyArray<JsonPatchOperation['op']> = ['add', 'remove', 'replace', 'move', 'copy', 'test'];

/** A string as kept: clipped by `k` when it writes a review's input, as it is when the input is kept already. */
const kept = (k: Keeper | undefined, s: string, max: number): string => (k === undefined ? s : k.text(s, max));

/**
 * Writes operations as kept: a step's (given `review`, the review's) each as a reference to the same operation of
 * the review's, when it is there (a step's patch is its share of the review's, nearly always), else whole. From a
 * review's input (`k`), the first MAX_TRACED_OPS of each, their paths clipped and their values left out, as
 * keptInput keeps them.
 */
function writeOps(
  w: RecordWriter,
  ops: readonly JsonPatchOperation[],
  k: Keeper | undefined,
  review?: readonly JsonPatchOperation[],
): void {
  const n = k === undefined ? ops.length : Math.min(ops.length, MAX_TRACED_OPS);
  w.count(n);
  let at = 0;
  for (let i = 0; i < n; i++) {
    const op = ops[i]!;
    let path = op.path;
    let from = fromOf(op);
    if (k !== undefined) {
      k.op();
      path = k.text(path, MAX_TRACED_PATH_CHARS);
      if (from !== undefined) from = k.text(from, MAX_TRACED_PATH_CHARS);
    } else if (valueOf(op) !== undefined) throw new CannotPack();
    const same = review === undefined ? -1 : sameOpIn(review, op, path, from, at, k);
    if (same >= 0) {
      w.count(OPS.length + same);
      at = same + 1;
      continue;
    }
    const code = OPS.indexOf(op.op);
    if (code < 0) throw new CannotPack();
    w.count(code);
    w.string(path);
    if (from !== undefined) w.string(from);
  }
}

/** An operation's value, if it has one (kept with explain.includeObjects). */
const valueOf = (op: JsonPatchOperation): unknown =>
  op.op === 'add' || op.op === 'replace' || op.op === 'test' ? op.value : undefined;

/** An operation's `from`, if it has one. */
const fromOf = (op: JsonPatchOperation): string | undefined =>
  op.op === 'move' || op.op === 'copy' ? op.from : undefined;

/** A path (or `from`) as kept: clipped when written from a review's input (`k`), without counting it again. */
const keptPath = (k: Keeper | undefined, path: string | undefined): string | undefined =>
  k === undefined || path === undefined ? path : clip(path, MAX_TRACED_PATH_CHARS);

/**
 * Where the review's operations as kept (`k`: the first MAX_TRACED_OPS of `ops`) have one equal to `op`, whose
 * path and `from` as kept are `path` and `from`, looking from `at` on first (a step's come in the review's order).
 */
function sameOpIn(
  ops: readonly JsonPatchOperation[],
  op: JsonPatchOperation,
  path: string,
  from: string | undefined,
  at: number,
  k: Keeper | undefined,
): number {
  const n = k === undefined ? ops.length : Math.min(ops.length, MAX_TRACED_OPS);
  for (let i = 0; i < n; i++) {
    const j = (at + i) % n;
    const other = ops[j]!;
    // From a review's input a step's operation is nearly always the review's own object.
    if (other === op) return j;
    if (other.op === op.op && keptPath(k, other.path) === path && keptPath(k, fromOf(other)) === from) return j;
  }
  return -1;
}

function readOps(r: RecordReader, review?: readonly JsonPatchOperation[]): JsonPatchOperation[] {
  const out: JsonPatchOperation[] = [];
  for (let n = r.count(); n > 0; n--) {
    const code = r.count();
    if (code >= OPS.length) {
      out.push(review![code - OPS.length]!);
      continue;
    }
    const op = OPS[code]!;
    const path = r.string();
    if (op === 'remove') out.push({ op, path });
    else if (op === 'move' || op === 'copy') out.push({ op, from: r.string(), path });
    // As kept without explain.includeObjects: the value left out.
    else out.push({ op, path, value: undefined });
  }
  return out;
}

/** Step arrays already held, so that the traces of one route share theirs. */
export class StepArrays {
  private readonly held: Array<readonly Step[]> = [];

  constructor(private readonly max = 8) {}

  of(details: readonly StepDetail[]): readonly Step[] {
    for (const steps of this.held) if (sameSteps(steps, details)) return steps;
    const steps = details.map((d) => d.step);
    if (this.held.length === this.max) this.held.shift();
    this.held.push(steps);
    return steps;
  }
}

function sameSteps(steps: readonly Step[], details: readonly StepDetail[]): boolean {
  if (steps.length !== details.length) return false;
  for (let i = 0; i < steps.length; i++) if (steps[i] !== details[i]!.step) return false;
  return true;
}

/**
 * Writes a kept input into `w` (see the header) and returns what is kept beside the bytes; an input that cannot
 * be packed is written as its keys alone and kept whole.
 */
export function packTrace(kept: KeptInput, w: RecordWriter, stepArrays: StepArrays): PackedTrace {
  const { input } = kept;
  const uid = input.request.uid;
  const traceId = givenTraceId(uid, input.traceId);
  try {
    writeKeys(w, uid, traceId, kept.clipped, false, kept.bytes);
    const objects = write(w, input, undefined);
    return { uid, traceId, steps: stepArrays.of(input.details), objects };
  } catch (err) {
    if (!(err instanceof CannotPack)) throw err;
    writeKeys(w, uid, traceId, kept.clipped, true, kept.bytes);
    return { uid, traceId, steps: [], objects: { whole: kept } };
  }
}

/** What packing a review's input straight leaves: as packTrace's, and what keptInput would count (its `bytes`). */
export interface PackedReview {
  readonly packed: PackedTrace;
  readonly bytes: number;
}

/**
 * Writes a review's trace input into `w` as packTrace writes `keptInput(input, options)`, the same bytes, without
 * making the kept input: strings are clipped, operations cut to MAX_TRACED_OPS and their values left out as they
 * are written. For an ordinary review only (`plainReview`); undefined for the rest, which are kept the other way.
 */
export function packReview(
  input: TraceInput,
  options: KeepOptions,
  w: RecordWriter,
  stepArrays: StepArrays,
): PackedReview | undefined {
  if (!plainReview(input, options)) return undefined;
  const { uid } = input.request;
  const k = new Keeper(options, input.request);
  k.text(uid, Infinity);
  const traceId = givenTraceId(uid, traceIdOf(input));
  const flagsAt = writeKeys(w, uid, traceId, false, false, 0);
  // The count ends the keys; it and the flags are known once the rest is written.
  const bytesAt = w.length - 8;
  try {
    write(w, input, k);
  } catch (err) {
    if (err instanceof CannotPack) return undefined;
    throw err;
  }
  w.recount(flagsAt, keyFlags(traceId, k.clipped, false));
  w.renumber(bytesAt, k.bytes);
  return { packed: { uid, traceId, steps: stepArrays.of(input.details), objects: undefined }, bytes: k.bytes };
}

/**
 * Whether a review's trace keeps nothing but strings and numbers (packReview writes it): allowed, no status, no
 * selector's skip to explain, no conflicts, shadow steps or policy steps, no operation values kept.
 */
function plainReview(input: TraceInput, options: KeepOptions): boolean {
  if (options.includeObjects || !input.decision.allowed || input.response.status) return false;
  if (input.conflicts || input.shadow || explainsSelectors(input.reports)) return false;
  for (const detail of input.details) if (detail.step.source === 'policy') return false;
  return true;
}

/** A record keeps a trace id only when it is not the one made from its uid (traceIdOfUid). */
const givenTraceId = (uid: string, traceId: string | undefined): string | undefined =>
  traceId === traceIdOfUid(uid) ? undefined : traceId;

function keyFlags(traceId: string | undefined, clipped: boolean, whole: boolean): number {
  return (traceId !== undefined ? K_TRACE_ID : 0) | (clipped ? K_CLIPPED : 0) | (whole ? K_WHOLE : 0);
}

/** Writes a record's keys from its start; returns where its flags are. */
function writeKeys(
  w: RecordWriter,
  uid: string,
  traceId: string | undefined,
  clipped: boolean,
  whole: boolean,
  bytes: number,
): number {
  w.reset();
  w.string(uid);
  const flagsAt = w.length;
  w.count(keyFlags(traceId, clipped, whole));
  if (traceId !== undefined) w.string(traceId);
  w.number(bytes);
  return flagsAt;
}

/** The uid and the trace id given of the packed trace at `at` in `bytes`. */
export function traceKeys(bytes: Buffer, at: number): TraceKeys {
  const r = new RecordReader(bytes, at);
  const uid = r.string();
  return { uid, traceId: r.count() & K_TRACE_ID ? r.string() : undefined };
}

/**
 * Writes an input's parts: a kept input's as they are, a review's (`k`, packReview) as keptInput would keep them,
 * which then has no objects to keep.
 */
function write(w: RecordWriter, input: TraceInput, k: Keeper | undefined): TraceObjects | undefined {
  const { request, response, decision } = input;
  const username = request.userInfo.username;
  // Kept only when they are not empty (keptRequest).
  const subResource = request.subResource || undefined;
  const name = request.name || undefined;
  const namespace = request.namespace || undefined;
  w.count(
    (subResource !== undefined ? R_SUBRESOURCE : 0) |
      (username !== undefined ? R_USERNAME : 0) |
      (name !== undefined ? R_NAME : 0) |
      (namespace !== undefined ? R_NAMESPACE : 0) |
      (request.dryRun ? R_DRY_RUN : 0) |
      (response.uid !== request.uid ? R_RESPONSE_UID : 0),
  );
  const { kind, resource } = request;
  w.string(kept(k, kind.group, MAX_ECHO_CHARS));
  w.string(kept(k, kind.version, MAX_ECHO_CHARS));
  w.string(kept(k, kind.kind, MAX_ECHO_CHARS));
  w.string(kept(k, resource.group, MAX_ECHO_CHARS));
  w.string(kept(k, resource.version, MAX_ECHO_CHARS));
  w.string(kept(k, resource.resource, MAX_ECHO_CHARS));
  w.string(request.operation);
  if (subResource !== undefined) w.string(kept(k, subResource, MAX_ECHO_CHARS));
  if (username !== undefined) w.string(kept(k, username, MAX_ECHO_CHARS));
  if (name !== undefined) w.string(kept(k, name, MAX_ECHO_CHARS));
  if (namespace !== undefined) w.string(kept(k, namespace, MAX_ECHO_CHARS));
  if (response.uid !== request.uid) w.string(response.uid);
  w.string(input.route);
  w.string(input.phase);
  w.number(input.startedAt);
  w.number(input.ms);
  const { warnings, auditAnnotations } = response;
  const patch = decision.allowed ? decision.patch : undefined;
  const patchOpsOmitted =
    k === undefined
      ? input.patchOpsOmitted
      : patch && patch.length > MAX_TRACED_OPS
        ? patch.length - MAX_TRACED_OPS
        : undefined;
  w.count(
    (warnings ? T_WARNINGS : 0) |
      (auditAnnotations ? T_ANNOTATIONS : 0) |
      (patch ? T_PATCH : 0) |
      (patchOpsOmitted !== undefined ? T_PATCH_OMITTED : 0) |
      (input.shadowSteps !== undefined ? T_SHADOW_STEPS : 0) |
      (response.allowed ? T_ALLOWED : 0),
  );
  if (warnings) {
    k?.count(warnings);
    w.count(warnings.length);
    for (const warning of warnings) w.string(warning);
  }
  if (auditAnnotations) {
    k?.countRecord(auditAnnotations);
    const keys = Object.keys(auditAnnotations);
    w.count(keys.length);
    // The decision-trace annotation's value is made from the keys: written as a mark (it was made just before).
    // Its trace id was made already (keptInput, or packReview).
    const linked = input.traceId === undefined ? undefined : traceAnnotation(request.uid, input.traceId);
    for (const key of keys) {
      w.string(key);
      const value = auditAnnotations[key]!;
      if (key === TRACE_ANNOTATION && value === linked) w.count(A_LINKED);
      else {
        w.count(A_TEXT);
        w.string(value);
      }
    }
  }
  if (patch) writeOps(w, patch, k);
  if (patchOpsOmitted !== undefined) w.count(patchOpsOmitted);
  if (input.shadowSteps !== undefined) w.count(input.shadowSteps);
  k?.steps(input);
  w.count(input.reports.length);
  let from = 0;
  for (const report of input.reports) from = writeReport(w, report, input.details, from);
  w.count(input.details.length);
  let policies: Map<number, PolicyTrace> | undefined;
  input.details.forEach((detail, i) => {
    writeDetail(w, detail, patch, k, input.writes);
    if (detail.policy) (policies ??= new Map()).set(i, detail.policy);
  });
  // A review's input is written only when it has no objects to keep (plainReview).
  if (k !== undefined) return undefined;
  const { status } = response;
  const { object, oldObject } = request;
  const { namespaceLabels, conflicts, shadow } = input;
  if (!status && decision.allowed && !object && !oldObject && !namespaceLabels && !conflicts && !shadow && !policies)
    return undefined;
  return {
    ...(status ? { status } : {}),
    ...(decision.allowed ? {} : { decision }),
    ...(object ? { object } : {}),
    ...(oldObject ? { oldObject } : {}),
    ...(namespaceLabels ? { namespaceLabels } : {}),
    ...(conflicts ? { conflicts } : {}),
    ...(shadow ? { shadow } : {}),
    ...(policies ? { policies } : {}),
  };
}

/**
 * Writes a report: its step as the number of the detail of the step of that name (the steps that ran, in the
 * order the reports name them, so looked for from `from` on), its outcome as its place in STEP_OUTCOMES; either
 * as a string when it is not there. Returns where to look for the next report's step.
 */
function writeReport(w: RecordWriter, report: StepReport, details: readonly StepDetail[], from: number): number {
  const k = detailNamed(details, report.step, from);
  w.count(k + 1);
  if (k < 0) w.string(report.step);
  const outcome = STEP_OUTCOMES.indexOf(report.outcome);
  w.count(outcome + 1);
  if (outcome < 0) w.string(report.outcome);
  w.number(report.ms);
  w.count(
    (report.reason !== undefined ? S_REASON : 0) |
      (report.round !== undefined ? S_ROUND : 0) |
      (report.failedOpen !== undefined ? S_FAILED_OPEN : 0) |
      (report.mode !== undefined ? S_MODE : 0) |
      (report.level !== undefined ? S_LEVEL : 0),
  );
  if (report.reason !== undefined) w.string(report.reason);
  if (report.round !== undefined) w.number(report.round);
  if (report.failedOpen !== undefined) w.count(report.failedOpen ? 1 : 0);
  if (report.mode !== undefined) w.string(report.mode);
  if (report.level !== undefined) w.number(report.level);
  return k < 0 ? from : k + 1;
}

function detailNamed(details: readonly StepDetail[], name: string, from: number): number {
  for (let i = 0; i < details.length; i++) {
    const k = (from + i) % details.length;
    if (details[k]!.step.name === name) return k;
  }
  return -1;
}

/** Writes a detail as kept: from a review's input (`k`), its message clipped and its own patch worked out. */
function writeDetail(
  w: RecordWriter,
  detail: StepDetail,
  review: readonly JsonPatchOperation[] | undefined,
  k: Keeper | undefined,
  writes: TraceInput['writes'],
): void {
  let patch = detail.patch;
  let omitted = detail.patchOpsOmitted;
  if (k !== undefined) {
    // As keptDetails: an in-process step's own operations, from the phase's writes.
    const written = detail.written === undefined ? undefined : writes?.patchOf(detail.written);
    patch ??= written?.length ? written : undefined;
    omitted = patch ? Math.max(patch.length - MAX_TRACED_OPS, 0) : undefined;
  }
  const message = detail.message === undefined ? undefined : kept(k, detail.message, MAX_MESSAGE_CHARS);
  w.count(
    (message !== undefined ? D_MESSAGE : 0) |
      (patch !== undefined ? D_PATCH : 0) |
      (omitted !== undefined ? D_OMITTED : 0) |
      (detail.deadlineLeftMs !== undefined ? D_DEADLINE : 0) |
      (detail.decided ? D_DECIDED : 0),
  );
  if (message !== undefined) w.string(message);
  if (patch !== undefined) writeOps(w, patch, k, review);
  if (omitted !== undefined) w.count(omitted);
  if (detail.deadlineLeftMs !== undefined) w.number(detail.deadlineLeftMs);
}

/** The kept input the packed trace at `at` in `bytes` was made from, made again. */
export function unpackTrace(bytes: Buffer, at: number, steps: readonly Step[], objects: TraceObjects = {}): KeptInput {
  const r = new RecordReader(bytes, at);
  const uid = r.string();
  const keyFlags = r.count();
  const traceId = keyFlags & K_TRACE_ID ? r.string() : undefined;
  const keptBytes = r.number();
  if (objects.whole) return objects.whole;
  const flags = r.count();
  const kind = { group: r.string(), version: r.string(), kind: r.string() };
  const resource = { group: r.string(), version: r.string(), resource: r.string() };
  const request: AdmissionRequest = {
    uid,
    kind,
    resource,
    operation: r.string() as AdmissionRequest['operation'],
    userInfo: {},
  };
  if (flags & R_SUBRESOURCE) request.subResource = r.string();
  if (flags & R_USERNAME) request.userInfo = { username: r.string() };
  if (flags & R_NAME) request.name = r.string();
  if (flags & R_NAMESPACE) request.namespace = r.string();
  if (flags & R_DRY_RUN) request.dryRun = true;
  if (objects.object) request.object = objects.object;
  if (objects.oldObject) request.oldObject = objects.oldObject;
  const responseUid = flags & R_RESPONSE_UID ? r.string() : uid;
  const route = r.string();
  const phase = r.string() as Phase;
  const startedAt = r.number();
  const ms = r.number();
  const top = r.count();
  const response: AdmissionResponse = { uid: responseUid, allowed: (top & T_ALLOWED) !== 0 };
  if (objects.status) response.status = objects.status;
  if (top & T_WARNINGS) {
    const warnings: string[] = [];
    for (let n = r.count(); n > 0; n--) warnings.push(r.string());
    response.warnings = warnings;
  }
  if (top & T_ANNOTATIONS) {
    const annotations: Record<string, string> = {};
    for (let n = r.count(); n > 0; n--) {
      const key = r.string();
      annotations[key] = r.count() === A_LINKED ? traceAnnotation(uid, traceId ?? traceIdOfUid(uid)!) : r.string();
    }
    response.auditAnnotations = annotations;
  }
  const patch = top & T_PATCH ? readOps(r) : undefined;
  const decision: Decision = objects.decision ?? (patch ? { allowed: true, patch } : { allowed: true });
  const patchOpsOmitted = top & T_PATCH_OMITTED ? r.count() : undefined;
  const shadowSteps = top & T_SHADOW_STEPS ? r.count() : undefined;
  const reports: StepReport[] = [];
  for (let n = r.count(); n > 0; n--) reports.push(readReport(r, steps));
  const details: StepDetail[] = [];
  for (let i = 0, n = r.count(); i < n; i++) details.push(readDetail(r, steps[i]!, objects.policies?.get(i), patch));
  const input: TraceInput = {
    request,
    response,
    decision,
    route,
    phase,
    traceId,
    startedAt,
    ms,
    reports,
    details,
    namespaceLabels: objects.namespaceLabels,
    writes: undefined,
    conflicts: objects.conflicts,
    shadow: objects.shadow,
    shadowSteps,
    patchOpsOmitted,
  };
  return { input, bytes: keptBytes, clipped: (keyFlags & K_CLIPPED) !== 0 };
}

function readReport(r: RecordReader, steps: readonly Step[]): StepReport {
  const k = r.count();
  const step = k > 0 ? steps[k - 1]!.name : r.string();
  const outcome = r.count();
  const named = outcome > 0 ? STEP_OUTCOMES[outcome - 1]! : (r.string() as StepReport['outcome']);
  const ms = r.number();
  const flags = r.count();
  return {
    step,
    outcome: named,
    ms,
    ...(flags & S_REASON ? { reason: r.string() } : {}),
    ...(flags & S_ROUND ? { round: r.number() } : {}),
    ...(flags & S_FAILED_OPEN ? { failedOpen: r.count() === 1 } : {}),
    ...(flags & S_MODE ? { mode: r.string() as NonNullable<StepReport['mode']> } : {}),
    ...(flags & S_LEVEL ? { level: r.number() } : {}),
  };
}

function readDetail(
  r: RecordReader,
  step: Step,
  policy: PolicyTrace | undefined,
  review: readonly JsonPatchOperation[] | undefined,
): StepDetail {
  const flags = r.count();
  return {
    step,
    message: flags & D_MESSAGE ? r.string() : undefined,
    patch: flags & D_PATCH ? readOps(r, review) : undefined,
    written: undefined,
    ...(flags & D_OMITTED ? { patchOpsOmitted: r.count() } : {}),
    deadlineLeftMs: flags & D_DEADLINE ? r.number() : undefined,
    decided: (flags & D_DECIDED) !== 0,
    ...(policy ? { policy } : {}),
  };
}
