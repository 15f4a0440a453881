/**
 * The Lease leader election holds (coordination.k8s.io/v1), read and written with optimistic concurrency as
 * client-go's LeaseLock does: an update carries the resourceVersion that was read, and a create that loses a race
 * gets 409 AlreadyExists. Either way the caller learns `conflict`: another replica wrote first.
 */
import { CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import { abortedBy } from './abort-call.js';
import { statusCode } from './kube-errors.js';

/** What the election reads from and writes into the Lease's spec. */
export interface LeaseRecord {
  /** `''`: nobody holds it (released). */
  readonly holderIdentity: string;
  readonly leaseDurationSeconds: number;
  readonly acquireTime: Date | undefined;
  readonly renewTime: Date | undefined;
  readonly leaseTransitions: number;
}

/** A Lease as read or written: the record, and the object it came in (its resourceVersion, its other fields). */
export interface ObservedLease {
  readonly record: LeaseRecord;
  readonly resourceVersion: string;
  readonly lease: V1Lease;
}

export interface LeaseLock {
  /** `namespace/name`, for logs and the leader metric's label. */
  readonly description: string;
  /** The Lease, or undefined when it does not exist. */
  get(signal: AbortSignal): Promise<ObservedLease | undefined>;
  create(record: LeaseRecord, signal: AbortSignal): Promise<ObservedLease | 'conflict'>;
  /** Writes `record` over `current`, if the Lease is still at current's resourceVersion. */
  update(current: ObservedLease, record: LeaseRecord, signal: AbortSignal): Promise<ObservedLease | 'conflict'>;
}

export interface LeaseRef {
  readonly namespace: string;
  readonly name: string;
}

/** A MicroTime as client-node hands it over: its deserializer leaves the wire's string as it is. */
function timeOf(value: unknown): Date | undefined {
  if (value instanceof Date) return value;
  if (typeof value !== 'string') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : new Date(ms);
}

export function observedLease(lease: V1Lease): ObservedLease {
  const spec = lease.spec ?? {};
  return {
    record: {
      holderIdentity: spec.holderIdentity ?? '',
      leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
      acquireTime: timeOf(spec.acquireTime),
      renewTime: timeOf(spec.renewTime),
      leaseTransitions: spec.leaseTransitions ?? 0,
    },
    resourceVersion: lease.metadata?.resourceVersion ?? '',
    lease,
  };
}

/** The spec fields of `record`; the apiserver wants MicroTime with six fractional digits. */
function specOf(record: LeaseRecord): V1Lease['spec'] {
  const micro = (date: Date | undefined) => (date ? new V1MicroTime(date.getTime()) : undefined);
  return {
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    acquireTime: micro(record.acquireTime),
    renewTime: micro(record.renewTime),
    leaseTransitions: record.leaseTransitions,
  };
}

export function createLeaseLock(kc: KubeConfig, ref: LeaseRef): LeaseLock {
  const api = kc.makeApiClient(CoordinationV1Api);
  const conflict = (err: unknown): 'conflict' => {
    if (statusCode(err) === 409) return 'conflict';
    throw err;
  };
  return {
    description: `${ref.namespace}/${ref.name}`,
    async get(signal) {
      try {
        return observedLease(await api.readNamespacedLease(ref, abortedBy(signal)));
      } catch (err) {
        if (statusCode(err) === 404) return undefined;
        throw err;
      }
    },
    async create(record, signal) {
      const body: V1Lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: ref.name, namespace: ref.namespace },
        spec: specOf(record),
      };
      try {
        return observedLease(await api.createNamespacedLease({ namespace: ref.namespace, body }, abortedBy(signal)));
      } catch (err) {
        return conflict(err);
      }
    },
    async update(current, record, signal) {
      // Everything else of the object (labels, annotations, spec fields this election does not use) is kept.
      const body: V1Lease = {
        ...current.lease,
        metadata: { ...current.lease.metadata, resourceVersion: current.resourceVersion },
        spec: { ...current.lease.spec, ...specOf(record) },
      };
      try {
        return observedLease(await api.replaceNamespacedLease({ ...ref, body }, abortedBy(signal)));
      } catch (err) {
        return conflict(err);
      }
    },
  };
}
