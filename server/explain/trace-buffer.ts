/**
 * The decision traces of the most recent reviews, for `GET /explain/<uid>`: a ring of at most `size` reviews
 * whose kept inputs (kept-trace.ts: small and bounded whatever the review carried) hold at most `maxBytes`
 * together, each held packed (packed-trace.ts); the oldest make room. A review is found by its uid or its trace
 * id through an index, not a scan.
 */
import { kindName } from '../admission/kind-name.js';
import type { DecisionTrace, ReviewedRequest } from '../trace/decision-trace.js';
import { buildDecisionTrace, traceIdOf, traceIdOfUid } from '../trace/decision-trace.js';
import type { Redaction } from '../recording/redact.js';
import { keptInput, type KeptInput } from './kept-trace.js';
import { StepArrays, packTrace, unpackTrace, type PackedTrace } from './packed-trace.js';

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
  private readonly ring: Array<PackedTrace | undefined>;
  /**
   * The kept reviews of each uid: the slot of the only one (by far the most common), or their slots, oldest first
   * (a review's mutate and validate calls share its uid). A trace id made from the uid is found through it.
   */
  private readonly byUid = new Map<string, number | number[]>();
  /** The same for the trace ids that were not made from the uid (the apiserver sent one, or tracing made it). */
  private readonly byTraceId = new Map<string, number | number[]>();
  private readonly stepArrays = new StepArrays();
  private oldest = 0;
  private count = 0;
  private held = 0;

  constructor(private readonly options: TraceBufferOptions) {
    this.size = options.size;
    this.maxBytes = options.maxBytes;
    this.keep = options.keep ?? 'all';
    this.ring = new Array<PackedTrace | undefined>(this.size);
  }

  /** What the kept traces hold, counted as kept-trace.ts counts it (at most `maxBytes`). */
  get bytes(): number {
    return this.held;
  }

  /** Keeps a review's trace, in place of the oldest ones when there is no room. */
  add(reviewed: ReviewedRequest): void {
    if (!this.keeps(reviewed.notable)) return;
    this.addKept(keptInput(reviewed.traceInput, this.options));
  }

  /** Whether the trace of a review, notable or not, is kept. */
  keeps(notable: boolean): boolean {
    return keepsTrace(this.size, this.keep, notable);
  }

  /** Keeps a trace input made small already (kept-trace.ts; a worker of the large-review lane makes it there). */
  addKept(kept: KeptInput): void {
    // Bounded by the chain's length alone: a trace this large is not kept rather than emptying the ring.
    if (kept.bytes > this.maxBytes) return;
    while (this.count === this.size || this.held + kept.bytes > this.maxBytes) this.dropOldest();
    const packed = packTrace(kept, this.stepArrays);
    const slot = (this.oldest + this.count) % this.size;
    this.ring[slot] = packed;
    this.count++;
    this.held += packed.bytes;
    index(this.byUid, packed.uid, slot);
    if (packed.traceId !== undefined) index(this.byTraceId, packed.traceId, slot);
  }

  /** The trace of the review with this uid, if it is still kept (the newest, when it was reviewed twice). */
  get(uid: string): KeptTrace | undefined {
    const slots = this.byUid.get(uid);
    if (slots === undefined) return undefined;
    return this.trace(this.ring[typeof slots === 'number' ? slots : slots[slots.length - 1]!]!);
  }

  /** The kept traces with this trace id (a review's mutate and validate calls may share one), oldest first. */
  withTraceId(traceId: string): KeptTrace[] {
    const given = slotsOf(this.byTraceId.get(traceId));
    const uid = uidOfTraceId(traceId);
    const fromUid = uid === undefined ? [] : slotsOf(this.byUid.get(uid)).filter((s) => !this.ring[s]!.traceId);
    const age = (slot: number) => (slot - this.oldest + this.size) % this.size;
    return [...given, ...fromUid].sort((a, b) => age(a) - age(b)).map((slot) => this.trace(this.ring[slot]!));
  }

  /** The most recent reviews, newest first; `denied` keeps only refused ones. */
  recent(limit: number, denied = false): TraceSummary[] {
    const out: TraceSummary[] = [];
    for (let i = this.count - 1; i >= 0 && out.length < limit; i--) {
      const t = unpackTrace(this.ring[(this.oldest + i) % this.size]!).input;
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

  private dropOldest(): void {
    const slot = this.oldest;
    const packed = this.ring[slot]!;
    this.ring[slot] = undefined;
    this.oldest = (slot + 1) % this.size;
    this.count--;
    this.held -= packed.bytes;
    // The oldest kept review is the oldest of its uid and of its trace id too: the first of their slots.
    unindex(this.byUid, packed.uid);
    if (packed.traceId !== undefined) unindex(this.byTraceId, packed.traceId);
  }

  private trace(packed: PackedTrace): KeptTrace {
    const { input, clipped } = unpackTrace(packed);
    const trace = buildDecisionTrace(input);
    return clipped
      ? { ...trace, redacted: !this.options.includeObjects, clipped: true }
      : { ...trace, redacted: !this.options.includeObjects };
  }
}

const slotsOf = (slots: number | number[] | undefined): number[] =>
  slots === undefined ? [] : typeof slots === 'number' ? [slots] : slots;

/** Adds a slot to a key's, newest last. */
function index(map: Map<string, number | number[]>, key: string, slot: number): void {
  const slots = map.get(key);
  if (slots === undefined) map.set(key, slot);
  else if (typeof slots === 'number') map.set(key, [slots, slot]);
  else slots.push(slot);
}

/** Takes a key's oldest slot away. */
function unindex(map: Map<string, number | number[]>, key: string): void {
  const slots = map.get(key)!;
  if (typeof slots === 'number') map.delete(key);
  else if (slots.length === 2) map.set(key, slots[1]!);
  else slots.shift();
}

/** The uid a trace id made from a uid was made from (traceIdOfUid), when it could be one. */
function uidOfTraceId(traceId: string): string | undefined {
  if (traceId.length !== 32) return undefined;
  const uid = `${traceId.slice(0, 8)}-${traceId.slice(8, 12)}-${traceId.slice(12, 16)}-${traceId.slice(16, 20)}-${traceId.slice(20)}`;
  return traceIdOfUid(uid) === traceId ? uid : undefined;
}
