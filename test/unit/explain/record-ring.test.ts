/**
 * The ring of records outside the heap (explain/record-ring.ts): what was added reads back while it is held, the
 * oldest go first, a record never straddles the ring's end, and the ring grows only as far as maxBytes.
 */
import assert from 'node:assert/strict';
import { RecordRing } from '../../../server/explain/record-ring.js';

/** A record of `n` bytes, each the record's number. */
const record = (id: number, n: number): Uint8Array => new Uint8Array(n).fill(id);

/** The records the ring holds, by slot, as [first byte, length] read from the ring. */
function held(
  ring: RecordRing,
  slots: readonly number[],
  lengths: ReadonlyMap<number, number>,
): Array<[number, number]> {
  return slots.map((slot) => {
    const { ring: bytes, at } = ring.bytesOf(slot);
    const n = lengths.get(slot)!;
    const body = bytes.subarray(at, at + n);
    assert.ok(at + n <= bytes.length, 'a record lies whole before the ring ends');
    assert.ok(
      body.every((b) => b === body[0]),
      `slot ${slot} reads back as written`,
    );
    return [body[0]!, n];
  });
}

describe('RecordRing', () => {
  it('takes nothing from the system until the first record, then grows to twice what it holds, up to maxBytes', () => {
    const ring = new RecordRing(100, 4096, 1024);
    assert.equal(ring.capacity, 0);
    ring.add(record(1, 700), 700);
    assert.equal(ring.capacity, 1400, 'twice what it must hold');
    ring.add(record(2, 700), 700);
    assert.equal(ring.capacity, 1400, 'the room it had');
    ring.add(record(3, 700), 700);
    assert.equal(ring.capacity, 4096, 'twice what it must hold, but never past maxBytes');
    ring.add(record(4, 700), 700);
    ring.add(record(5, 700), 700);
    assert.equal(ring.records, 5, 'grown, it dropped none');
    assert.equal(ring.fits(700), false, '3,500 bytes held: 700 more would pass maxBytes');
  });

  it('drops the oldest to make room, wraps to its start, and keeps every record whole and readable', () => {
    const ring = new RecordRing(8, 1000, 1000);
    const lengths = new Map<number, number>();
    const ids = new Map<number, number>();
    const add = (id: number, n: number) => {
      while (!ring.fits(n)) ring.dropOldest();
      const slot = ring.add(record(id, n), n);
      lengths.set(slot, n);
      ids.set(slot, id);
    };
    // 300-byte records: three fit in 1,000 bytes, the fourth needs the first's room.
    for (let id = 1; id <= 4; id++) add(id, 300);
    assert.equal(ring.records, 3);
    assert.equal(ids.get(ring.oldestSlot), 2, 'the oldest dropped first');
    // 4 went to the ring's start. 450 bytes: there is no room after 4 until 2 and 3 (300–900) are gone too.
    add(5, 450);
    const slots = Array.from({ length: ring.records }, (_, i) => (ring.oldestSlot + i) % 8);
    assert.deepEqual(
      held(ring, slots, lengths),
      slots.map((slot) => [ids.get(slot)!, lengths.get(slot)!]),
    );
    assert.deepEqual(
      slots.map((slot) => ids.get(slot)),
      [4, 5],
    );
  });

  it('holds at most `slots` records, whatever room is left', () => {
    const ring = new RecordRing(2, 1 << 20);
    ring.add(record(1, 10), 10);
    ring.add(record(2, 10), 10);
    assert.equal(ring.fits(10), false);
    ring.dropOldest();
    assert.equal(ring.fits(10), true);
  });

  it('never fits a record larger than maxBytes, even empty', () => {
    const ring = new RecordRing(4, 1024);
    assert.equal(ring.fits(1025), false);
    assert.equal(ring.fits(1024), true);
    ring.add(record(9, 1024), 1024);
    assert.equal(ring.capacity, 1024);
  });

  it('keeps many records of varied sizes readable through thousands of wraps', () => {
    const ring = new RecordRing(50, 8192, 512);
    const lengths = new Map<number, number>();
    const ids = new Map<number, number>();
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let id = 0; id < 20_000; id++) {
      const n = 1 + (next() % 600);
      while (!ring.fits(n)) ring.dropOldest();
      const slot = ring.add(record(id % 251, n), n);
      lengths.set(slot, n);
      ids.set(slot, id % 251);
    }
    const slots = Array.from({ length: ring.records }, (_, i) => (ring.oldestSlot + i) % 50);
    assert.deepEqual(
      held(ring, slots, lengths),
      slots.map((slot) => [ids.get(slot)!, lengths.get(slot)!]),
    );
    assert.ok(ring.records > 10, `${ring.records} held`);
    assert.equal(ring.capacity, 8192);
  });
});
