/**
 * A bound on the memory the webhook server lets reviews hold at once. Only one body at a time is capped by
 * server.maxRequestBytes; without this, a handful of concurrent large reviews (anyone may create a large
 * ConfigMap, or a Pod of many containers) take the process past its memory limit, and every replica can be
 * OOM-killed the same way. Each review is weighed by what it holds — its body as its bytes arrive, then the
 * objects and arrays parsed from it, which the steps copy and track — until its answer has been written. A
 * declared length only decides, before anything is read, whether the review could fit now (else 429 at once,
 * and the apiserver retries it) or ever (else 413): it is never held, so a client that declares a large body
 * and sends it slowly holds only what it has sent. The last part of the budget is kept for small reviews (an
 * ordinary Pod, a SubjectAccessReview) once their body has arrived: large reviews, however many, never take it,
 * and neither do the bytes of a body still arriving, so no body that stalls can hold it.
 */

/**
 * Memory a review holds per byte of its body at its peak: the bytes, the string, the parsed values and the
 * answer (measured with large ConfigMaps; docs/decisions.md).
 */
export const WEIGHT_PER_BODY_BYTE = 5;

/**
 * Memory a review holds per object or array in it while steps copy, track and patch it (measured with a Pod
 * of 40,000 containers through the shipped chain; docs/decisions.md).
 */
export const WEIGHT_PER_CONTAINER = 2048;

/**
 * The share of the budget only small reviews may take, and only once their body has arrived: what large reviews
 * and bodies still arriving leave for an ordinary Pod review and the authorization webhook's
 * SubjectAccessReviews (each arrives in one piece), whatever else is sent at once.
 */
export const SMALL_REVIEW_SHARE = 1 / 16;

/**
 * A review that weighs at most this is small: a Pod of a few containers weighs about 120 KB, a
 * SubjectAccessReview a few KB.
 */
export const SMALL_REVIEW_BYTES = 1024 * 1024;

/** The review needs more than the budget holds now (429) or ever (413). */
export class BudgetExceededError extends Error {
  override readonly name = 'BudgetExceededError';
  constructor(
    /** What the review needs. */
    readonly weight: number,
    /** It could not fit even alone. */
    readonly never: boolean,
    limit: number,
    /** What a review of this weight may hold at most (less than `limit` for a large one). */
    room: number,
  ) {
    super(
      never
        ? `the review would hold about ${weight} bytes of memory, more than server.maxInflightBytes (${limit}) allows${
            room < limit ? ` a review over ${SMALL_REVIEW_BYTES} bytes (${room})` : ''
          }`
        : `the gateway holds as much review memory as it may (server.maxInflightBytes, ${limit} bytes); retry`,
    );
  }
}

export class ByteBudget {
  private used = 0;
  /** Kept for small reviews (SMALL_REVIEW_SHARE). */
  readonly reserved: number;

  constructor(
    readonly limit: number,
    /** Told of every change, e.g. a gauge. */
    private readonly onChange: (delta: number) => void = () => undefined,
  ) {
    this.reserved = Math.floor(limit * SMALL_REVIEW_SHARE);
  }

  get inUse(): number {
    return this.used;
  }

  /** A lease of this budget for one review, released once. */
  lease(): ByteLease {
    return new ByteLease(this);
  }

  /**
   * What a review of `weight` may hold at most: the whole budget when it is small and its body has arrived,
   * else all but the reserve.
   */
  roomFor(weight: number, arriving = false): number {
    return weight <= SMALL_REVIEW_BYTES && !arriving ? this.limit : this.limit - this.reserved;
  }

  /**
   * Takes `bytes` more for a review that is to weigh `weight` in all (these bytes included); `arriving`: they are
   * bytes of a body still arriving. Throws BudgetExceededError when they do not fit.
   */
  take(bytes: number, weight: number, arriving = false): void {
    this.check(bytes, weight, arriving);
    this.add(bytes);
  }

  /** Throws BudgetExceededError unless `bytes` more would fit now for a review to weigh `weight` in all. */
  check(bytes: number, weight: number, arriving = false): void {
    if (this.used + bytes <= this.roomFor(weight, arriving)) return;
    const room = this.roomFor(weight);
    throw new BudgetExceededError(weight, weight > room, this.limit, room);
  }

  /** Takes `bytes` even past the limit: an answer already computed is sent, and holds its bytes meanwhile. */
  force(bytes: number): void {
    this.add(bytes);
  }

  give(bytes: number): void {
    this.add(-bytes);
  }

  private add(delta: number): void {
    this.used += delta;
    this.onChange(delta);
  }
}

export class ByteLease {
  private held = 0;
  /** The weight the review declared it will reach (its Content-Length, weighed), not held until it arrives. */
  private expected = 0;

  constructor(private readonly budget: ByteBudget) {}

  get bytes(): number {
    return this.held;
  }

  /**
   * Declares that the review will weigh `weight` once its body has arrived, without holding any of it: throws
   * BudgetExceededError when that would not fit now, or ever. A review that declared a large weight stays
   * large while its bytes arrive (it cannot take the share kept for small ones).
   */
  expect(weight: number): void {
    this.budget.check(weight - this.held, weight);
    this.expected = weight;
  }

  /** Takes `bytes` more (`arriving`: of a body not yet whole); throws BudgetExceededError when they do not fit. */
  take(bytes: number, arriving = false): void {
    this.budget.take(bytes, Math.max(this.held + bytes, this.expected), arriving);
    this.held += bytes;
  }

  force(bytes: number): void {
    this.budget.force(bytes);
    this.held += bytes;
  }

  release(): void {
    this.budget.give(this.held);
    this.held = 0;
  }
}
