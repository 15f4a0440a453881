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
