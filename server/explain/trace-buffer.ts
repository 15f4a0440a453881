/**
 * The decision traces of the most recent reviews, for `GET /explain/<uid>`: a ring of a fixed number of
 * traces, each cut down as it is added so that what a review leaves behind is small and bounded whatever the
 * object — the patch operations' values (object content) only when configured, and at most a few dozen
 * operations per step.
 */
import type { JsonPatchOperation } from '../admission/types.js';
import type { DecisionTrace, StepTrace } from '../chain/decision-trace.js';
import type { ReviewedRequest } from '../chain/reviewer.js';

/** Patch operations a trace keeps per step and for the review; the rest are counted. */
export const MAX_TRACED_OPS = 50;

/** What a patch looks like in a kept trace: its operations without their values unless objects are kept. */
export interface TracedOperation {
  readonly op: JsonPatchOperation['op'];
  readonly path: string;
  readonly from?: string;
  readonly value?: unknown;
}

export interface KeptTrace extends Omit<DecisionTrace, 'patch' | 'steps'> {
  readonly patch?: readonly TracedOperation[];
  /** Operations of the review's patch not kept. */
  readonly patchOpsOmitted?: number;
  readonly steps: ReadonlyArray<Omit<StepTrace, 'patch'> & { patch?: TracedOperation[]; patchOpsOmitted?: number }>;
  /** The values of patch operations were left out (explain.includeObjects is off). */
  readonly redacted: boolean;
}

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

function keptOps(
  ops: readonly JsonPatchOperation[] | undefined,
  includeObjects: boolean,
): { patch?: TracedOperation[]; patchOpsOmitted?: number } {
  if (!ops?.length) return {};
  const kept = ops
    .slice(0, MAX_TRACED_OPS)
    .map((op): TracedOperation => (includeObjects ? structuredClone(op) : withoutValue(op)));
  return ops.length > MAX_TRACED_OPS ? { patch: kept, patchOpsOmitted: ops.length - MAX_TRACED_OPS } : { patch: kept };
}

function withoutValue(op: JsonPatchOperation): TracedOperation {
  if (op.op === 'move' || op.op === 'copy') return { op: op.op, from: op.from, path: op.path };
  return { op: op.op, path: op.path };
}

/** A trace as kept: bounded, and without object content unless `includeObjects`. */
export function keptTrace(trace: DecisionTrace, includeObjects: boolean): KeptTrace {
  const { patch, steps, ...rest } = trace;
  return {
    ...rest,
    ...keptOps(patch, includeObjects),
    steps: steps.map(({ patch: stepPatch, ...step }) => ({ ...step, ...keptOps(stepPatch, includeObjects) })),
    redacted: !includeObjects,
  };
}

export class TraceBuffer {
  private readonly ring: Array<KeptTrace | undefined>;
  private readonly byUid = new Map<string, number>();
  private next = 0;

  constructor(
    readonly size: number,
    private readonly includeObjects: boolean,
  ) {
    this.ring = new Array<KeptTrace | undefined>(size);
  }

  /** Keeps a review's trace, in place of the oldest. */
  add(reviewed: ReviewedRequest): void {
    if (this.size === 0) return;
    const slot = this.next;
    this.next = (slot + 1) % this.size;
    const old = this.ring[slot];
    if (old && this.byUid.get(old.uid) === slot) this.byUid.delete(old.uid);
    const kept = keptTrace(reviewed.trace, this.includeObjects);
    this.ring[slot] = kept;
    this.byUid.set(kept.uid, slot);
  }

  /** The trace of the review with this uid, if it is still kept. */
  get(uid: string): KeptTrace | undefined {
    const slot = this.byUid.get(uid);
    return slot === undefined ? undefined : this.ring[slot];
  }

  /** The kept traces with this trace id (a review's mutate and validate calls may share one), oldest first. */
  withTraceId(traceId: string): KeptTrace[] {
    return this.newestFirst(Number.MAX_SAFE_INTEGER, (t) => t.traceId === traceId).reverse();
  }

  /** The most recent reviews, newest first; `denied` keeps only refused ones. */
  recent(limit: number, denied = false): TraceSummary[] {
    return this.newestFirst(limit, (t) => !denied || !t.allowed).map((t) => ({
      uid: t.uid,
      traceId: t.traceId,
      route: t.route,
      startedAt: t.startedAt,
      operation: t.request.operation,
      kind: t.request.kind,
      ...(t.request.namespace ? { namespace: t.request.namespace } : {}),
      ...(t.request.name ? { name: t.request.name } : {}),
      allowed: t.allowed,
      ms: t.ms,
    }));
  }

  private newestFirst(limit: number, keep: (t: KeptTrace) => boolean): KeptTrace[] {
    const out: KeptTrace[] = [];
    for (let i = 1; i <= this.size && out.length < limit; i++) {
      const trace = this.ring[(this.next - i + this.size) % this.size];
      if (trace && keep(trace)) out.push(trace);
    }
    return out;
  }
}
