/**
 * Large reviews for the large-review lane's tests: a gateway with the lane on or off, a Pod big enough for it, and
 * what the tests compare between the lanes (answers, traces, recordings, metric counts) read from a gateway.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { podCreate } from '../fixtures/reviews/index.js';
import { startHarness, type Harness, type HarnessOptions, type HttpAnswer } from './gateway-harness.js';
import { LANE_PLUGINS_MODULE, laneTestPlugins } from './lane-plugins.js';
import type { ReceivedSpan } from './otlp-receiver.js';

/** Every large review here is over it; the ordinary fixture Pod is under it. */
export const THRESHOLD = 16 * 1024;

/** The fixture Pod with `count` containers (its body well over THRESHOLD), uid `uid`. */
export function largePod(uid: string, count = 1000): object {
  const review = podCreate();
  review.request!.uid = uid;
  review.request!.object!.spec = {
    containers: Array.from({ length: count }, (_, i) => ({
      name: `c${i}`,
      image: i % 2 ? 'nginx:latest' : 'nginx:1.25',
    })),
  };
  return review;
}

export type Lanes = { workers: number; queue?: number; niceness?: number; youngGenerationMiB?: number };

/** What a gateway is started with besides its chain: more of gateway.yaml, and the harness's cluster stand-ins. */
export type Extra = { readonly yaml?: object; readonly harness?: Partial<HarnessOptions> };

/** A gateway whose chain is `chain`, with the lane on (`workers` ≥ 1) or off (0); traces and recording on. */
export async function gateway(chain: object[], lanes: Lanes, extra: Extra = {}): Promise<Harness> {
  const yaml = stringify({
    server: {
      largeReviews: {
        thresholdBytes: THRESHOLD,
        workers: lanes.workers,
        queue: lanes.queue ?? 4,
        ...(lanes.niceness === undefined ? {} : { niceness: lanes.niceness }),
        ...(lanes.youngGenerationMiB === undefined ? {} : { youngGenerationMiB: lanes.youngGenerationMiB }),
      },
    },
    explain: { keep: 'all', auditAnnotation: true },
    record: { path: 'recording.ndjson', sampleRate: 1 },
    chain,
    ...extra.yaml,
  });
  return startHarness({ yaml, plugins: laneTestPlugins, pluginsModule: LANE_PLUGINS_MODULE, ...extra.harness });
}

export const PODS = { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['*'], resources: ['pods'] }] };

/** What differs between two runs of one review whatever lane it took: times. */
export function timeless(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(timeless);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (['ms', 'startedAt', 'recordedAt', 'deadlineLeftMs'].includes(key)) continue;
    out[key] = timeless(v);
  }
  return out;
}

/** Large reviews a gateway handed to its lane's workers, by route. */
export const LANE_REVIEWS = 'admission_gateway_large_review_lane_reviews_total';

/** How many reviews of `route` (`mutate`, `validate`) the gateway's large-review lane took. */
export const laneTook = (h: Harness, route: string): Promise<number> => h.metric(LANE_REVIEWS, { route });

/** The gateway's own counters and histogram counts (not its times, memory or process figures). */
export async function counts(h: Harness): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const metric of await h.gateway.metrics.registry.getMetricsAsJSON()) {
    // Which lane took a review is the one count that differs by design (asserted on its own: LANE_REVIEWS).
    if (/_(process|nodejs)_|inflight|connections|_bytes|large_review_lane_reviews/.test(metric.name)) continue;
    for (const v of metric.values) {
      const name = (v as { metricName?: string }).metricName ?? metric.name;
      if (String(metric.type) === 'histogram' && !name.endsWith('_count')) continue;
      if (String(metric.type) === 'gauge') continue;
      out[`${name}${JSON.stringify(v.labels)}`] = v.value;
    }
  }
  return out;
}

/**
 * The two gateways' counts, once they agree or after 5 s: a recording's line is counted when its write completes,
 * which may be after the answer (and later in one lane than in the other).
 */
export async function settledCounts(a: Harness, b: Harness): Promise<[Record<string, number>, Record<string, number>]> {
  for (let i = 0; ; i++) {
    const both: [Record<string, number>, Record<string, number>] = [await counts(a), await counts(b)];
    if (i === 200 || JSON.stringify(both[0]) === JSON.stringify(both[1])) return both;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The recording's lines once `n` are written. */
export async function recorded(h: Harness, n: number): Promise<unknown[]> {
  for (let i = 0; i < 200; i++) {
    const text = await readFile(join(h.dir, 'recording.ndjson'), 'utf8').catch(() => '');
    const lines = text.split('\n').filter(Boolean);
    if (lines.length >= n) return lines.map((line) => JSON.parse(line) as unknown);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`the recording has fewer than ${n} lines`);
}

/** The log line `msg` once it has been logged. */
export async function logged(h: Harness, msg: string): Promise<void> {
  for (let i = 0; i < 800; i++) {
    if (h.logs.some((line) => line.msg === msg)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`"${msg}" was never logged`);
}

/** The kept shadow entries, once the shadow steps have finished. */
export async function explained(h: Harness, uid: string, shadowSteps: number): Promise<Record<string, unknown>> {
  for (let i = 0; i < 200; i++) {
    const answer = await h.ops(`/explain/${uid}`);
    const trace = answer.body as Record<string, unknown>;
    if (answer.status === 200 && ((trace.shadow as unknown[] | undefined)?.length ?? 0) >= shadowSteps) return trace;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no trace of ${uid} with ${shadowSteps} shadow entries`);
}

const tempDirs: string[] = [];

/** A directory of its own for a test's files; removeTempDirs removes it. */
export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'lane-'));
  tempDirs.push(dir);
  return dir;
}

/** Removes every directory tempDir made. */
export async function removeTempDirs(): Promise<void> {
  await Promise.all(tempDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

/** A trace's spans as one reads them: names, kinds, attributes, status, events, who is whose parent. */
export function spanShape(spans: readonly ReceivedSpan[]) {
  const named = new Map(spans.map((span) => [span.spanId, span.name]));
  return spans
    .map(({ name, kind, attributes, status, events, parentSpanId }) => ({
      name,
      kind,
      attributes,
      status,
      events,
      parent: named.get(parentSpanId) ?? (parentSpanId === '' ? 'root' : parentSpanId),
    }))
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

/** A large Pod labelled `size: <size>` (what a `spins-until` entry of the tests matches on). */
export function largePodSized(uid: string, size: string): object {
  const large = largePod(uid) as { request: { object: { metadata: object } } };
  large.request.object.metadata = { ...large.request.object.metadata, labels: { size } };
  return large;
}

/**
 * Sends `large` to /mutate of `lane`, whose chain spins on it until `release` exists, and checks that the event loop
 * answers probes, ordinary reviews and /metrics meanwhile; then releases it. Its answer.
 */
export async function heldInWorker(lane: Harness, large: object, release: string): Promise<HttpAnswer> {
  let answered: HttpAnswer | undefined;
  const pending = lane.post('/mutate', large).then((a) => (answered = a));
  await logged(lane, 'spinning');
  assert.equal((await lane.health('/healthz')).status, 200);
  assert.equal((await lane.review('/mutate', podCreate())).response.allowed, true);
  assert.equal((await lane.ops('/metrics')).status, 200);
  assert.equal(answered, undefined, 'the large review is still in its worker');
  await writeFile(release, '');
  return pending;
}
