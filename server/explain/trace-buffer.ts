/**
 * The decision traces of the most recent reviews, for `GET /explain/<uid>`: a ring of at most `size` reviews
 * whose kept inputs (kept-trace.ts: small and bounded whatever the review carried) hold at most `maxBytes`
 * together, each held packed (packed-trace.ts) as bytes outside the JavaScript heap (record-ring.ts); the oldest
 * make room (an ordinary review's written straight from its input, without its kept input made first). A review
 * is found by its uid or its trace id through an index of hashes in typed arrays (slot-index.ts), not a scan.
 */
import { kindName } from '../admission/kind-name.js';
import type { DecisionTrace, ReviewedRequest } from '../trace/decision-trace.js';
import { buildDecisionTrace, traceIdOf, traceIdOfUid } from '../trace/decision-trace.js';
import type { Redaction } from '../recording/redact.js';
import type { Step } from '../steps/step.js';
import { keptInput, type KeptInput } from './kept-trace.js';
import {
  StepArrays,
  packReview,
  packTrace,
  traceKeys,
  unpackTrace,
  type PackedTrace,
  type TraceObjects,
} from './packed-trace.js';
import { RecordWriter } from './record-bytes.js';
import { RecordRing } from './record-ring.js';
import { SlotIndex, hashOf } from './slot-index.js';

/** A trace as `GET /explain` serves it. */
export type KeptTrace = DecisionTrace & {
  /** The values of patch operations were left out (explain.includeObjects is off). */
  readonly redacted: boolean;
  /** Some of what the review carried was cut or left out to keep the trace small; each place says so. */
  readonly clipped?: true;
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

export interface TraceBufferOptions {
  /** Reviews kept at most; 0 keeps none. */
  readonly size: number;
  /** What the kept traces may hold together, counted as kept-trace.ts counts them. */
  readonly maxBytes: number;
  /** Keep the values of patch operations (explain.includeObjects), redacted by `redaction`. */
  readonly includeObjects: boolean;
  readonly redaction: Redaction;
  /** `notable`: only refused, warned or annotated reviews (the rest would flush them out, and cost more). */
  readonly keep?: 'notable' | 'all';
}

/** Whether a buffer of `size` that keeps `keep` traces keeps the trace of a review, notable or not. */
export function keepsTrace(size: number, keep: 'notable' | 'all', notable: boolean): boolean {
  return size > 0 && (keep === 'all' || notable);
}

export class TraceBuffer {
  readonly size: number;
  readonly maxBytes: number;
  readonly keep: 'notable' | 'all';
  private readonly records: RecordRing;
  private readonly writer = new RecordWriter();
  /** Each slot's steps array (shared by the reviews of a route: stepArrays). */
  private readonly steps: Array<readonly Step[] | undefined>;
  /** The objects of the few slots that have some. */
  private readonly objects = new Map<number, TraceObjects>();
  /** What each slot counts against maxBytes. */
  private readonly counted: Float64Array;
  /** Whether a slot's trace id was given (and is in byTraceId) rather than made from the uid. */
  private readonly ownTraceId: Uint8Array;
  /** The kept reviews by uid (a review's mutate and validate calls share it), and so the trace ids made from it. */
  private readonly byUid: SlotIndex;
  /** By the trace ids that were not made from the uid (the apiserver sent one, or tracing made it). */
  private readonly byTraceId: SlotIndex;
  private readonly stepArrays = new StepArrays();
  private held = 0;

  constructor(private readonly options: TraceBufferOptions) {
    this.size = options.size;
    this.maxBytes = options.maxBytes;
    this.keep = options.keep ?? 'all';
    const slots = Math.max(this.size, 1);
    this.records = new RecordRing(slots, this.maxBytes);
    this.steps = new Array<readonly Step[] | undefined>(slots);
    this.counted = new Float64Array(slots);
    this.ownTraceId = new Uint8Array(slots);
    this.byUid = new SlotIndex(this.size);
    this.byTraceId = new SlotIndex(this.size);
  }

  /** What the kept traces hold, counted as kept-trace.ts counts it (at most `maxBytes`). */
  get bytes(): number {
    return this.held;
  }

  /** Keeps a review's trace, in place of the oldest ones when there is no room. */
  add(reviewed: ReviewedRequest): void {
    if (!this.keeps(reviewed.notable)) return;
    // An ordinary review's trace is written straight from its input; the rest are made small first.
    const direct = packReview(reviewed.traceInput, this.options, this.writer, this.stepArrays);
    if (direct) this.hold(direct.packed, direct.bytes);
    else this.addKept(keptInput(reviewed.traceInput, this.options));
  }

  /** Whether the trace of a review, notable or not, is kept. */
  keeps(notable: boolean): boolean {
    return keepsTrace(this.size, this.keep, notable);
  }

  /** Keeps a trace input made small already (kept-trace.ts; a worker of the large-review lane makes it there). */
  addKept(kept: KeptInput): void {
    if (kept.bytes > this.maxBytes || this.size === 0) return;
    this.hold(packTrace(kept, this.writer, this.stepArrays), kept.bytes);
  }

  /** Keeps the trace just packed into the writer, which counts `bytes` against maxBytes. */
  private hold(packed: PackedTrace, bytes: number): void {
    const n = this.writer.length;
    // Bounded by the chain's length alone: a trace this large is not kept rather than emptying the ring.
    if (bytes > this.maxBytes || n > this.maxBytes) return;
    while (this.records.records > 0 && (this.held + bytes > this.maxBytes || !this.records.fits(n))) this.dropOldest();
    const slot = this.records.add(this.writer.bytes, n);
    this.steps[slot] = packed.steps;
    if (packed.objects) this.objects.set(slot, packed.objects);
    this.counted[slot] = bytes;
    this.held += bytes;
    this.byUid.add(slot, hashOf(packed.uid));
    this.ownTraceId[slot] = packed.traceId === undefined ? 0 : 1;
    if (packed.traceId !== undefined) this.byTraceId.add(slot, hashOf(packed.traceId));
  }

  /** The trace of the review with this uid, if it is still kept (the newest, when it was reviewed twice). */
  get(uid: string): KeptTrace | undefined {
    const slots = this.slotsOfUid(uid);
    return slots.length === 0 ? undefined : this.trace(slots[slots.length - 1]!);
  }

  /** The kept traces with this trace id (a review's mutate and validate calls may share one), oldest first. */
  withTraceId(traceId: string): KeptTrace[] {
    const given = this.byTraceId.slots(hashOf(traceId)).filter((slot) => this.keysOf(slot).traceId === traceId);
    const uid = uidOfTraceId(traceId);
    const fromUid = uid === undefined ? [] : this.slotsOfUid(uid).filter((slot) => this.ownTraceId[slot] === 0);
    const oldest = this.records.oldestSlot;
    const age = (slot: number) => (slot - oldest + this.size) % this.size;
    return [...given, ...fromUid].sort((a, b) => age(a) - age(b)).map((slot) => this.trace(slot));
  }

  /** The most recent reviews, newest first; `denied` keeps only refused ones. */
  recent(limit: number, denied = false): TraceSummary[] {
    const out: TraceSummary[] = [];
    const oldest = this.records.oldestSlot;
    for (let i = this.records.records - 1; i >= 0 && out.length < limit; i--) {
      const t = this.unpack((oldest + i) % this.size).input;
      if (denied && t.response.allowed) continue;
      const { request } = t;
      out.push({
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
      });
    }
    return out;
  }

  /** The kept slots of a uid, oldest first. */
  private slotsOfUid(uid: string): number[] {
    return this.byUid.slots(hashOf(uid)).filter((slot) => this.keysOf(slot).uid === uid);
  }

  private keysOf(slot: number) {
    const { ring, at } = this.records.bytesOf(slot);
    return traceKeys(ring, at);
  }

  private dropOldest(): void {
    // The oldest kept review is the oldest of its uid and of its trace id too: the first of their buckets.
    const slot = this.records.oldestSlot;
    this.byUid.remove(slot);
    if (this.ownTraceId[slot] === 1) this.byTraceId.remove(slot);
    this.objects.delete(slot);
    this.steps[slot] = undefined;
    this.held -= this.counted[slot]!;
    this.records.dropOldest();
  }

  private unpack(slot: number): KeptInput {
    const { ring, at } = this.records.bytesOf(slot);
    return unpackTrace(ring, at, this.steps[slot]!, this.objects.get(slot));
  }

  private trace(slot: number): KeptTrace {
    const { input, clipped } = this.unpack(slot);
    const trace = buildDecisionTrace(input);
    return clipped
      ? { ...trace, redacted: !this.options.includeObjects, clipped: true }
      : { ...trace, redacted: !this.options.includeObjects };
  }
}

/** The uid a trace id made from a uid was made from (traceIdOfUid), when it could be one. */
function uidOfTraceId(traceId: string): string | undefined {
  if (traceId.length !== 32) return undefined;
  const uid = `${traceId.slice(0, 8)}-${traceId.slice(8, 12)}-${traceId.slice(12, 16)}-${traceId.slice(16, 20)}-${traceId.slice(20)}`;
  return traceIdOfUid(uid) === traceId ? uid : undefined;
}
