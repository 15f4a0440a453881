/**
 * The index of a ring's slots by key hash (explain/slot-index.ts): a key's slots oldest first, only those still
 * held, and keys whose hashes share a bucket kept apart.
 */
import assert from 'node:assert/strict';
import { SlotIndex, hashOf } from '../../../server/explain/slot-index.js';

describe('SlotIndex', () => {
  it("gives a key's slots oldest first, and lets the oldest go", () => {
    const index = new SlotIndex(8);
    const a = hashOf('a');
    const b = hashOf('b');
    index.add(0, a);
    index.add(1, b);
    index.add(2, a);
    index.add(3, a);
    assert.deepEqual(index.slots(a), [0, 2, 3]);
    assert.deepEqual(index.slots(b), [1]);
    index.remove(0);
    index.remove(1);
    assert.deepEqual(index.slots(a), [2, 3]);
    assert.deepEqual(index.slots(b), []);
    // A slot taken again.
    index.add(0, b);
    assert.deepEqual(index.slots(b), [0]);
    assert.deepEqual(index.slots(a), [2, 3]);
  });

  it('keeps apart hashes that share a bucket, and follows a ring through many turns', () => {
    const slots = 16;
    const index = new SlotIndex(slots);
    // Hashes equal in their low bits share a bucket (32 buckets here).
    const hashes = [5, 5 + 32, 5 + 64, 5 + 96];
    const keyOf: number[] = [];
    for (let i = 0; i < 1000; i++) {
      const slot = i % slots;
      if (i >= slots) index.remove(slot);
      keyOf[slot] = hashes[i % hashes.length]!;
      index.add(slot, keyOf[slot]);
    }
    // The last 16 of 1,000, oldest first: i = 984 … 999, slot i % 16.
    for (const [k, hash] of hashes.entries()) {
      const expected = Array.from({ length: 16 }, (_, j) => 984 + j)
        .filter((i) => i % hashes.length === k)
        .map((i) => i % slots);
      assert.deepEqual(index.slots(hash), expected);
    }
  });

  it('hashes strings by every code unit', () => {
    assert.notEqual(hashOf('uid-1'), hashOf('uid-2'));
    assert.notEqual(hashOf('\u0100'), hashOf('\u0000'));
    assert.equal(hashOf(''), hashOf(''));
  });
});
