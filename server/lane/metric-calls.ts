/**
 * The metrics a worker of the large-review lane updates, carried to the main thread's registry: in the worker
 * every update of a metric is recorded as a call instead of counted, and the main thread makes the same call on
 * its own metric of that name. The one registry /metrics serves then shows the lane's reviews as it shows the
 * main lane's, histograms included (prom-client has no way to add another registry's buckets in).
 */
import type { Metrics } from '../metrics/metrics.js';

const UPDATES = ['inc', 'dec', 'set', 'observe', 'reset'] as const;
type Update = (typeof UPDATES)[number];

/** One update: the metric's key in Metrics, the method, its arguments (label values and numbers). */
export type MetricCall = readonly [metric: string, method: Update, args: readonly unknown[]];

type MetricObject = Record<string, unknown>;

/** The metric objects of `metrics` by key (the registry is not one). */
function metricObjects(metrics: Metrics): Array<[string, MetricObject]> {
  const entries = Object.entries(metrics as unknown as Record<string, unknown>);
  return entries.filter(
    (entry): entry is [string, MetricObject] =>
      entry[0] !== 'registry' && typeof entry[1] === 'object' && entry[1] !== null,
  );
}

/** Makes every update of `metrics` a call handed to `record` (and nothing else): the worker's side. */
export function recordMetricCalls(metrics: Metrics, record: (call: MetricCall) => void): void {
  for (const [key, metric] of metricObjects(metrics)) {
    for (const method of UPDATES) {
      if (typeof metric[method] === 'function') metric[method] = (...args: unknown[]) => record([key, method, args]);
    }
  }
}

/** Makes the recorded calls on `metrics`: the main thread's side. A key or method it does not have is skipped. */
export function replayMetricCalls(metrics: Metrics, calls: readonly MetricCall[]): void {
  const byKey = metrics as unknown as Readonly<Record<string, MetricObject | undefined>>;
  for (const [key, method, args] of calls) {
    if (key === 'registry' || !Object.hasOwn(metrics, key) || !UPDATES.includes(method)) continue;
    const metric = byKey[key];
    const update = metric?.[method];
    if (typeof update === 'function') (update as (...a: unknown[]) => unknown).apply(metric, [...args]);
  }
}
