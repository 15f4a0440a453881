/**
 * A clock a test moves by hand (the leader election's ElectionClock): `sleep` waits for `advance`, which fires the
 * due timers in time order and lets the work each one starts run before the next.
 */
import type { ElectionClock } from '../../server/kube/leader-election.js';

interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly resolve: () => void;
}

/** Lets every promise chain that can move without a timer move. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
}

export class ManualClock implements ElectionClock {
  private time = 0;
  private seq = 0;
  private timers: Timer[] = [];

  constructor(private readonly epochMs = Date.UTC(2030, 0, 1)) {}

  now(): number {
    return this.time;
  }

  date(): Date {
    return new Date(this.epochMs + this.time);
  }

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const timer: Timer = {
        at: this.time + Math.max(ms, 0),
        seq: this.seq++,
        resolve: () => {
          signal.removeEventListener('abort', cancel);
          resolve();
        },
      };
      const cancel = () => {
        this.timers = this.timers.filter((t) => t !== timer);
        resolve();
      };
      signal.addEventListener('abort', cancel, { once: true });
      this.timers.push(timer);
    });
  }

  /** Moves time `ms` forward, firing every timer due on the way. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    await settle();
    for (;;) {
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.time = due.at;
      due.resolve();
      await settle();
    }
    this.time = end;
    await settle();
  }

  /** Moves time forward in steps of `stepMs` until `check` holds; fails after `limitMs`. */
  async until(what: string, check: () => boolean, limitMs: number, stepMs = 10): Promise<number> {
    const start = this.time;
    while (!check()) {
      if (this.time - start >= limitMs) throw new Error(`${what}: not within ${limitMs} ms (clock at ${this.time})`);
      await this.advance(stepMs);
    }
    return this.time;
  }
}
