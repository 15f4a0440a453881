/**
 * A usage count kept in a resource's status as an additive counter in a fixed (tumbling) window of an hour:
 * the count of this window so far, `windowStart`, the count of the window before, and optionally when it was
 * last used. Every replica adds what it counted to the stored value (docs/admission-provider-crd.md, "Objects
 * served"); this is the arithmetic of one such addition, kept apart from the writes so that it can be tested on
 * its own. The names the counts have in a status are the store's business (usage-counter.ts).
 *
 * Windows start at whole multiples of their length since the epoch (for an hour: on the hour, UTC), so
 * replicas agree on them without talking to each other. A count is added to the window it was made in,
 * even when it is written after that window ended; a window never moves backwards, so a replica whose
 * clock is behind adds to the window another replica opened. Likewise `lastUsed` only ever moves forward.
 */

export const USAGE_WINDOW_MS = 3_600_000;

/** The counts to write, under neutral names. */
export interface WindowCounts {
  readonly count: number;
  readonly windowStart: string;
  readonly previousWindowCount: number;
  /** RFC 3339; only when the counter records it. */
  readonly lastUsed?: string;
}

/** What is stored, as read: anyone who may write the status may have written anything. */
export interface StoredCounts {
  readonly count?: unknown;
  readonly windowStart?: unknown;
  readonly previousWindowCount?: unknown;
  readonly lastUsed?: unknown;
}

/** Counts not yet written: by the start of the window they were made in (ms since the epoch), and the latest. */
export interface PendingCounts {
  readonly windows: ReadonlyMap<number, number>;
  /** The instant of the latest use counted (ms since the epoch), when the counter records it. */
  readonly lastUsed?: number | undefined;
}

export interface CountsUpdate {
  /** What to write; undefined when the stored value stays as it is. */
  readonly next: WindowCounts | undefined;
  /** Counts of windows older than the previous one: too late to count anywhere. */
  readonly dropped: number;
}

/** The start of the window `ms` falls in. */
export function windowStartOf(ms: number, windowMs: number = USAGE_WINDOW_MS): number {
  return Math.floor(ms / windowMs) * windowMs;
}

/** `2026-11-22T10:00:00Z`: RFC 3339 to the second, as Kubernetes writes times (windows start on whole seconds). */
export function formatTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A count as stored: a non-negative safe integer, else 0. */
function countOf(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;
}

/** A time as stored, in ms since the epoch; undefined when it is not one. */
function timeOf(value: unknown): number | undefined {
  const parsed = typeof value === 'string' ? Date.parse(value) : NaN;
  return Number.isNaN(parsed) ? undefined : parsed;
}

/** Sums never pass what a JSON number holds exactly. */
const add = (a: number, b: number) => Math.min(a + b, Number.MAX_SAFE_INTEGER);

/**
 * The stored counts with `pending` added, at time `now`: rotated first when the current window (or a pending
 * count's) is newer than the stored one — the stored count becomes the previous window's if its window is the
 * one just before, else 0. A stored value without a readable `windowStart` counts as no window at all. A
 * pending `lastUsed` later than the stored one replaces it, to the second; an earlier one leaves it (and is not
 * written: a merge patch keeps what it does not name).
 */
export function addCounts(
  stored: StoredCounts | undefined,
  pending: PendingCounts,
  now: number,
  windowMs: number = USAGE_WINDOW_MS,
): CountsUpdate {
  const parsed = timeOf(stored?.windowStart);
  const storedWindow = parsed === undefined ? undefined : windowStartOf(parsed, windowMs);
  let window = storedWindow ?? -Infinity;
  let count = storedWindow === undefined ? 0 : countOf(stored?.count);
  let previous = storedWindow === undefined ? 0 : countOf(stored?.previousWindowCount);

  const target = Math.max(window, windowStartOf(now, windowMs), ...pending.windows.keys());
  if (target > window) {
    previous = window === target - windowMs ? count : 0;
    count = 0;
    window = target;
  }
  let added = 0;
  let dropped = 0;
  for (const [start, n] of pending.windows) {
    if (start === window) count = add(count, n);
    else if (start === window - windowMs) previous = add(previous, n);
    else {
      dropped += n;
      continue;
    }
    added += n;
  }

  // Kept to the second, as written: a use within the stored second moves nothing.
  const last = pending.lastUsed === undefined ? undefined : Math.floor(pending.lastUsed / 1000) * 1000;
  const storedLast = timeOf(stored?.lastUsed);
  const later = last !== undefined && (storedLast === undefined || last > storedLast);
  const next: WindowCounts = {
    count,
    windowStart: formatTime(window),
    previousWindowCount: previous,
    ...(later ? { lastUsed: formatTime(last) } : {}),
  };
  const unchanged =
    added === 0 &&
    !later &&
    (storedWindow === window ||
      // Rotating counts of zero changes nothing but the date: not worth a write.
      (count === 0 && previous === 0 && countOf(stored?.count) === 0 && countOf(stored?.previousWindowCount) === 0));
  return { next: unchanged ? undefined : next, dropped };
}
