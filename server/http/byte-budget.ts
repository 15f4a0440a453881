/**
 * A bound on the memory the webhook server lets reviews hold at once. Only one body at a time is capped by
 * server.maxRequestBytes; without this, a handful of concurrent large reviews (anyone may create a large
 * ConfigMap, or a Pod of many containers) take the process past its memory limit, and every replica can be
 * OOM-killed the same way. Each review is weighed by what it will hold — its body, and the objects and arrays
 * parsed from it, which the steps copy and track — from the moment its body is announced until its answer
 * has been written. A review that does not fit now is answered 429 at once and the apiserver retries it; one
 * that could never fit is refused with 413.
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

/** The review needs more than the budget holds now (429) or ever (413). */
export class BudgetExceededError extends Error {
  override readonly name = 'BudgetExceededError';
  constructor(
    /** What the review needs. */
    readonly weight: number,
    /** It could not fit even alone. */
    readonly never: boolean,
    limit: number,
  ) {
    super(
      never
        ? `the review would hold about ${weight} bytes of memory, more than server.maxInflightBytes (${limit}) allows`
        : `the gateway holds as much review memory as it may (server.maxInflightBytes, ${limit} bytes); retry`,
    );
  }
}

export class ByteBudget {
  private used = 0;

  constructor(
    readonly limit: number,
    /** Told of every change, e.g. a gauge. */
    private readonly onChange: (delta: number) => void = () => undefined,
  ) {}

  get inUse(): number {
    return this.used;
  }

  /** A lease of this budget for one review, released once. */
  lease(): ByteLease {
    return new ByteLease(this);
  }

  /** Takes `bytes` more for a review already holding `held`; throws BudgetExceededError when they do not fit. */
  take(bytes: number, held: number): void {
    if (this.used + bytes > this.limit)
      throw new BudgetExceededError(held + bytes, held + bytes > this.limit, this.limit);
    this.add(bytes);
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

  constructor(private readonly budget: ByteBudget) {}

  get bytes(): number {
    return this.held;
  }

  /** Takes `bytes` more; throws BudgetExceededError when they do not fit. */
  take(bytes: number): void {
    this.budget.take(bytes, this.held);
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
