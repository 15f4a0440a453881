import assert from 'node:assert/strict';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { HotCounter, HotGauge, HotHistogram } from '../../../server/metrics/hot-metrics.js';

const BUCKETS = [0.0005, 0.001, 0.01, 1, 10];

/** The same metrics twice: prom-client's own classes, and the hot ones, each in its own Registry. */
function pair() {
  const reference = new Registry();
  const hot = new Registry();
  const counter = { name: 'calls_total', help: 'Calls.', labelNames: ['step', 'outcome'] as const };
  const histogram = { name: 'duration_seconds', help: 'Time.', labelNames: ['phase'] as const, buckets: BUCKETS };
  const gauge = { name: 'inflight', help: 'In flight.' };
  return {
    reference,
    hot,
    counters: [new Counter({ ...counter, registers: [reference] }), new HotCounter({ ...counter, registers: [hot] })],
    histograms: [
      new Histogram({ ...histogram, registers: [reference] }),
      new HotHistogram({ ...histogram, registers: [hot] }),
    ],
    gauges: [new Gauge({ ...gauge, registers: [reference] }), new HotGauge({ ...gauge, registers: [hot] })],
  } as const;
}

describe('hot metrics', () => {
  it("render exactly as prom-client's Counter, Histogram and Gauge for the same updates", async () => {
    const { reference, hot, counters, histograms, gauges } = pair();
    for (const c of counters) {
      c.inc({ step: 'default-labels', outcome: 'patched' });
      c.inc({ step: 'say "hi"\\ \n', outcome: 'allowed' }, 2);
      c.inc({ step: 'default-labels', outcome: 'patched' }, 0.5);
      c.inc({ step: 'default-labels', outcome: 'allowed' });
    }
    // On a bound, between bounds, above every bound, zero, and a second series.
    for (const h of histograms) {
      for (const v of [0.0005, 0.0007, 0.001, 0.5, 10, 11, 0]) h.observe({ phase: 'mutate' }, v);
      h.observe({ phase: 'validate' }, 0.002);
    }
    gauges[0].inc();
    gauges[0].inc();
    gauges[0].dec();
    gauges[1].inc();
    gauges[1].inc();
    gauges[1].dec();
    const expected = await reference.metrics();
    assert.match(expected, /duration_seconds_bucket\{le="\+Inf",phase="mutate"\} 7/);
    assert.equal(await hot.metrics(), expected);
  });

  it('render no series before the first update, and none again after Registry.resetMetrics()', async () => {
    const { reference, hot, counters, histograms } = pair();
    assert.equal(await hot.metrics(), await reference.metrics());
    counters[1].inc({ step: 'a', outcome: 'allowed' });
    histograms[1].observe({ phase: 'mutate' }, 1);
    hot.resetMetrics();
    reference.resetMetrics();
    assert.equal(await hot.metrics(), await reference.metrics());
    counters[1].inc({ step: 'a', outcome: 'denied' });
    counters[0].inc({ step: 'a', outcome: 'denied' });
    assert.equal(await hot.metrics(), await reference.metrics());
  });

  it('render a metric without labels at zero from the start, as prom-client does', async () => {
    const reference = new Registry();
    const hot = new Registry();
    const config = { name: 'seconds', help: 'Time.', labelNames: [], buckets: BUCKETS };
    new Histogram({ ...config, registers: [reference] });
    new Counter({ name: 'total', help: 'All.', registers: [reference] });
    new HotHistogram({ ...config, registers: [hot] });
    new HotCounter({ name: 'total', help: 'All.', labelNames: [], registers: [hot] });
    assert.equal(await hot.metrics(), await reference.metrics());
  });

  it('refuse a negative or non-finite count and a non-finite observation, as prom-client does', () => {
    const { counters, histograms } = pair();
    assert.throws(() => counters[1].inc({ step: 'a', outcome: 'allowed' }, -1), RangeError);
    assert.throws(() => counters[1].inc({ step: 'a', outcome: 'allowed' }, Number.NaN), RangeError);
    assert.throws(() => histograms[1].observe({ phase: 'mutate' }, Number.POSITIVE_INFINITY), RangeError);
  });
});
