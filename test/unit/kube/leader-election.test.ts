/**
 * Leader election against a Lease kept in memory with the apiserver's concurrency rules (test/helpers/memory-lease.ts)
 * and a clock moved by hand: who leads, when the others take over, what each candidate asks of the apiserver, and
 * what it logs. Timings are kube-controller-manager's (15 s lease, 10 s renew deadline, 2 s retry period) and the
 * retry jitter is 0, so every instant below is exact.
 */
import assert from 'node:assert/strict';
import type { Logger } from '../../../server/base/log.js';
import { createLeaderElector, type LeaderElector } from '../../../server/kube/leader-election.js';
import { ManualClock, settle } from '../../helpers/manual-clock.js';
import { MemoryLease } from '../../helpers/memory-lease.js';

const TIMING = { leaseDurationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 2 };

interface LogLine {
  readonly level: string;
  readonly msg: string | undefined;
  readonly fields: Record<string, unknown>;
}

function recordingLogger(lines: LogLine[]): Logger {
  const at =
    (level: string) =>
    (fields: object, msg?: string): void => {
      lines.push({ level, msg, fields: fields as Record<string, unknown> });
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** An ApiException as client-node throws it. */
function apiError(code: number, message: string): Error {
  return Object.assign(new Error(`HTTP-Code: ${code}`), { code, body: JSON.stringify({ message }) });
}

describe('createLeaderElector()', function () {
  let clock: ManualClock;
  let lease: MemoryLease;
  /** What the candidates' work saw, in order: `A started @0`, `A stopped @20000`. */
  let events: string[];
  let logs: Map<string, LogLine[]>;
  let electors: LeaderElector[];

  beforeEach(function () {
    clock = new ManualClock();
    lease = new MemoryLease();
    events = [];
    logs = new Map();
    electors = [];
  });

  afterEach(async function () {
    lease.healAll();
    const stopped = Promise.all(electors.map((e) => e.stop()));
    await clock.advance(TIMING.renewDeadlineSeconds * 1000);
    await stopped;
  });

  function candidate(name: string, stopWork: () => Promise<void> = () => Promise.resolve()): LeaderElector {
    const lines: LogLine[] = [];
    logs.set(name, lines);
    const elector = createLeaderElector({
      lock: lease.lockFor(name),
      identity: name,
      timing: TIMING,
      log: recordingLogger(lines),
      clock,
      random: () => 0,
      onStartedLeading: () => events.push(`${name} started @${clock.now()}`),
      async onStoppedLeading() {
        await stopWork();
        events.push(`${name} stopped @${clock.now()}`);
      },
    });
    electors.push(elector);
    elector.start();
    return elector;
  }

  const warnings = (name: string) =>
    logs
      .get(name)!
      .filter((l) => l.level === 'warn')
      .map((l) => l.fields.err);

  describe('given two candidates', function () {
    it('the first creates the Lease and leads; the other only reads it, once per retry period', async function () {
      const a = candidate('A');
      await settle();
      const b = candidate('B');
      await clock.advance(60_000);
      assert.deepEqual(events, ['A started @0']);
      assert.deepEqual([a.isLeader(), b.isLeader(), b.observedLeader()], [true, false, 'A']);
      // A: a read (nothing there), the create, then one renewal every 2 s, each a single update over the version it
      // wrote last.
      assert.deepEqual(
        [lease.callsBy('A', 'get'), lease.callsBy('A', 'create'), lease.callsBy('A', 'update')],
        [1, 1, 30],
      );
      assert.deepEqual(
        [lease.callsBy('B', 'get'), lease.callsBy('B', 'create'), lease.callsBy('B', 'update')],
        [31, 0, 0],
      );
      assert.deepEqual(lease.record, {
        holderIdentity: 'A',
        leaseDurationSeconds: 15,
        acquireTime: new Date(Date.UTC(2030, 0, 1)),
        renewTime: new Date(Date.UTC(2030, 0, 1) + 60_000),
        leaseTransitions: 0,
      });
    });

    it('started at the same instant, exactly one leads: the other’s create is a conflict', async function () {
      const a = candidate('A');
      const b = candidate('B');
      await clock.advance(30_000);
      assert.deepEqual(events, ['A started @0']);
      assert.deepEqual([a.isLeader(), b.isLeader()], [true, false]);
      assert.deepEqual(
        lease.calls.filter((c) => c.by === 'B' && c.call !== 'get'),
        [{ by: 'B', call: 'create' }],
      );
    });

    it('when the leader goes silent, it stops leading at its renew deadline, and the other takes over only after the lease duration', async function () {
      candidate('A');
      await settle();
      const b = candidate('B');
      await clock.advance(10_000);
      // A's renewal at 10 s went through; from then on nothing it sends is answered (a partition, a frozen node).
      lease.fail('A', () => 'unanswered');
      await clock.advance(40_000);
      // A stops 10 s after its last renewal was sent; B saw that renewal at 10 s and may take the Lease from 25 s
      // on: its tries are every 2 s, so at 26 s.
      assert.deepEqual(events, ['A started @0', 'A stopped @20000', 'B started @26000']);
      assert.equal(b.isLeader(), true);
      assert.deepEqual(lease.record, {
        holderIdentity: 'B',
        leaseDurationSeconds: 15,
        acquireTime: new Date(Date.UTC(2030, 0, 1) + 26_000),
        renewTime: new Date(Date.UTC(2030, 0, 1) + 50_000),
        leaseTransitions: 1,
      });
      const lost = logs.get('A')!.find((l) => l.msg === 'leader election: lost the Lease; stopped leading');
      assert.equal(lost?.fields.reason, 'could not renew the Lease for 10 s');
    });

    it('a leader that stops stops its work, then releases the Lease: the other takes over at its next try', async function () {
      let finishWork: () => void = () => undefined;
      const a = candidate('A', () => new Promise((resolve) => (finishWork = resolve)));
      await settle();
      const b = candidate('B');
      await clock.advance(10_500);
      const stopped = a.stop();
      await clock.advance(3_000);
      // A's work has not finished stopping: the Lease is still A's, and B waits.
      assert.deepEqual([events, lease.record?.holderIdentity, b.isLeader()], [['A started @0'], 'A', false]);
      finishWork();
      await stopped;
      assert.deepEqual(lease.writesBy('A').at(-1), {
        holderIdentity: '',
        leaseDurationSeconds: 1,
        acquireTime: new Date(Date.UTC(2030, 0, 1) + 13_500),
        renewTime: new Date(Date.UTC(2030, 0, 1) + 13_500),
        leaseTransitions: 0,
      });
      await clock.advance(2_000);
      assert.deepEqual(events, ['A started @0', 'A stopped @13500', 'B started @14000']);
      assert.equal(lease.record?.leaseTransitions, 1);
    });

    it('a follower that stops writes nothing', async function () {
      candidate('A');
      await settle();
      const b = candidate('B');
      await clock.advance(5_000);
      await b.stop();
      assert.deepEqual(lease.writesBy('B'), []);
    });
  });

  it('steps down at its next renewal when another writer holds the Lease', async function () {
    const a = candidate('A');
    await clock.advance(5_000);
    const now = new Date(Date.UTC(2030, 0, 1) + 5_000);
    lease.overwrite({
      holderIdentity: 'C',
      leaseDurationSeconds: 15,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: 1,
    });
    await clock.advance(2_000);
    assert.deepEqual(events, ['A started @0', 'A stopped @6000']);
    assert.deepEqual([a.isLeader(), a.observedLeader(), lease.record?.holderIdentity], [false, 'C', 'C']);
    const lost = logs.get('A')!.find((l) => l.msg === 'leader election: lost the Lease; stopped leading');
    assert.equal(lost?.fields.reason, 'the Lease is held by C');
  });

  it('keeps trying while the apiserver refuses, waiting longer each time up to the lease duration, and logs each new failure once', async function () {
    lease.fail('A', () => apiError(403, 'leases.coordination.k8s.io "admission-gateway" is forbidden'));
    const a = candidate('A');
    await clock.advance(300_000);
    // 2 s doubled per failure, up to 15 s: tries at 0, 4 and 12 s, then every 15 s from 27 s to 297 s.
    assert.equal(lease.callsBy('A'), 3 + 19);
    assert.deepEqual(warnings('A'), ['HTTP 403: leases.coordination.k8s.io "admission-gateway" is forbidden']);
    lease.fail('A', () => apiError(503, 'etcdserver: leader changed'));
    await clock.advance(60_000);
    assert.deepEqual(warnings('A').at(-1), 'HTTP 503: etcdserver: leader changed');
    assert.equal(warnings('A').length, 2);
    lease.heal('A');
    await clock.advance(15_000);
    assert.equal(a.isLeader(), true);
    assert.ok(logs.get('A')!.some((l) => l.msg === 'leader election: the Lease can be read and written again'));
  });

  it('gives up a call the apiserver does not answer after the renew deadline, and says so once', async function () {
    lease.fail('A', () => 'unanswered');
    const a = candidate('A');
    await clock.advance(120_000);
    assert.equal(a.isLeader(), false);
    // Each try waits 10 s for its answer, then 4 s, 8 s, then 15 s between tries.
    assert.ok(lease.callsBy('A') <= 6, `${lease.callsBy('A')} calls in 2 minutes`);
    assert.deepEqual(warnings('A'), ['the apiserver did not answer within renewDeadlineSeconds (10 s)']);
  });
});
