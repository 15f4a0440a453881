/**
 * The bound on one provider's calls: at most `limit` handed to the transport at once, at most `maxWaiting`
 * more waiting their turn in order, and any call beyond refused at once. A waiting call whose signal aborts
 * leaves the line without ever reaching the transport.
 *
 * Why not undici's own queue: a Pool queues without bound, and a request it has queued cannot be taken
 * back — an aborted one is only dropped when a connection picks it up, and dropping it then closes that
 * connection (undici aborts a request by destroying its socket). A backlog of expired calls would cost one
 * TLS handshake each; here it costs nothing.
 */

/** The waiting line is full; the provider client reports it as reason `connection`. */
export class SlotsFullError extends Error {
  override readonly name = 'SlotsFullError';
  readonly code = 'ERR_POOL_FULL';
}

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
  readonly signal: AbortSignal;
  readonly onAbort: () => void;
}

export class CallSlots {
  private active = 0;
  private readonly waiting: Waiter[] = [];
  private idle: (() => void) | undefined;

  constructor(
    private readonly limit: number,
    private readonly maxWaiting: number,
  ) {}

  /** Takes a slot now if one is free (the common case, without a promise). */
  tryAcquire(): boolean {
    if (this.active >= this.limit || this.waiting.length > 0) return false;
    this.active++;
    return true;
  }

  /**
   * Waits for a slot. Rejects at once with SlotsFullError when `maxWaiting` calls already wait, and with
   * `aborted()` when the signal aborts first.
   */
  acquire(signal: AbortSignal, aborted: () => Error): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    if (signal.aborted) return Promise.reject(aborted());
    if (this.waiting.length >= this.maxWaiting) {
      return Promise.reject(new SlotsFullError(`${this.waiting.length} call(s) already wait for a connection`));
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          const at = this.waiting.indexOf(waiter);
          if (at >= 0) this.waiting.splice(at, 1);
          this.settleIdle();
          reject(aborted());
        },
      };
      signal.addEventListener('abort', waiter.onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  /** Gives a slot back: to the first waiting call, or to the pool of free ones. */
  release(): void {
    const next = this.waiting.shift();
    if (next) {
      next.signal.removeEventListener('abort', next.onAbort);
      next.resolve();
      return;
    }
    this.active--;
    this.settleIdle();
  }

  /** Resolves once no call holds or waits for a slot. */
  drained(): Promise<void> {
    if (this.active === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.idle;
      this.idle = () => {
        previous?.();
        resolve();
      };
    });
  }

  private settleIdle(): void {
    if (this.active > 0 || this.waiting.length > 0 || !this.idle) return;
    const idle = this.idle;
    this.idle = undefined;
    idle();
  }
}
