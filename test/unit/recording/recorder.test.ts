import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { availablePlugins } from '../../../plugins/index.js';
import { createLogger } from '../../../server/base/log.js';
import type { ReviewedRequest } from '../../../server/dispatch/reviewer.js';
import type { RecordConfig } from '../../../server/config/types.js';
import { createMetrics, type Metrics } from '../../../server/metrics/metrics.js';
import { recordedReviewOf } from '../../../server/recording/recorded-review.js';
import { Recorder } from '../../../server/recording/recorder.js';
import { compileRedaction } from '../../../server/recording/redact.js';
import { podCreate, requestOf } from '../../fixtures/reviews/index.js';
import { heardReviews } from '../../helpers/heard-reviews.js';

/** Reviews of the fixture Pod through a real reviewer (default-labels, require-labels in warn mode), as heard. */
function reviewedPods(count: number): Promise<ReviewedRequest[]> {
  const chain = `  - plugin: default-labels
    settings: { labels: { owner: platform } }
  - plugin: require-labels
    mode: warn
    settings: { labels: [cost-center] }`;
  const requests = Array.from({ length: count }, (_, i) => {
    const request = { ...requestOf(podCreate()), uid: `uid-${i}` };
    return [request, i % 2 === 0 ? 'mutate' : 'validate'] as const;
  });
  return heardReviews(chain, availablePlugins, requests);
}

describe('Recorder', () => {
  let dir: string;
  let metrics: Metrics;
  const results = async (): Promise<Record<string, number>> => {
    const { values } = await metrics.recordedReviews.get();
    return Object.fromEntries(values.map((v) => [String(v.labels.result), v.value]));
  };
  const config = (over: Partial<RecordConfig>): RecordConfig => ({
    path: join(dir, 'recording.ndjson'),
    sampleRate: 1,
    redact: [],
    maxFileBytes: 1024 * 1024,
    routes: ['mutate', 'validate'],
    ...over,
  });
  const lines = async () =>
    (await readFile(join(dir, 'recording.ndjson'), 'utf8'))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { route: string; request: { uid: string }; answer: unknown; steps: unknown });

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'recorder-'));
    metrics = createMetrics(new Registry(), { defaultMetrics: false });
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('writes one line per review: the request, the answer as given, the route and each step', async () => {
    const recorder = new Recorder(config({}), { metrics, log: createLogger('silent') });
    for (const reviewed of await reviewedPods(2)) recorder.offer(reviewed);
    await recorder.close();
    const [mutate, validate] = await lines();
    assert.equal(mutate!.route, 'mutate');
    assert.deepEqual(mutate!.answer, {
      allowed: true,
      patch: [{ op: 'add', path: '/metadata/labels/owner', value: 'platform' }],
    });
    assert.deepEqual(mutate!.steps, [
      {
        step: 'default-labels',
        source: 'plugin',
        outcome: 'patched',
        patch: [{ op: 'add', path: '/metadata/labels/owner', value: 'platform' }],
      },
    ]);
    assert.deepEqual(validate!.answer, {
      allowed: true,
      warnings: ['require-labels: missing required label: cost-center (mode warn: not enforced)'],
    });
    assert.deepEqual(validate!.steps, [
      {
        step: 'require-labels',
        source: 'plugin',
        outcome: 'denied',
        message: 'missing required label: cost-center',
        warnings: ['require-labels: missing required label: cost-center (mode warn: not enforced)'],
      },
    ]);
    assert.deepEqual(await results(), { written: 2 });
  });

  it('records the share sampleRate says, and only the configured routes', async () => {
    // A fixed sequence of draws: below 0.5 is recorded.
    const draws = [0.1, 0.2, 0.7, 0.1, 0.49, 0.1];
    const recorder = new Recorder(config({ sampleRate: 0.5, routes: ['mutate'] }), {
      metrics,
      log: createLogger('silent'),
      random: () => draws.shift()!,
    });
    for (const reviewed of await reviewedPods(6)) recorder.offer(reviewed);
    await recorder.close();
    // uid-0 and uid-4 (mutate) drew under the rate, uid-2 (mutate) over it; uid-1, 3 and 5 are validate
    // reviews, not recorded whatever their draw.
    assert.deepEqual(
      (await lines()).map((l) => l.request.uid),
      ['uid-0', 'uid-4'],
    );
    assert.equal(Recorder.enabled(config({ sampleRate: 0 })), false);
  });

  it('drops, and counts, what would pass maxFileBytes or the queue; the file is never cut mid-line', async () => {
    const reviewed = await reviewedPods(6);
    const sizes = reviewed.map((r) =>
      Buffer.byteLength(`${JSON.stringify(recordedReviewOf(r, compileRedaction([])))}\n`),
    );
    // An existing file of 101 bytes, and room for exactly the first three lines after it.
    await writeFile(join(dir, 'recording.ndjson'), `${'x'.repeat(100)}\n`);
    const maxFileBytes = 101 + sizes[0]! + sizes[1]! + sizes[2]!;
    const recorder = new Recorder(config({ maxFileBytes }), { metrics, log: createLogger('silent') });
    for (const r of reviewed.slice(0, 4)) recorder.offer(r);
    await recorder.close();
    // Once stopped, later reviews are not written even when they would fit.
    const again = new Recorder(config({ maxFileBytes }), { metrics, log: createLogger('silent') });
    for (const r of reviewed.slice(4)) again.offer(r);
    await again.close();
    const text = await readFile(join(dir, 'recording.ndjson'), 'utf8');
    assert.equal(Buffer.byteLength(text), maxFileBytes);
    const uids = text
      .split('\n')
      .slice(1, -1)
      .map((l) => (JSON.parse(l) as { request: { uid: string } }).request.uid);
    assert.deepEqual(uids, ['uid-0', 'uid-1', 'uid-2']);
    assert.deepEqual(await results(), { written: 3, file_full: 3 });

    const small = new Recorder(config({ path: join(dir, 'other.ndjson') }), {
      metrics: (metrics = createMetrics(new Registry(), { defaultMetrics: false })),
      log: createLogger('silent'),
      maxQueuedBytes: 1,
    });
    for (const r of reviewed) small.offer(r);
    await small.close();
    assert.deepEqual(await results(), { queue_full: 6 });
  });

  it('keeps retrying a recording it cannot write, waiting longer each time, and records again once it can', async () => {
    let now = 0;
    const gauge = async () => (await metrics.recordingFailing.get()).values[0]?.value;
    const path = join(dir, 'not-yet', 'recording.ndjson');
    const recorder = new Recorder(config({ path }), { metrics, log: createLogger('silent'), now: () => now });
    const reviewed = await reviewedPods(6);
    const offer = async (at: number, r: ReviewedRequest) => {
      now = at;
      recorder.offer(r);
      await recorder.idle();
    };
    // Fails at 0; waits a second: the review at 500 is dropped at once, never queued; the retry at 1000 fails.
    await offer(0, reviewed[0]!);
    await offer(500, reviewed[1]!);
    await offer(1000, reviewed[2]!);
    assert.deepEqual({ results: await results(), failing: await gauge() }, { results: { error: 3 }, failing: 1 });
    // The folder appears (a volume mounted late); the next retry, two seconds on, opens the file.
    await mkdir(join(dir, 'not-yet'));
    await offer(2500, reviewed[3]!);
    await offer(3000, reviewed[4]!);
    await offer(3001, reviewed[5]!);
    await recorder.close();
    const uids = (await readFile(path, 'utf8'))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => (JSON.parse(l) as { request: { uid: string } }).request.uid);
    assert.deepEqual(
      { uids, results: await results(), failing: await gauge() },
      { uids: ['uid-4', 'uid-5'], results: { error: 4, written: 2 }, failing: 0 },
    );
  });

  it('counts every review a failed write loses', async () => {
    const recorder = new Recorder(config({ path: '/dev/full' }), { metrics, log: createLogger('silent') });
    // Queued together, written together: all three lost to ENOSPC.
    for (const r of await reviewedPods(3)) recorder.offer(r);
    await recorder.close();
    assert.deepEqual(
      { results: await results(), failing: (await metrics.recordingFailing.get()).values[0]?.value },
      { results: { error: 3 }, failing: 1 },
    );
  });
});
