import assert from 'node:assert/strict';
import { addCounts, formatTime, windowStartOf } from '../../../server/kube/usage-window.js';

const HOUR = 3_600_000;
const at = (time: string) => Date.parse(time);
const deltas = (...entries: [string, number][]) => ({
  windows: new Map(entries.map(([time, n]) => [windowStartOf(at(time)), n])),
});
const NONE = { windows: new Map<number, number>() };

describe('the usage window (objects served, reviews an exception let off)', () => {
  it('starts windows on the hour, UTC, written as Kubernetes writes times', () => {
    assert.equal(formatTime(windowStartOf(at('2026-11-22T10:59:59.999Z'))), '2026-11-22T10:00:00Z');
    assert.equal(formatTime(windowStartOf(at('2026-11-22T11:00:00Z'))), '2026-11-22T11:00:00Z');
  });

  it('starts counting in the current window', () => {
    const now = at('2026-11-22T10:20:00Z');
    assert.deepEqual(addCounts(undefined, deltas(['2026-11-22T10:19:00Z', 3]), now), {
      next: { count: 3, windowStart: '2026-11-22T10:00:00Z', previousWindowCount: 0 },
      dropped: 0,
    });
  });

  it("adds to what is stored for the same window: other replicas' counts stay", () => {
    const stored = { namespaces: 4, count: 7, windowStart: '2026-11-22T10:00:00Z', previousWindowCount: 2 };
    const { next } = addCounts(stored, deltas(['2026-11-22T10:30:00Z', 5]), at('2026-11-22T10:31:00Z'));
    assert.deepEqual(next, { count: 12, windowStart: '2026-11-22T10:00:00Z', previousWindowCount: 2 });
  });

  it('rotates when the window ended: this window starts from the delta, the last one becomes previous', () => {
    const stored = { count: 7, windowStart: '2026-11-22T10:00:00Z', previousWindowCount: 2 };
    const { next } = addCounts(stored, deltas(['2026-11-22T11:00:05Z', 1]), at('2026-11-22T11:00:06Z'));
    assert.deepEqual(next, { count: 1, windowStart: '2026-11-22T11:00:00Z', previousWindowCount: 7 });
  });

  it('rotates without a delta once the window ended, and forgets a window older than the previous one', () => {
    const stored = { count: 7, windowStart: '2026-11-22T10:00:00Z', previousWindowCount: 2 };
    assert.deepEqual(addCounts(stored, NONE, at('2026-11-22T11:10:00Z')).next, {
      count: 0,
      windowStart: '2026-11-22T11:00:00Z',
      previousWindowCount: 7,
    });
    assert.deepEqual(addCounts(stored, NONE, at('2026-11-22T13:10:00Z')).next, {
      count: 0,
      windowStart: '2026-11-22T13:00:00Z',
      previousWindowCount: 0,
    });
  });

  it('writes nothing when nothing was served and the window holds, or when only zeros would rotate', () => {
    const current = { count: 7, windowStart: '2026-11-22T10:00:00Z', previousWindowCount: 2 };
    assert.equal(addCounts(current, NONE, at('2026-11-22T10:59:00Z')).next, undefined);
    const zeros = { count: 0, windowStart: '2026-11-22T08:00:00Z', previousWindowCount: 0 };
    assert.equal(addCounts(zeros, NONE, at('2026-11-22T10:59:00Z')).next, undefined);
    assert.equal(addCounts(undefined, NONE, at('2026-11-22T10:59:00Z')).next, undefined);
  });

  it('counts an object in the window it was served in, even when written after that window ended', () => {
    const stored = { count: 7, windowStart: '2026-11-22T10:00:00Z', previousWindowCount: 2 };
    const late = deltas(['2026-11-22T10:59:59Z', 4], ['2026-11-22T11:00:01Z', 1]);
    assert.deepEqual(addCounts(stored, late, at('2026-11-22T11:00:03Z')), {
      next: { count: 1, windowStart: '2026-11-22T11:00:00Z', previousWindowCount: 11 },
      dropped: 0,
    });
    // Another replica rotated already: the late count goes to previousWindowCount.
    const rotated = { count: 3, windowStart: '2026-11-22T11:00:00Z', previousWindowCount: 9 };
    assert.deepEqual(addCounts(rotated, deltas(['2026-11-22T10:59:59Z', 4]), at('2026-11-22T11:00:03Z')).next, {
      count: 3,
      windowStart: '2026-11-22T11:00:00Z',
      previousWindowCount: 13,
    });
    // Two windows late: nowhere to count it.
    assert.deepEqual(addCounts(rotated, deltas(['2026-11-22T09:30:00Z', 4]), at('2026-11-22T11:00:03Z')), {
      next: undefined,
      dropped: 4,
    });
  });

  it("never moves the window back for a replica whose clock is behind: it adds to the other replica's window", () => {
    const ahead = { count: 3, windowStart: '2026-11-22T11:00:00Z', previousWindowCount: 9 };
    const behind = at('2026-11-22T10:59:58Z');
    assert.deepEqual(addCounts(ahead, { windows: new Map([[windowStartOf(behind), 2]]) }, behind).next, {
      count: 3,
      windowStart: '2026-11-22T11:00:00Z',
      previousWindowCount: 11,
    });
  });

  it('reads a stored value anyone may have written as no count at all', () => {
    const now = at('2026-11-22T10:20:00Z');
    for (const stored of [
      { count: -5, windowStart: '2026-11-22T10:00:00Z' },
      { count: 1.5, windowStart: '2026-11-22T10:00:00Z' },
      { count: '12', windowStart: '2026-11-22T10:00:00Z' },
    ]) {
      assert.deepEqual(addCounts(stored, deltas(['2026-11-22T10:19:00Z', 1]), now).next?.count, 1);
    }
    assert.deepEqual(addCounts({ count: 40, windowStart: 'yesterday' }, NONE, now).next, {
      count: 0,
      windowStart: '2026-11-22T10:00:00Z',
      previousWindowCount: 0,
    });
  });

  it('takes its window length from the caller', () => {
    const minute = 60_000;
    const stored = { count: 2, windowStart: formatTime(0), previousWindowCount: 0 };
    assert.deepEqual(addCounts(stored, NONE, minute + 1, minute).next, {
      count: 0,
      windowStart: formatTime(minute),
      previousWindowCount: 2,
    });
    assert.equal(windowStartOf(HOUR + minute + 1, minute), HOUR + minute);
  });

  it('moves lastUsed forward to the second, and never back for a replica whose clock is behind', () => {
    const now = at('2026-11-22T10:20:00Z');
    const stored = {
      count: 3,
      windowStart: '2026-11-22T10:00:00Z',
      previousWindowCount: 0,
      lastUsed: '2026-11-22T10:15:00Z',
    };
    const used = (time: string) => ({ ...deltas([time, 1]), lastUsed: at(time) });
    assert.deepEqual(addCounts(stored, used('2026-11-22T10:19:59.750Z'), now).next, {
      count: 4,
      windowStart: '2026-11-22T10:00:00Z',
      previousWindowCount: 0,
      lastUsed: '2026-11-22T10:19:59Z',
    });
    // Behind the stored time, or within its second: counted, and lastUsed not written (the merge patch keeps it).
    for (const time of ['2026-11-22T10:14:00Z', '2026-11-22T10:15:00.900Z']) {
      assert.deepEqual(addCounts(stored, used(time), now).next, {
        count: 4,
        windowStart: '2026-11-22T10:00:00Z',
        previousWindowCount: 0,
      });
    }
    // A lastUsed alone is worth a write (its use fell in a window too old to count); a stale one is not.
    const late = {
      windows: new Map([[windowStartOf(at('2026-11-22T08:10:00Z')), 1]]),
      lastUsed: at('2026-11-22T10:16:00Z'),
    };
    assert.deepEqual(addCounts(stored, late, now), {
      next: { count: 3, windowStart: '2026-11-22T10:00:00Z', previousWindowCount: 0, lastUsed: '2026-11-22T10:16:00Z' },
      dropped: 1,
    });
    assert.equal(addCounts(stored, { windows: new Map(), lastUsed: at('2026-11-22T10:15:00Z') }, now).next, undefined);
    // Anything unreadable stored is replaced.
    assert.equal(
      addCounts({ ...stored, lastUsed: 'never' }, used('2026-11-22T10:14:00Z'), now).next?.lastUsed,
      '2026-11-22T10:14:00Z',
    );
  });
});
