import assert from 'node:assert/strict';
import { addServed, formatWindowStart, windowStartOf } from '../../../server/kube/served-window.js';

const HOUR = 3_600_000;
const at = (time: string) => Date.parse(time);
const deltas = (...entries: [string, number][]) => new Map(entries.map(([time, n]) => [windowStartOf(at(time)), n]));

describe('the objects-served window (status.references.objects)', () => {
  it('starts windows on the hour, UTC, written as Kubernetes writes times', () => {
    assert.equal(formatWindowStart(windowStartOf(at('2026-11-22T10:59:59.999Z'))), '2026-11-22T10:00:00Z');
    assert.equal(formatWindowStart(windowStartOf(at('2026-11-22T11:00:00Z'))), '2026-11-22T11:00:00Z');
  });

  it('starts counting in the current window', () => {
    const now = at('2026-11-22T10:20:00Z');
    assert.deepEqual(addServed(undefined, deltas(['2026-11-22T10:19:00Z', 3]), now), {
      next: { objects: 3, windowStart: '2026-11-22T10:00:00Z', previousWindowObjects: 0 },
      dropped: 0,
    });
  });

  it("adds to what is stored for the same window: other replicas' counts stay", () => {
    const stored = { namespaces: 4, objects: 7, windowStart: '2026-11-22T10:00:00Z', previousWindowObjects: 2 };
    const { next } = addServed(stored, deltas(['2026-11-22T10:30:00Z', 5]), at('2026-11-22T10:31:00Z'));
    assert.deepEqual(next, { objects: 12, windowStart: '2026-11-22T10:00:00Z', previousWindowObjects: 2 });
  });

  it('rotates when the window ended: this window starts from the delta, the last one becomes previous', () => {
    const stored = { objects: 7, windowStart: '2026-11-22T10:00:00Z', previousWindowObjects: 2 };
    const { next } = addServed(stored, deltas(['2026-11-22T11:00:05Z', 1]), at('2026-11-22T11:00:06Z'));
    assert.deepEqual(next, { objects: 1, windowStart: '2026-11-22T11:00:00Z', previousWindowObjects: 7 });
  });

  it('rotates without a delta once the window ended, and forgets a window older than the previous one', () => {
    const stored = { objects: 7, windowStart: '2026-11-22T10:00:00Z', previousWindowObjects: 2 };
    assert.deepEqual(addServed(stored, new Map(), at('2026-11-22T11:10:00Z')).next, {
      objects: 0,
      windowStart: '2026-11-22T11:00:00Z',
      previousWindowObjects: 7,
    });
    assert.deepEqual(addServed(stored, new Map(), at('2026-11-22T13:10:00Z')).next, {
      objects: 0,
      windowStart: '2026-11-22T13:00:00Z',
      previousWindowObjects: 0,
    });
  });

  it('writes nothing when nothing was served and the window holds, or when only zeros would rotate', () => {
    const current = { objects: 7, windowStart: '2026-11-22T10:00:00Z', previousWindowObjects: 2 };
    assert.equal(addServed(current, new Map(), at('2026-11-22T10:59:00Z')).next, undefined);
    const zeros = { objects: 0, windowStart: '2026-11-22T08:00:00Z', previousWindowObjects: 0 };
    assert.equal(addServed(zeros, new Map(), at('2026-11-22T10:59:00Z')).next, undefined);
    assert.equal(addServed(undefined, new Map(), at('2026-11-22T10:59:00Z')).next, undefined);
  });

  it('counts an object in the window it was served in, even when written after that window ended', () => {
    const stored = { objects: 7, windowStart: '2026-11-22T10:00:00Z', previousWindowObjects: 2 };
    const late = deltas(['2026-11-22T10:59:59Z', 4], ['2026-11-22T11:00:01Z', 1]);
    assert.deepEqual(addServed(stored, late, at('2026-11-22T11:00:03Z')), {
      next: { objects: 1, windowStart: '2026-11-22T11:00:00Z', previousWindowObjects: 11 },
      dropped: 0,
    });
    // Another replica rotated already: the late count goes to previousWindowObjects.
    const rotated = { objects: 3, windowStart: '2026-11-22T11:00:00Z', previousWindowObjects: 9 };
    assert.deepEqual(addServed(rotated, deltas(['2026-11-22T10:59:59Z', 4]), at('2026-11-22T11:00:03Z')).next, {
      objects: 3,
      windowStart: '2026-11-22T11:00:00Z',
      previousWindowObjects: 13,
    });
    // Two windows late: nowhere to count it.
    assert.deepEqual(addServed(rotated, deltas(['2026-11-22T09:30:00Z', 4]), at('2026-11-22T11:00:03Z')), {
      next: undefined,
      dropped: 4,
    });
  });

  it("never moves the window back for a replica whose clock is behind: it adds to the other replica's window", () => {
    const ahead = { objects: 3, windowStart: '2026-11-22T11:00:00Z', previousWindowObjects: 9 };
    const behind = at('2026-11-22T10:59:58Z');
    assert.deepEqual(addServed(ahead, new Map([[windowStartOf(behind), 2]]), behind).next, {
      objects: 3,
      windowStart: '2026-11-22T11:00:00Z',
      previousWindowObjects: 11,
    });
  });

  it('reads a stored value anyone may have written as no count at all', () => {
    const now = at('2026-11-22T10:20:00Z');
    for (const stored of [
      { objects: -5, windowStart: '2026-11-22T10:00:00Z' },
      { objects: 1.5, windowStart: '2026-11-22T10:00:00Z' },
      { objects: '12', windowStart: '2026-11-22T10:00:00Z' },
    ]) {
      assert.deepEqual(addServed(stored, deltas(['2026-11-22T10:19:00Z', 1]), now).next?.objects, 1);
    }
    assert.deepEqual(addServed({ objects: 40, windowStart: 'yesterday' }, new Map(), now).next, {
      objects: 0,
      windowStart: '2026-11-22T10:00:00Z',
      previousWindowObjects: 0,
    });
  });

  it('takes its window length from the caller', () => {
    const minute = 60_000;
    const stored = { objects: 2, windowStart: formatWindowStart(0), previousWindowObjects: 0 };
    assert.deepEqual(addServed(stored, new Map(), minute + 1, minute).next, {
      objects: 0,
      windowStart: formatWindowStart(minute),
      previousWindowObjects: 2,
    });
    assert.equal(windowStartOf(HOUR + minute + 1, minute), HOUR + minute);
  });
});
