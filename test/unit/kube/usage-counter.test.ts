/**
 * The usage counter every replica adds to (usage-counter.ts), on an in-memory store that answers as the
 * apiserver does: a write from a resourceVersion that is no longer current is refused with 409, as when
 * another replica wrote in between.
 */
import assert from 'node:assert/strict';
import { createLogger } from '../../../server/base/log.js';
import { createUsageCounter, type UsageCounter, type UsageStore } from '../../../server/kube/usage-counter.js';
import type { StoredCounts, WindowCounts } from '../../../server/kube/usage-window.js';

const at = (time: string) => Date.parse(time);

class Conflict extends Error {
  readonly code = 409;
}

interface Resource {
  resourceVersion: string;
  usage: StoredCounts & { [field: string]: unknown };
}

/** One stored resource per key; `replica()` reads it through a cache that lags until `catchUp()`. */
function apiserver(keys: readonly string[]) {
  let version = 1;
  const resources = new Map<string, Resource>(keys.map((key) => [key, { resourceVersion: '1', usage: {} }]));
  const stats = { writes: 0, conflicts: 0 };
  const copy = (r: Resource | undefined) => r && { resourceVersion: r.resourceVersion, counts: { ...r.usage } };
  return {
    stats,
    stored: (key: string) => resources.get(key)?.usage,
    /** Someone else (a status writer, another replica) writes the resource. */
    touch(key: string) {
      resources.get(key)!.resourceVersion = String(++version);
    },
    replica() {
      const cache = new Map([...resources].map(([key, r]) => [key, copy(r)!]));
      const store: UsageStore = {
        cached: (key) => cache.get(key),
        keys: () => [...cache.keys()],
        read: (key) => Promise.resolve(copy(resources.get(key))),
        async write(key: string, resourceVersion: string, counts: WindowCounts) {
          await Promise.resolve();
          const resource = resources.get(key)!;
          if (resource.resourceVersion !== resourceVersion) {
            stats.conflicts++;
            throw new Conflict();
          }
          // A merge patch: what it does not name stays.
          resource.usage = { ...resource.usage, ...counts };
          resource.resourceVersion = String(++version);
          stats.writes++;
        },
      };
      return { store, catchUp: () => resources.forEach((r, key) => cache.set(key, copy(r)!)) };
    },
  };
}

function counterOn(store: UsageStore, clock: { now: number }): UsageCounter {
  const counter = createUsageCounter({
    store,
    log: createLogger('silent'),
    words: { key: 'thing', counted: 'uses', unit: 'uses', resource: 'Thing' },
    lastUsed: true,
    flushMs: 1,
    now: () => clock.now,
  });
  counter.start();
  return counter;
}

describe('the usage counter (any resource, any status field)', () => {
  it('adds two replicas’ counts exactly, through conflicts, and keeps the later lastUsed of both', async () => {
    const server = apiserver(['a', 'b']);
    const [one, two] = [server.replica(), server.replica()];
    // The second replica's clock is a minute behind: it never moves lastUsed back.
    const clocks = [{ now: at('2026-11-22T10:20:00.400Z') }, { now: at('2026-11-22T10:19:00Z') }];
    const counters = [counterOn(one.store, clocks[0]!), counterOn(two.store, clocks[1]!)];
    const expected = { a: 0, b: 0 };
    for (let round = 0; round < 12; round++) {
      for (const [i, counter] of counters.entries()) {
        for (let n = 0; n <= (round + i) % 3; n++) {
          const key = n % 2 === 0 ? 'a' : 'b';
          counter.count(key);
          expected[key]++;
        }
      }
      if (round % 4 === 0) server.touch('a');
      if (round % 5 === 0) one.catchUp();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(counters.map((c) => c.stop()));
    const usage = (count: number) => ({
      count,
      windowStart: '2026-11-22T10:00:00Z',
      previousWindowCount: 0,
      lastUsed: '2026-11-22T10:20:00Z',
    });
    assert.deepEqual(server.stored('a'), usage(expected.a));
    assert.deepEqual(server.stored('b'), usage(expected.b));
    assert.ok(server.stats.conflicts > 0, 'the replicas wrote over each other and retried');
  });

  it('counts a use made before the hour into the previous window when written after it', async () => {
    const server = apiserver(['a']);
    const clock = { now: at('2026-11-22T10:59:59.900Z') };
    const counter = counterOn(server.replica().store, clock);
    counter.count('a');
    clock.now = at('2026-11-22T11:00:00.100Z');
    counter.count('a');
    await counter.stop();
    assert.deepEqual(server.stored('a'), {
      count: 1,
      windowStart: '2026-11-22T11:00:00Z',
      previousWindowCount: 1,
      lastUsed: '2026-11-22T11:00:00Z',
    });
  });
});
