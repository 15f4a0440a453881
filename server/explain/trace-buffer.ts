/**
 * The decision traces of the most recent reviews, for `GET /explain/<uid>`: a ring of at most `size` reviews
 * whose kept inputs (kept-trace.ts: small and bounded whatever the review carried) hold at most `maxBytes`
 * together; the oldest make room. A review is found by its uid or its trace id through an index, not a scan.
 */
import { kindName } from '../admission/kind-name.js';
import type { DecisionTrace, ReviewedRequest } from '../trace/decision-trace.js';
import { buildDecisionTrace, traceIdOf } from '../trace/decision-trace.js';
import type { Redaction } from '../recording/redact.js';
import { keptInput, type KeptInput } from './kept-trace.js';

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
  private readonly ring: Array<KeptInput | undefined>;
  /** The newest kept review of each uid: its slot. */
  private readonly byUid = new Map<string, number>();
  /**
   * The kept reviews of each trace id: the slot of the only one (by far the most common: a trace id is made from
   * the uid unless the apiserver sent one), or their slots, oldest first.
   */
  private readonly byTraceId = new Map<string, number | number[]>();
  private oldest = 0;
  private count = 0;
  private held = 0;

  constructor(private readonly options: TraceBufferOptions) {
    this.size = options.size;
    this.maxBytes = options.maxBytes;
    this.keep = options.keep ?? 'all';
    this.ring = new Array<KeptInput | undefined>(this.size);
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
    const slot = (this.oldest + this.count) % this.size;
    this.ring[slot] = kept;
    this.count++;
    this.held += kept.bytes;
    this.byUid.set(kept.input.request.uid, slot);
    const traceId = traceIdOf(kept.input);
    const slots = this.byTraceId.get(traceId);
    if (slots === undefined) this.byTraceId.set(traceId, slot);
    else if (typeof slots === 'number') this.byTraceId.set(traceId, [slots, slot]);
    else slots.push(slot);
  }

  /** The trace of the review with this uid, if it is still kept. */
  get(uid: string): KeptTrace | undefined {
    const slot = this.byUid.get(uid);
    const kept = slot === undefined ? undefined : this.ring[slot];
    return kept ? this.trace(kept) : undefined;
  }

  /** The kept traces with this trace id (a review's mutate and validate calls may share one), oldest first. */
  withTraceId(traceId: string): KeptTrace[] {
    const slots = this.byTraceId.get(traceId) ?? [];
    return (typeof slots === 'number' ? [slots] : slots).map((slot) => this.trace(this.ring[slot]!));
  }

  /** The most recent reviews, newest first; `denied` keeps only refused ones. */
  recent(limit: number, denied = false): TraceSummary[] {
    const out: TraceSummary[] = [];
    for (let i = this.count - 1; i >= 0 && out.length < limit; i--) {
      const t = this.ring[(this.oldest + i) % this.size]!.input;
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
    const { input, bytes } = this.ring[slot]!;
    this.ring[slot] = undefined;
    this.oldest = (slot + 1) % this.size;
    this.count--;
    this.held -= bytes;
    if (this.byUid.get(input.request.uid) === slot) this.byUid.delete(input.request.uid);
    // The oldest kept review is the oldest of its trace id too: the first of its slots.
    const traceId = traceIdOf(input);
    const slots = this.byTraceId.get(traceId)!;
    if (typeof slots === 'number') this.byTraceId.delete(traceId);
    else if (slots.length === 2) this.byTraceId.set(traceId, slots[1]!);
    else slots.shift();
  }

  private trace({ input, clipped }: KeptInput): KeptTrace {
    const trace = buildDecisionTrace(input);
    return clipped
      ? { ...trace, redacted: !this.options.includeObjects, clipped: true }
      : { ...trace, redacted: !this.options.includeObjects };
  }
}
