/**
 * One Lease kept in memory with the apiserver's rules for it: every write bumps resourceVersion, an update over
 * another version and a second create are conflicts. Each candidate gets its own LeaseLock on it (`lockFor`), so
 * calls are recorded per candidate, and a test can make one candidate's calls fail or go unanswered (a partition).
 */
import type { V1Lease } from '@kubernetes/client-node';
import type { LeaseLock, LeaseRecord, ObservedLease } from '../../server/kube/lease-lock.js';

export type LeaseCall = 'get' | 'create' | 'update';

export interface RecordedCall {
  readonly by: string;
  readonly call: LeaseCall;
  /** For writes: the record written, or undefined when it was a conflict or failed. */
  readonly wrote?: LeaseRecord;
}

/** What a candidate's next call does instead of reaching the store: fail with this error, or never answer. */
export type Fault = Error | 'unanswered' | undefined;

export class MemoryLease {
  private stored: ObservedLease | undefined;
  private version = 0;
  readonly calls: RecordedCall[] = [];
  private readonly faults = new Map<string, (call: LeaseCall) => Fault>();

  constructor(readonly description = 'admission-gateway/admission-gateway') {}

  get record(): LeaseRecord | undefined {
    return this.stored?.record;
  }

  /** From now on, `by`'s calls meet `fault(call)` (undefined: they reach the store). */
  fail(by: string, fault: (call: LeaseCall) => Fault): void {
    this.faults.set(by, fault);
  }

  heal(by: string): void {
    this.faults.delete(by);
  }

  healAll(): void {
    this.faults.clear();
  }

  /** Another writer (kubectl, another election) writes `record` over whatever is there. */
  overwrite(record: LeaseRecord): void {
    this.stored = this.observed(record);
  }

  writesBy(by: string): LeaseRecord[] {
    return this.calls.filter((c) => c.by === by && c.wrote).map((c) => c.wrote!);
  }

  callsBy(by: string, call?: LeaseCall): number {
    return this.calls.filter((c) => c.by === by && (!call || c.call === call)).length;
  }

  private observed(record: LeaseRecord): ObservedLease {
    const resourceVersion = String(++this.version);
    const lease: V1Lease = { metadata: { name: 'admission-gateway', resourceVersion }, spec: {} };
    return { record: { ...record }, resourceVersion, lease };
  }

  lockFor(by: string): LeaseLock {
    const enter = async (call: LeaseCall, signal: AbortSignal): Promise<void> => {
      await Promise.resolve();
      const fault = this.faults.get(by)?.(call);
      if (fault === undefined) return;
      this.calls.push({ by, call });
      if (fault !== 'unanswered') throw fault;
      await new Promise<never>((_, reject) => {
        if (signal.aborted) reject(new Error('aborted'));
        signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
      });
    };
    const conflict = (call: LeaseCall): 'conflict' => {
      this.calls.push({ by, call });
      return 'conflict';
    };
    return {
      description: this.description,
      get: async (signal) => {
        await enter('get', signal);
        this.calls.push({ by, call: 'get' });
        return this.stored;
      },
      create: async (record, signal) => {
        await enter('create', signal);
        if (this.stored) return conflict('create');
        this.stored = this.observed(record);
        this.calls.push({ by, call: 'create', wrote: record });
        return this.stored;
      },
      update: async (current, record, signal) => {
        await enter('update', signal);
        if (!this.stored || this.stored.resourceVersion !== current.resourceVersion) return conflict('update');
        this.stored = this.observed(record);
        this.calls.push({ by, call: 'update', wrote: record });
        return this.stored;
      },
    };
  }
}
