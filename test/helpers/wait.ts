/** Waiting on conditions without fixed sleeps: poll until true, or fail with what was awaited. */
import { setTimeout as delay } from 'node:timers/promises';

/**
 * Resolves once `check()` returns true (or a resolved true); rejects after `timeoutMs` naming `what`.
 * For conditions that have no event to await (a file watcher reloading a certificate).
 */
export async function eventually(
  what: string,
  check: () => boolean | Promise<boolean>,
  { timeoutMs = 5000, intervalMs = 20 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await delay(intervalMs);
  }
}

/** Conditions re-checked whenever their owner says something happened (a request, a close, an answer). */
export interface Conditions {
  /** Re-checks every pending `until`. */
  readonly notify: () => void;
  /** Resolves once `check()` holds (checked now and on every notify); rejects after `timeoutMs` naming `what`. */
  readonly until: (what: string, check: () => boolean, timeoutMs?: number) => Promise<void>;
}

export function conditions(defaultTimeoutMs: number): Conditions {
  const listeners = new Set<() => void>();
  return {
    notify: () => {
      for (const listener of [...listeners]) listener();
    },
    until: (what, check, timeoutMs = defaultTimeoutMs) => {
      if (check()) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const listener = () => {
          if (!check()) return;
          clearTimeout(timer);
          listeners.delete(listener);
          resolve();
        };
        const timer = setTimeout(() => {
          listeners.delete(listener);
          reject(new Error(`timed out after ${timeoutMs} ms waiting until ${what}`));
        }, timeoutMs);
        listeners.add(listener);
      });
    },
  };
}
