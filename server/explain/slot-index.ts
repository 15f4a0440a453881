/**
 * Slots by key, for a ring whose slots are taken and let go in turn (trace-buffer.ts): a hash of the key picks a
 * bucket, and each bucket is a chain of slots, oldest first, held in typed arrays. Adding puts a slot at its
 * bucket's end; the ring lets go of its oldest slot, which is always the first of its bucket, so both are constant
 * time whatever the keys, and the index holds no object per key. It holds hashes, not keys: `slots` gives the
 * slots whose key has the same hash, oldest first, and the caller compares the keys themselves.
 */
export class SlotIndex {
  private readonly first: Int32Array;
  private readonly last: Int32Array;
  private readonly next: Int32Array;
  private readonly hashes: Int32Array;
  private readonly mask: number;

  constructor(slots: number) {
    // At least twice the slots, a power of two: chains of one or none on average.
    let buckets = 2;
    while (buckets < 2 * slots) buckets *= 2;
    this.mask = buckets - 1;
    this.first = new Int32Array(buckets).fill(-1);
    this.last = new Int32Array(buckets).fill(-1);
    this.next = new Int32Array(Math.max(slots, 1)).fill(-1);
    this.hashes = new Int32Array(Math.max(slots, 1));
  }

  add(slot: number, hash: number): void {
    const bucket = hash & this.mask;
    this.hashes[slot] = hash;
    this.next[slot] = -1;
    const last = this.last[bucket]!;
    if (last < 0) this.first[bucket] = slot;
    else this.next[last] = slot;
    this.last[bucket] = slot;
  }

  /** Lets go of a slot, which must be the oldest its bucket holds. */
  remove(slot: number): void {
    const bucket = this.hashes[slot]! & this.mask;
    const next = this.next[slot]!;
    this.first[bucket] = next;
    if (next < 0) this.last[bucket] = -1;
  }

  /** The slots added with this hash and still held, oldest first. */
  slots(hash: number): number[] {
    const out: number[] = [];
    for (let slot = this.first[hash & this.mask]!; slot >= 0; slot = this.next[slot]!)
      if (this.hashes[slot] === hash) out.push(slot);
    return out;
  }
}

/** A 32-bit FNV-1a hash of a string's code units. */
export function hashOf(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h | 0;
}
