import assert from 'node:assert/strict';
import { Counter, Registry } from 'prom-client';
import { HotCounter } from '../../../server/metrics/hot-metrics.js';

/** The same counter twice: prom-client's own, and the hot one, each in its own Registry. */
function pair() {
  const reference = new Registry();
  const hot = new Registry();
  const counter = { name: 'calls_total', help: 'Calls.', labelNames: ['step', 'outcome'] as const };
  return {
    reference,
    hot,
    counters: [new Counter({ ...counter, registers: [reference] }), new HotCounter({ ...counter, registers: [hot] })],
  } as const;
}

describe('hot counter', () => {
  it("renders exactly as prom-client's Counter for the same updates", async () => {
    const { reference, hot, counters } = pair();
    for (const c of counters) {
      c.inc({ step: 'default-labels', outcome: 'patched' });
      c.inc({ step: 'say "hi"\\ \n', outcome: 'allowed' }, 2);
      c.inc({ step: 'default-labels', outcome: 'patched' }, 0.5);
      c.inc({ step: 'default-labels', outcome: 'allowed' });
    }
    const expected = await reference.metrics();
    assert.match(expected, /calls_total\{step="default-labels",outcome="patched"\} 1.5/);
    assert.equal(await hot.metrics(), expected);
  });

  it('renders the totals again on every scrape, with the series in the order they were first counted', async () => {
    const { reference, hot, counters } = pair();
    for (const [round, increments] of [[0.1], [0.2, 0.3], [], [7]].entries()) {
      for (const c of counters) {
        for (const by of increments) c.inc({ step: 'a', outcome: 'allowed' }, by);
        c.inc({ step: `step-${round}`, outcome: 'denied' });
      }
      const expected = await reference.metrics();
      assert.equal(await hot.metrics(), expected, `scrape ${round}`);
      assert.equal(await hot.metrics(), expected, `scrape ${round}, again`);
    }
    assert.match(await hot.metrics(), /^calls_total\{step="a",outcome="allowed"\} 7.6$/m);
  });

  it('renders no series before the first update, and none again after Registry.resetMetrics()', async () => {
    const { reference, hot, counters } = pair();
    assert.equal(await hot.metrics(), await reference.metrics());
    counters[1].inc({ step: 'a', outcome: 'allowed' });
    hot.resetMetrics();
    reference.resetMetrics();
    assert.equal(await hot.metrics(), await reference.metrics());
    counters[1].inc({ step: 'b', outcome: 'allowed' });
    counters[1].inc({ step: 'a', outcome: 'denied' });
    counters[0].inc({ step: 'b', outcome: 'allowed' });
    counters[0].inc({ step: 'a', outcome: 'denied' });
    assert.equal(await hot.metrics(), await reference.metrics());
    // Scraped first, then reset: what the scrape copied into prom-client goes as well.
    hot.resetMetrics();
    reference.resetMetrics();
    counters[1].inc({ step: 'a', outcome: 'denied' });
    counters[0].inc({ step: 'a', outcome: 'denied' });
    const expected = await reference.metrics();
    assert.doesNotMatch(expected, /step="b"/);
    assert.equal(await hot.metrics(), expected);
  });

  it('renders a counter without labels at zero from the start and after a reset, as prom-client does', async () => {
    const reference = new Registry();
    const hot = new Registry();
    new Counter({ name: 'total', help: 'All.', registers: [reference] });
    const counter = new HotCounter({ name: 'total', help: 'All.', labelNames: [], registers: [hot] });
    assert.equal(await hot.metrics(), await reference.metrics());
    counter.inc({}, 3);
    assert.match(await hot.metrics(), /^total 3$/m);
    hot.resetMetrics();
    reference.resetMetrics();
    assert.equal(await hot.metrics(), await reference.metrics());
  });

  it("gives through get() the values the next scrape renders, as prom-client's Counter.get() does", async () => {
    const { counters } = pair();
    for (const c of counters) c.inc({ step: 'a', outcome: 'allowed' }, 2);
    const expected = await counters[0].get();
    const actual = await counters[1].get();
    assert.deepEqual(actual.values, expected.values);
    assert.deepEqual(actual.values, [{ labels: { step: 'a', outcome: 'allowed' }, value: 2 }]);
  });

  it('refuses a negative or non-finite count, as prom-client does', () => {
    const { counters } = pair();
    assert.throws(() => counters[1].inc({ step: 'a', outcome: 'allowed' }, -1), RangeError);
    assert.throws(() => counters[1].inc({ step: 'a', outcome: 'allowed' }, Number.NaN), RangeError);
    assert.throws(() => counters[1].inc({ step: 'a', outcome: 'allowed' }, Number.POSITIVE_INFINITY), RangeError);
  });
});
