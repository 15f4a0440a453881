/**
 * Leader election on a Lease, as client-go's leaderelection does it (tryAcquireOrRenew): a replica that does not
 * lead reads the Lease every retry period (with jitter) and takes it when nobody holds it, or when its holder has not
 * renewed it for the Lease's duration; the leader renews it every retry period and stops leading once it could not
 * for renewDeadline; a leader that stops releases it (holder `''`) so another takes over at its next try. Expiry is
 * judged on this replica's own clock, from when it saw the Lease change, never from the times written in it: the
 * replicas' clocks need not agree.
 *
 * The apiserver is asked one thing at a time, each call bounded by renewDeadline; failed calls are retried after a
 * growing wait (up to the lease duration), and a failure is logged when it differs from the previous one.
 */
import type { Logger } from '../base/log.js';
import { RETRY_JITTER } from '../config/validate.js';
import type { LeaderElectionConfig } from '../config/types.js';
import { kubeErrorMessage } from './kube-errors.js';
import type { LeaseLock, LeaseRecord, ObservedLease } from './lease-lock.js';

/** Time as the election sees it; tests pass one they move by hand. */
export interface ElectionClock {
  /** Milliseconds on a clock that never goes back (for durations). */
  now(): number;
  /** Wall time, for the times written into the Lease. */
  date(): Date;
  /** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export const systemClock: ElectionClock = {
  now: () => performance.now(),
  date: () => new Date(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      signal.addEventListener('abort', done, { once: true });
    }),
};

export type ElectionTiming = Pick<
  LeaderElectionConfig,
  'leaseDurationSeconds' | 'renewDeadlineSeconds' | 'retryPeriodSeconds'
>;

export interface LeaderElectorOptions {
  readonly lock: LeaseLock;
  /** Unique among the candidates (and never reused): pod name and a random part. */
  readonly identity: string;
  readonly timing: ElectionTiming;
  readonly log: Logger;
  /** This replica now leads: start the work only the leader does. */
  readonly onStartedLeading: () => void;
  /** It no longer does (lost the Lease, or stop()): stop that work; the Lease is released once this resolves. */
  readonly onStoppedLeading: () => Promise<void>;
  readonly clock?: ElectionClock;
  /** 0 ≤ x < 1, for the jitter of the retry period. */
  readonly random?: () => number;
}

export interface LeaderElector {
  isLeader(): boolean;
  /** The holder this replica saw last: `''` when nobody holds the Lease, undefined before it was read. */
  observedLeader(): string | undefined;
  start(): void;
  /** Stops trying; a leader first stops its work (onStoppedLeading), then releases the Lease. */
  stop(): Promise<void>;
}

/** What one try found: this replica holds the Lease now, or another one does (or wrote first). */
type TryOutcome = 'holding' | 'held-elsewhere' | 'conflict';

class CallTimeout extends Error {}

export function createLeaderElector(options: LeaderElectorOptions): LeaderElector {
  const { lock, identity, log } = options;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  const leaseMs = options.timing.leaseDurationSeconds * 1000;
  const renewDeadlineMs = options.timing.renewDeadlineSeconds * 1000;
  const retryMs = options.timing.retryPeriodSeconds * 1000;
  const context = { lease: lock.description, identity };
  // Whatever part of the deadline a call had left, the same words: a failure is logged once, not once per try.
  const unanswered = `the apiserver did not answer within renewDeadlineSeconds (${options.timing.renewDeadlineSeconds} s)`;
  const stopping = new AbortController();
  /** The Lease as last read or written, and when (clock.now()) it was seen to change. */
  let observed: { lease: ObservedLease; at: number } | undefined;
  let reportedLeader: string | undefined;
  let leading = false;
  let problem: string | undefined;
  let running: Promise<void> | undefined;

  /** Keeps what was read or written; `at` moves only when the Lease changed (or this replica wrote it). */
  const observe = (lease: ObservedLease, wroteIt: boolean): void => {
    const changed = wroteIt || observed?.lease.resourceVersion !== lease.resourceVersion;
    observed = { lease, at: changed || !observed ? clock.now() : observed.at };
    const holder = lease.record.holderIdentity;
    if (holder === reportedLeader) return;
    reportedLeader = holder;
    if (holder !== identity) {
      log.info({ ...context, leader: holder === '' ? null : holder }, 'leader election: new leader observed');
    }
  };

  /** The observed holder's term has not run out (measured from when this replica saw the Lease change). */
  const termRunning = (now: number): boolean =>
    observed !== undefined && observed.at + observed.lease.record.leaseDurationSeconds * 1000 > now;

  const ours = (previous: LeaseRecord | undefined, now: Date): LeaseRecord => {
    const kept = previous?.holderIdentity === identity;
    return {
      holderIdentity: identity,
      leaseDurationSeconds: options.timing.leaseDurationSeconds,
      acquireTime: kept ? previous.acquireTime : now,
      renewTime: now,
      leaseTransitions: previous === undefined ? 0 : previous.leaseTransitions + (kept ? 0 : 1),
    };
  };

  const tryAcquireOrRenew = async (signal: AbortSignal): Promise<TryOutcome> => {
    // The leader writes over the version it saw last (one call); only if that fails does it read first.
    if (observed && observed.lease.record.holderIdentity === identity && termRunning(clock.now())) {
      const written = await lock.update(observed.lease, ours(observed.lease.record, clock.date()), signal);
      if (written !== 'conflict') {
        observe(written, true);
        return 'holding';
      }
    }
    const current = await lock.get(signal);
    if (!current) {
      const created = await lock.create(ours(undefined, clock.date()), signal);
      if (created === 'conflict') return 'conflict';
      observe(created, true);
      return 'holding';
    }
    observe(current, false);
    const holder = current.record.holderIdentity;
    if (holder !== '' && holder !== identity && termRunning(clock.now())) return 'held-elsewhere';
    const written = await lock.update(current, ours(current.record, clock.date()), signal);
    if (written === 'conflict') return 'conflict';
    observe(written, true);
    return 'holding';
  };

  /**
   * `call` with a signal that aborts after `ms`, and when the election stops unless `untilStopped` is false (the
   * release, which runs after it stopped). A call cut short by the time rejects with a CallTimeout.
   */
  const bounded = async <T>(ms: number, call: (signal: AbortSignal) => Promise<T>, untilStopped = true): Promise<T> => {
    const attempt = new AbortController();
    const finished = new AbortController();
    const onStop = () => attempt.abort(stopping.signal.reason);
    if (untilStopped) {
      if (stopping.signal.aborted) onStop();
      else stopping.signal.addEventListener('abort', onStop, { once: true });
    }
    void clock.sleep(ms, finished.signal).then(() => {
      if (!finished.signal.aborted) attempt.abort(new CallTimeout(unanswered));
    });
    try {
      return await call(attempt.signal);
    } catch (err) {
      // An aborted request rejects with the fetch library's own error; say why it was aborted.
      throw attempt.signal.reason instanceof CallTimeout ? attempt.signal.reason : err;
    } finally {
      finished.abort();
      stopping.signal.removeEventListener('abort', onStop);
    }
  };

  const reasonOf = (err: unknown): string => (err instanceof CallTimeout ? err.message : kubeErrorMessage(err));

  const failed = (err: unknown, what: string, retryInMs: number): void => {
    const message = reasonOf(err);
    if (message === problem) return;
    problem = message;
    log.warn({ ...context, err: message, retryInMs: Math.round(retryInMs) }, `leader election: cannot ${what}`);
  };

  const succeeded = (): void => {
    if (problem === undefined) return;
    problem = undefined;
    log.info(context, 'leader election: the Lease can be read and written again');
  };

  /**
   * Tries until this replica holds the Lease, and returns when the try that took it was sent; undefined when the
   * election stopped first.
   */
  const acquire = async (): Promise<number | undefined> => {
    let failures = 0;
    while (!stopping.signal.aborted) {
      let delay = retryMs * (1 + random() * RETRY_JITTER);
      const sent = clock.now();
      try {
        if ((await bounded(renewDeadlineMs, tryAcquireOrRenew)) === 'holding') {
          succeeded();
          return sent;
        }
        succeeded();
        failures = 0;
      } catch (err) {
        if (stopping.signal.aborted) return undefined;
        failures++;
        delay = Math.min(retryMs * 2 ** failures, Math.max(leaseMs, retryMs));
        failed(err, 'read or take the Lease; retrying', delay);
      }
      await clock.sleep(delay, stopping.signal);
    }
    return undefined;
  };

  /**
   * Renews every retry period while leading, and returns why it lost the Lease (undefined: the election stopped).
   * A renewal may be tried until renewDeadline after the last one that succeeded was sent: counted from there
   * (client-go counts from the start of each round), the leader has stopped before any other replica can see the
   * Lease expire, since they count the lease duration from when they saw that renewal, which is later.
   */
  const renew = async (acquired: number): Promise<string | undefined> => {
    let renewed = acquired;
    for (;;) {
      await clock.sleep(retryMs, stopping.signal);
      if (stopping.signal.aborted) return undefined;
      for (;;) {
        const left = renewed + renewDeadlineMs - clock.now();
        if (left <= 0) return `could not renew the Lease for ${options.timing.renewDeadlineSeconds} s`;
        const sent = clock.now();
        try {
          const outcome = await bounded(left, tryAcquireOrRenew);
          if (outcome === 'holding') {
            succeeded();
            renewed = sent;
            break;
          }
          if (outcome === 'held-elsewhere') return `the Lease is held by ${observed?.lease.record.holderIdentity}`;
        } catch (err) {
          if (stopping.signal.aborted) return undefined;
          failed(err, 'renew the Lease; retrying', retryMs);
        }
        await clock.sleep(Math.min(retryMs, Math.max(renewed + renewDeadlineMs - clock.now(), 0)), stopping.signal);
        if (stopping.signal.aborted) return undefined;
      }
    }
  };

  const stopLeading = async (reason: string | undefined): Promise<void> => {
    leading = false;
    if (reason) log.warn({ ...context, reason }, 'leader election: lost the Lease; stopped leading');
    else log.info(context, 'leader election: stopped leading');
    try {
      await options.onStoppedLeading();
    } catch (err) {
      log.error({ ...context, err: kubeErrorMessage(err) }, 'leader election: stopping the leader’s work failed');
    }
  };

  /**
   * Gives the Lease up (holder `''`, duration 1 s, as client-go's release writes it), so another replica takes it
   * at its next try instead of waiting out the lease duration. A renewal the stop cut short may have been written
   * after all: on a conflict the Lease is read again, and released if it is still ours.
   */
  const release = async (): Promise<void> => {
    const current = observed?.lease;
    if (current?.record.holderIdentity !== identity) return;
    const now = clock.date();
    const released = (from: ObservedLease): LeaseRecord => ({
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: from.record.leaseTransitions,
    });
    try {
      const written = await bounded(
        renewDeadlineMs,
        async (signal) => {
          const first = await lock.update(current, released(current), signal);
          if (first !== 'conflict') return first;
          const again = await lock.get(signal);
          return again?.record.holderIdentity === identity ? lock.update(again, released(again), signal) : undefined;
        },
        false,
      );
      if (written === undefined || written === 'conflict') return;
      observe(written, true);
      log.info(context, 'leader election: released the Lease');
    } catch (err) {
      log.warn(
        { ...context, err: reasonOf(err) },
        'leader election: could not release the Lease; another replica takes it over when it expires',
      );
    }
  };

  const run = async (): Promise<void> => {
    while (!stopping.signal.aborted) {
      const acquired = await acquire();
      if (acquired === undefined) break;
      leading = true;
      log.info(context, 'leader election: became leader');
      try {
        options.onStartedLeading();
      } catch (err) {
        log.error({ ...context, err: kubeErrorMessage(err) }, 'leader election: starting the leader’s work failed');
      }
      const lost = await renew(acquired);
      if (lost === undefined) break;
      await stopLeading(lost);
    }
    if (leading) await stopLeading(undefined);
    await release();
  };

  return {
    isLeader: () => leading,
    observedLeader: () => observed?.lease.record.holderIdentity,
    start() {
      if (running || stopping.signal.aborted) return;
      log.info({ ...context, ...options.timing }, 'leader election: started');
      running = run();
    },
    async stop() {
      stopping.abort();
      await running;
    },
  };
}
