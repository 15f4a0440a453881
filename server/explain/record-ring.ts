/**
 * Records of bytes in a ring outside the JavaScript heap, oldest dropped first: the kept traces' bytes
 * (trace-buffer.ts). Nothing in it is an object the collector marks or moves, however long it is kept. Each record
 * lies whole in one piece of the ring; a record that does not fit before the ring's end starts again at its
 * beginning. The ring starts small and at least doubles, up to `maxBytes`, when a record finds no room; past that, the
 * oldest records make room. Records are numbered by slot (0 to `slots` − 1, taken in turn), as the buffer numbers
 * its traces.
 */
export class RecordRing {
  private ring: Buffer;
  private readonly start: Float64Array;
  private readonly length: Uint32Array;
  /** The slot of the oldest record, and how many there are. */
  private oldest = 0;
  private count = 0;
  /** Where the next record goes when it fits there. */
  private head = 0;
  /** The bytes of the records held. */
  private live = 0;

  constructor(
    readonly slots: number,
    private readonly maxBytes: number,
    private readonly initialBytes = 64 * 1024,
  ) {
    // Taken from the system at the first record: a buffer that keeps none takes nothing.
    this.ring = Buffer.alloc(0);
    this.start = new Float64Array(slots);
    this.length = new Uint32Array(slots);
  }

  /** The bytes the ring has taken from the system. */
  get capacity(): number {
    return this.ring.length;
  }

  get records(): number {
    return this.count;
  }

  /** The slot of the oldest record (when there is one). */
  get oldestSlot(): number {
    return this.oldest;
  }

  /**
   * Whether a record of `n` bytes would fit without dropping any, in a free slot, once the ring has grown as far
   * as it may. With no records, only one larger than `maxBytes` does not.
   */
  fits(n: number): boolean {
    if (this.count === this.slots) return false;
    if (this.room(n) >= 0) return true;
    return this.ring.length < this.maxBytes && this.live + n <= this.maxBytes;
  }

  /**
   * Adds a record (the first `n` bytes of `bytes`) in the next slot and returns the slot. There must be a free
   * slot, and room once the ring has grown: the caller drops the oldest records until `fits` says so.
   */
  add(bytes: Uint8Array, n: number): number {
    let at = this.room(n);
    if (at < 0) {
      this.grow(n);
      at = this.room(n);
    }
    const slot = (this.oldest + this.count) % this.slots;
    this.ring.set(bytes.subarray(0, n), at);
    this.start[slot] = at;
    this.length[slot] = n;
    this.count++;
    this.live += n;
    this.head = at + n;
    return slot;
  }

  dropOldest(): void {
    this.live -= this.length[this.oldest]!;
    this.oldest = (this.oldest + 1) % this.slots;
    this.count--;
    if (this.count === 0) this.head = 0;
  }

  /** The ring and where a slot's record starts in it (valid until the next `add`). */
  bytesOf(slot: number): { readonly ring: Buffer; readonly at: number } {
    return { ring: this.ring, at: this.start[slot]! };
  }

  /** Where a record of `n` bytes would go without dropping or growing, or −1. */
  private room(n: number): number {
    const size = this.ring.length;
    if (this.count === 0) return n <= size ? 0 : -1;
    const tail = this.start[this.oldest]!;
    // Not wrapped: the records lie in [tail, head); free are [head, size) and [0, tail).
    if (this.head > tail) return n <= size - this.head ? this.head : n <= tail ? 0 : -1;
    // Wrapped: the records lie in [tail, size) and [0, head); free is [head, tail).
    return n <= tail - this.head ? this.head : -1;
  }

  /** A ring at least twice as large, and large enough for `n` more bytes, its records copied in order. */
  private grow(n: number): void {
    const size = Math.min(this.maxBytes, Math.max(this.initialBytes, 2 * this.ring.length, 2 * (this.live + n)));
    const ring = Buffer.allocUnsafeSlow(size);
    let at = 0;
    for (let i = 0; i < this.count; i++) {
      const slot = (this.oldest + i) % this.slots;
      const from = this.start[slot]!;
      this.ring.copy(ring, at, from, from + this.length[slot]!);
      this.start[slot] = at;
      at += this.length[slot]!;
    }
    this.ring = ring;
    this.head = at;
  }
}
