/**
 * How many objects an opt-in extension served, as an additive counter in a fixed (tumbling) window of an
 * hour: `status.references.objects` (this window so far), `windowStart`, `previousWindowObjects`. Every
 * replica adds what it served to the stored value (docs/admission-provider-crd.md, "Objects served"); this is
 * the arithmetic of one such addition, kept apart from the writes so that it can be tested on its own.
 *
 * Windows start at whole multiples of their length since the epoch (for an hour: on the hour, UTC), so
 * replicas agree on them without talking to each other. A count is added to the window it was served in,
 * even when it is written after that window ended; a window never moves backwards, so a replica whose
 * clock is behind adds to the window another replica opened.
 */

export const SERVED_WINDOW_MS = 3_600_000;

/** The objects-served fields of `status.references`, as written. */
export interface ServedCounts {
  readonly objects: number;
  readonly windowStart: string;
  readonly previousWindowObjects: number;
}

/** What is stored, as read: anyone who may write the status may have written anything. */
export interface StoredServed {
  readonly objects?: unknown;
  readonly windowStart?: unknown;
  readonly previousWindowObjects?: unknown;
}

/** Objects served and not yet written, by the start of the window they were served in (ms since the epoch). */
export type WindowDeltas = ReadonlyMap<number, number>;

export interface ServedUpdate {
  /** What to write; undefined when the stored value stays as it is. */
  readonly next: ServedCounts | undefined;
  /** Objects of windows older than the previous one: too late to count anywhere. */
  readonly dropped: number;
}

/** The start of the window `ms` falls in. */
export function windowStartOf(ms: number, windowMs: number = SERVED_WINDOW_MS): number {
  return Math.floor(ms / windowMs) * windowMs;
}

/** `2026-11-22T10:00:00Z`: RFC 3339, as Kubernetes writes times (windows start on whole seconds). */
export function formatWindowStart(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A count as stored: a non-negative safe integer, else 0. */
function countOf(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;
}

/** Sums never pass what a JSON number holds exactly. */
const add = (a: number, b: number) => Math.min(a + b, Number.MAX_SAFE_INTEGER);

/**
 * The stored counts with `deltas` added, at time `now`: rotated first when the current window (or a delta's)
 * is newer than the stored one — the stored count becomes `previousWindowObjects` if its window is the one
 * just before, else 0. A stored value without a readable `windowStart` counts as no window at all.
 */
export function addServed(
  stored: StoredServed | undefined,
  deltas: WindowDeltas,
  now: number,
  windowMs: number = SERVED_WINDOW_MS,
): ServedUpdate {
  const parsed = typeof stored?.windowStart === 'string' ? Date.parse(stored.windowStart) : NaN;
  const storedWindow = Number.isNaN(parsed) ? undefined : windowStartOf(parsed, windowMs);
  let window = storedWindow ?? -Infinity;
  let objects = storedWindow === undefined ? 0 : countOf(stored?.objects);
  let previous = storedWindow === undefined ? 0 : countOf(stored?.previousWindowObjects);

  const target = Math.max(window, windowStartOf(now, windowMs), ...deltas.keys());
  if (target > window) {
    previous = window === target - windowMs ? objects : 0;
    objects = 0;
    window = target;
  }
  let added = 0;
  let dropped = 0;
  for (const [start, count] of deltas) {
    if (start === window) objects = add(objects, count);
    else if (start === window - windowMs) previous = add(previous, count);
    else {
      dropped += count;
      continue;
    }
    added += count;
  }

  const next: ServedCounts = { objects, windowStart: formatWindowStart(window), previousWindowObjects: previous };
  const unchanged =
    added === 0 &&
    (storedWindow === window ||
      // Rotating counts of zero changes nothing but the date: not worth a write.
      (objects === 0 &&
        previous === 0 &&
        countOf(stored?.objects) === 0 &&
        countOf(stored?.previousWindowObjects) === 0));
  return { next: unchanged ? undefined : next, dropped };
}
