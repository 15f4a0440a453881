/**
 * The work one replica does for all, on two replicas sharing one Lease (kept in memory, time moved by hand): it
 * runs on the leader only, admission_gateway_leader{lease} says which replica that is, and it moves to the other
 * replica when the leader stops — stopped on the first before the second starts it.
 */
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { KubeConfig } from '@kubernetes/client-node';
import { createLogger } from '../../../server/base/log.js';
import { startLeaderDuties, type LeaderDuties } from '../../../server/kube/leader-duties.js';
import { createMetrics, type Metrics } from '../../../server/metrics/metrics.js';
import { ManualClock, settle } from '../../helpers/manual-clock.js';
import { MemoryLease } from '../../helpers/memory-lease.js';

const CONFIG = {
  leaseName: 'admission-gateway',
  leaseNamespace: 'admission-gateway',
  leaseDurationSeconds: 15,
  renewDeadlineSeconds: 10,
  retryPeriodSeconds: 2,
};

describe('startLeaderDuties()', function () {
  let clock: ManualClock;
  let lease: MemoryLease;
  let work: string[];
  const replicas: { name: string; metrics: Metrics; duties: LeaderDuties }[] = [];

  function replica(name: string) {
    const metrics = createMetrics(new Registry(), { defaultMetrics: false });
    const duties = startLeaderDuties({
      kc: new KubeConfig(),
      config: CONFIG,
      metrics,
      log: createLogger('silent'),
      identity: name,
      lock: lease.lockFor(name),
      clock,
      random: () => 0,
      duties: [
        {
          name: 'periodic-audit',
          start() {
            work.push(`${name} audits @${clock.now()}`);
            return {
              stop: () => {
                work.push(`${name} stopped auditing @${clock.now()}`);
                return Promise.resolve();
              },
            };
          },
        },
      ],
    });
    const r = { name, metrics, duties };
    replicas.push(r);
    return r;
  }

  /** The gauge's samples as /metrics shows them. */
  const leaderGauge = async (r: { metrics: Metrics }) =>
    (await r.metrics.registry.getSingleMetricAsString('admission_gateway_leader'))
      .split('\n')
      .filter((line) => !line.startsWith('#'));
  const leading = ['admission_gateway_leader{lease="admission-gateway"} 1'];
  const following = ['admission_gateway_leader{lease="admission-gateway"} 0'];

  beforeEach(function () {
    clock = new ManualClock();
    lease = new MemoryLease();
    work = [];
  });

  afterEach(async function () {
    const stopped = Promise.all(replicas.splice(0).map((r) => r.duties.stop()));
    await clock.advance(10_000);
    await stopped;
  });

  it('runs the work on the leader only, and the gauge is 1 there and 0 on the other', async function () {
    const a = replica('a');
    await settle();
    const b = replica('b');
    assert.deepEqual([await leaderGauge(a), await leaderGauge(b)], [leading, following]);
    await clock.advance(60_000);
    assert.deepEqual(work, ['a audits @0']);
    assert.deepEqual([await leaderGauge(a), await leaderGauge(b)], [leading, following]);
  });

  it('moves the work when the leader stops: stopped there first, then started on the other', async function () {
    const a = replica('a');
    await settle();
    const b = replica('b');
    await clock.advance(5_000);
    const stopping = a.duties.stop();
    await clock.advance(1_000);
    await stopping;
    assert.deepEqual(await leaderGauge(a), following);
    await clock.advance(2_000);
    assert.deepEqual(work, ['a audits @0', 'a stopped auditing @5000', 'b audits @6000']);
    assert.deepEqual([await leaderGauge(a), await leaderGauge(b)], [following, leading]);
  });
});
