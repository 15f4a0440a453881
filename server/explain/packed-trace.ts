/**
 * A kept trace as the trace buffer holds it: its strings and numbers joined into one string, beside the few
 * objects a trace has to keep as objects (its steps, and what only some reviews have). A kept trace lives until
 * newer ones push it out of the ring, long enough to be promoted to the old generation, where every mark-compact
 * walks it; as the objects of a kept input (kept-trace.ts) a warned-on Pod review's trace is about forty of them,
 * as a packed one it is two, and less than half the bytes (docs/decisions.md, "Decision traces: what a trace
 * keeps is bounded, the buffer has a byte ceiling, lookups are indexed"). It is made back into a trace input only
 * when someone reads it.
 */
import type { Decision } from '../admission/decision.js';
import type { AdmissionRequest, AdmissionResponse, JsonPatchOperation, Phase } from '../admission/types.js';
import type { PolicyTrace } from '../policy/explain-policy.js';
import type { Labels } from '../steps/label-selector.js';
import type { Step } from '../steps/step.js';
import { traceIdOfUid, type TraceInput } from '../trace/decision-trace.js';
import type { ShadowStepTrace, StepDetail, StepReport } from '../trace/step-report.js';
import type { KeptInput } from './kept-trace.js';

/** Between the parts of `text`; a trace with a string that has it is kept whole instead. */
const SEP = '\u0000';

/** What a packed trace keeps as objects: references, never copies. */
interface Objects {
  /** The trace input itself, when it could not be packed (a string with SEP in it, an operation with a value). */
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

export interface PackedTrace {
  readonly uid: string;
  /** The trace id it was given, or undefined when it is the uid's (traceIdOfUid). */
  readonly traceId: string | undefined;
  readonly text: string;
  /** Each detail's step (interned: the reviews of one route share one array). */
  readonly steps: readonly Step[];
  readonly objects: Objects | undefined;
  readonly bytes: number;
  readonly clipped: boolean;
}

// Bits of the flags parts.
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

const D_MESSAGE = 1;
const D_PATCH = 2;
const D_OMITTED = 4;
const D_DEADLINE = 8;
const D_DECIDED = 16;

/** Integers V8 holds unboxed (and turns into text fast). */
const MAX_SMALL = 2 ** 30;
const TILDE = 0x7e;
/** `startedAt` is written as the milliseconds since this, a small integer for the first twelve days. */
const EPOCH = Date.now();

/** Gives up on packing: a string that holds SEP, or an operation with a value. */
class CannotPack extends Error {}

class Writer {
  readonly parts: string[] = [];

  str(s: string): void {
    if (s.includes(SEP)) throw new CannotPack();
    this.parts.push(s);
  }

  /** A count or a set of flags. */
  num(n: number): void {
    this.parts.push(String(n));
  }

  /** A whole number of milliseconds (a time since EPOCH) as it is; any other number after a `~`. */
  time(t: number): void {
    this.parts.push(Number.isInteger(t) && t < MAX_SMALL && t > -MAX_SMALL ? String(t) : `~${t}`);
  }

  /**
   * Milliseconds as the reviewer rounds them (to the microsecond), written as the whole number of microseconds:
   * turning a small integer into text is far cheaper than a fraction. Any other number is written as it is,
   * after a `~`.
   */
  ms(x: number): void {
    const us = Math.round(x * 1000);
    this.parts.push(us / 1000 === x && us < MAX_SMALL && us > -MAX_SMALL ? String(us) : `~${x}`);
  }

  ops(ops: readonly JsonPatchOperation[]): void {
    this.num(ops.length);
    for (const op of ops) {
      if ('value' in op && op.value !== undefined) throw new CannotPack();
      this.parts.push(op.op);
      this.str(op.path);
      if (op.op === 'move' || op.op === 'copy') this.str(op.from);
    }
  }
}

class Reader {
  private i = 0;
  constructor(private readonly parts: readonly string[]) {}

  str(): string {
    return this.parts[this.i++]!;
  }

  num(): number {
    return Number(this.parts[this.i++]);
  }

  time(): number {
    const text = this.parts[this.i++]!;
    return Number(text.charCodeAt(0) === TILDE ? text.slice(1) : text);
  }

  ms(): number {
    const text = this.parts[this.i++]!;
    return text.charCodeAt(0) === TILDE ? Number(text.slice(1)) : Number(text) / 1000;
  }

  ops(): JsonPatchOperation[] {
    const out: JsonPatchOperation[] = [];
    for (let n = this.num(); n > 0; n--) {
      const op = this.str() as JsonPatchOperation['op'];
      const path = this.str();
      if (op === 'remove') out.push({ op, path });
      else if (op === 'move' || op === 'copy') out.push({ op, from: this.str(), path });
      // As kept without explain.includeObjects: the value left out.
      else out.push({ op, path, value: undefined });
    }
    return out;
  }
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

/** A kept input packed (see the header); kept whole when it cannot be. */
export function packTrace(kept: KeptInput, stepArrays: StepArrays): PackedTrace {
  const { input } = kept;
  const uid = input.request.uid;
  const traceId = input.traceId === undefined || input.traceId === traceIdOfUid(uid) ? undefined : input.traceId;
  try {
    const w = new Writer();
    const objects = write(w, input);
    return {
      uid,
      traceId,
      text: w.parts.join(SEP),
      steps: stepArrays.of(input.details),
      objects,
      bytes: kept.bytes,
      clipped: kept.clipped,
    };
  } catch (err) {
    if (!(err instanceof CannotPack)) throw err;
    return { uid, traceId, text: '', steps: [], objects: { whole: kept }, bytes: kept.bytes, clipped: kept.clipped };
  }
}

function write(w: Writer, input: TraceInput): Objects | undefined {
  const { request, response, decision } = input;
  const username = request.userInfo.username;
  w.str(request.uid);
  w.num(
    (request.subResource !== undefined ? R_SUBRESOURCE : 0) |
      (username !== undefined ? R_USERNAME : 0) |
      (request.name !== undefined ? R_NAME : 0) |
      (request.namespace !== undefined ? R_NAMESPACE : 0) |
      (request.dryRun ? R_DRY_RUN : 0) |
      (response.uid !== request.uid ? R_RESPONSE_UID : 0),
  );
  w.str(request.kind.group);
  w.str(request.kind.version);
  w.str(request.kind.kind);
  w.str(request.resource.group);
  w.str(request.resource.version);
  w.str(request.resource.resource);
  w.str(request.operation);
  if (request.subResource !== undefined) w.str(request.subResource);
  if (username !== undefined) w.str(username);
  if (request.name !== undefined) w.str(request.name);
  if (request.namespace !== undefined) w.str(request.namespace);
  if (response.uid !== request.uid) w.str(response.uid);
  w.str(input.route);
  w.str(input.phase);
  w.time(input.startedAt - EPOCH);
  w.ms(input.ms);
  const { warnings, auditAnnotations } = response;
  const patch = decision.allowed ? decision.patch : undefined;
  w.num(
    (warnings ? T_WARNINGS : 0) |
      (auditAnnotations ? T_ANNOTATIONS : 0) |
      (patch ? T_PATCH : 0) |
      (input.patchOpsOmitted !== undefined ? T_PATCH_OMITTED : 0) |
      (input.shadowSteps !== undefined ? T_SHADOW_STEPS : 0) |
      (response.allowed ? T_ALLOWED : 0),
  );
  if (warnings) {
    w.num(warnings.length);
    for (const warning of warnings) w.str(warning);
  }
  if (auditAnnotations) {
    const keys = Object.keys(auditAnnotations);
    w.num(keys.length);
    for (const key of keys) {
      w.str(key);
      w.str(auditAnnotations[key]!);
    }
  }
  if (patch) w.ops(patch);
  if (input.patchOpsOmitted !== undefined) w.num(input.patchOpsOmitted);
  if (input.shadowSteps !== undefined) w.num(input.shadowSteps);
  w.num(input.reports.length);
  for (const report of input.reports) writeReport(w, report);
  w.num(input.details.length);
  let policies: Map<number, PolicyTrace> | undefined;
  input.details.forEach((detail, i) => {
    writeDetail(w, detail);
    if (detail.policy) (policies ??= new Map()).set(i, detail.policy);
  });
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

function writeReport(w: Writer, report: StepReport): void {
  w.str(report.step);
  w.str(report.outcome);
  w.ms(report.ms);
  w.num(
    (report.reason !== undefined ? S_REASON : 0) |
      (report.round !== undefined ? S_ROUND : 0) |
      (report.failedOpen !== undefined ? S_FAILED_OPEN : 0) |
      (report.mode !== undefined ? S_MODE : 0) |
      (report.level !== undefined ? S_LEVEL : 0),
  );
  if (report.reason !== undefined) w.str(report.reason);
  if (report.round !== undefined) w.num(report.round);
  if (report.failedOpen !== undefined) w.num(report.failedOpen ? 1 : 0);
  if (report.mode !== undefined) w.str(report.mode);
  if (report.level !== undefined) w.num(report.level);
}

function writeDetail(w: Writer, detail: StepDetail): void {
  w.num(
    (detail.message !== undefined ? D_MESSAGE : 0) |
      (detail.patch !== undefined ? D_PATCH : 0) |
      (detail.patchOpsOmitted !== undefined ? D_OMITTED : 0) |
      (detail.deadlineLeftMs !== undefined ? D_DEADLINE : 0) |
      (detail.decided ? D_DECIDED : 0),
  );
  if (detail.message !== undefined) w.str(detail.message);
  if (detail.patch !== undefined) w.ops(detail.patch);
  if (detail.patchOpsOmitted !== undefined) w.num(detail.patchOpsOmitted);
  if (detail.deadlineLeftMs !== undefined) w.ms(detail.deadlineLeftMs);
}

/** The kept input a packed trace was made from, made again. */
export function unpackTrace(packed: PackedTrace): KeptInput {
  const objects = packed.objects ?? {};
  if (objects.whole) return objects.whole;
  const r = new Reader(packed.text.split(SEP));
  const uid = r.str();
  const flags = r.num();
  const kind = { group: r.str(), version: r.str(), kind: r.str() };
  const resource = { group: r.str(), version: r.str(), resource: r.str() };
  const request: AdmissionRequest = {
    uid,
    kind,
    resource,
    operation: r.str() as AdmissionRequest['operation'],
    userInfo: {},
  };
  if (flags & R_SUBRESOURCE) request.subResource = r.str();
  if (flags & R_USERNAME) request.userInfo = { username: r.str() };
  if (flags & R_NAME) request.name = r.str();
  if (flags & R_NAMESPACE) request.namespace = r.str();
  if (flags & R_DRY_RUN) request.dryRun = true;
  if (objects.object) request.object = objects.object;
  if (objects.oldObject) request.oldObject = objects.oldObject;
  const responseUid = flags & R_RESPONSE_UID ? r.str() : uid;
  const route = r.str();
  const phase = r.str() as Phase;
  const startedAt = r.time() + EPOCH;
  const ms = r.ms();
  const top = r.num();
  const response: AdmissionResponse = { uid: responseUid, allowed: (top & T_ALLOWED) !== 0 };
  if (objects.status) response.status = objects.status;
  if (top & T_WARNINGS) {
    const warnings: string[] = [];
    for (let n = r.num(); n > 0; n--) warnings.push(r.str());
    response.warnings = warnings;
  }
  if (top & T_ANNOTATIONS) {
    const annotations: Record<string, string> = {};
    for (let n = r.num(); n > 0; n--) annotations[r.str()] = r.str();
    response.auditAnnotations = annotations;
  }
  const patch = top & T_PATCH ? r.ops() : undefined;
  const decision: Decision = objects.decision ?? (patch ? { allowed: true, patch } : { allowed: true });
  const patchOpsOmitted = top & T_PATCH_OMITTED ? r.num() : undefined;
  const shadowSteps = top & T_SHADOW_STEPS ? r.num() : undefined;
  const reports: StepReport[] = [];
  for (let n = r.num(); n > 0; n--) reports.push(readReport(r));
  const details: StepDetail[] = [];
  for (let i = 0, n = r.num(); i < n; i++) details.push(readDetail(r, packed.steps[i]!, objects.policies?.get(i)));
  const input: TraceInput = {
    request,
    response,
    decision,
    route,
    phase,
    traceId: packed.traceId,
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
  return { input, bytes: packed.bytes, clipped: packed.clipped };
}

function readReport(r: Reader): StepReport {
  const step = r.str();
  const outcome = r.str() as StepReport['outcome'];
  const ms = r.ms();
  const flags = r.num();
  return {
    step,
    outcome,
    ms,
    ...(flags & S_REASON ? { reason: r.str() } : {}),
    ...(flags & S_ROUND ? { round: r.num() } : {}),
    ...(flags & S_FAILED_OPEN ? { failedOpen: r.num() === 1 } : {}),
    ...(flags & S_MODE ? { mode: r.str() as NonNullable<StepReport['mode']> } : {}),
    ...(flags & S_LEVEL ? { level: r.num() } : {}),
  };
}

function readDetail(r: Reader, step: Step, policy: PolicyTrace | undefined): StepDetail {
  const flags = r.num();
  return {
    step,
    message: flags & D_MESSAGE ? r.str() : undefined,
    patch: flags & D_PATCH ? r.ops() : undefined,
    written: undefined,
    ...(flags & D_OMITTED ? { patchOpsOmitted: r.num() } : {}),
    deadlineLeftMs: flags & D_DEADLINE ? r.ms() : undefined,
    decided: (flags & D_DECIDED) !== 0,
    ...(policy ? { policy } : {}),
  };
}
