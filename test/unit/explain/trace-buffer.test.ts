import assert from 'node:assert/strict';
import type { AdmissionRequest } from '../../../server/admission/types.js';
import { ReviewedRequest } from '../../../server/trace/decision-trace.js';
import { MAX_TRACED_VALUES_BYTES } from '../../../server/explain/kept-trace.js';
import { TraceBuffer, type TraceBufferOptions } from '../../../server/explain/trace-buffer.js';
import { definePlugin } from '../../../server/plugin-api/index.js';
import { compileRedaction } from '../../../server/recording/redact.js';
import { podCreate, requestOf } from '../../fixtures/reviews/index.js';
import { heardReviews } from '../../helpers/heard-reviews.js';

const everything = { rules: [{ operations: ['*' as const], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] };

/** Adds `count` labels of `size` characters each: an operation each. */
const labels = definePlugin({
  name: 'labels',
  match: everything,
  settings: (raw) => raw as { count: number; size: number },
  setup: ({ count, size }) => ({
    mutate({ object }) {
      const meta = (object.metadata ??= {});
      const added = (meta.labels ??= {});
      for (let i = 0; i < count; i++) added[`a${i}`] = String(i % 10).repeat(size);
    },
  }),
});

/** The review of `request` on /mutate by a chain labelling `count` × `size`, as the buffer hears of it. */
async function reviewed(request: AdmissionRequest, count = 1, size = 8): Promise<ReviewedRequest> {
  const chain = `  - { plugin: labels, settings: { count: ${count}, size: ${size} } }`;
  const [heard] = await heardReviews(chain, [labels], [[request, 'mutate']]);
  return heard!;
}

/** The same review under another uid and trace id. */
function again(base: ReviewedRequest, uid: string, traceId: string): ReviewedRequest {
  const request = { ...base.request, uid };
  return new ReviewedRequest(request, base.response, base.decision, base.notable, {
    ...base.traceInput,
    request,
    traceId,
  });
}

const options = (over: Partial<TraceBufferOptions> = {}): TraceBufferOptions => ({
  size: 1000,
  maxBytes: 8 * 1024 * 1024,
  includeObjects: false,
  redaction: compileRedaction([]),
  keep: 'all',
  ...over,
});

const uidOf = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
const traceIdOf = (i: number) => String(i).padStart(32, '0');

describe('TraceBuffer', () => {
  it('keeps a review carrying megabytes in a few kilobytes, each string cut and saying so', async () => {
    const request = requestOf(podCreate());
    const long = 'x'.repeat(5_000_000);
    Object.assign(request, { name: `n${long}`, namespace: `s${long}`, subResource: `r${long}` });
    request.kind = { group: `g${long}`, version: `v${long}`, kind: `k${long}` };
    request.userInfo = { username: `u${long}` };
    const buffer = new TraceBuffer(options());
    const base = await reviewed(request);
    for (let i = 0; i < 20; i++) buffer.add(again(base, uidOf(i), traceIdOf(i)));
    const cut = (c: string) => `${c}${'x'.repeat(255)}… (4999745 more characters)`;
    const trace = buffer.get(uidOf(19))!;
    assert.deepEqual(
      { request: trace.request, clipped: trace.clipped, summary: buffer.recent(1)[0]!.name },
      {
        request: {
          operation: 'CREATE',
          kind: `${cut('g')}/${cut('v')}/${cut('k')}`,
          resource: `v1/pods/${cut('r')}`,
          namespace: cut('s'),
          name: cut('n'),
          dryRun: false,
          user: cut('u'),
        },
        clipped: true,
        summary: cut('n'),
      },
    );
    assert.ok(buffer.bytes < 20 * 8 * 1024, `20 traces count ${buffer.bytes} bytes`);
    const served = JSON.stringify(buffer.recent(1000)).length + JSON.stringify(buffer.withTraceId(traceIdOf(3))).length;
    assert.ok(served < 20 * 4 * 1024, `served ${served} characters`);
  });

  it('holds at most maxBytes, dropping the oldest; a uid and a trace id find what is still kept', async () => {
    // Each trace keeps its values (includeObjects): about MAX_TRACED_VALUES_BYTES, so a megabyte holds some 30.
    const base = await reviewed(requestOf(podCreate()), 40, 1000);
    const buffer = new TraceBuffer(options({ includeObjects: true, maxBytes: 1024 * 1024 }));
    // Two reviews of each trace id, as a review's mutate and validate calls are.
    for (let i = 0; i < 100; i++) buffer.add(again(base, uidOf(i), traceIdOf(i >> 1)));
    const kept = buffer.recent(1000).map((s) => s.uid);
    const first = 100 - kept.length;
    assert.ok(buffer.bytes <= 1024 * 1024 && buffer.bytes > 1024 * 1024 - 64 * 1024, `${buffer.bytes} bytes`);
    assert.ok(kept.length > 20 && kept.length < 40, `${kept.length} kept`);
    assert.deepEqual(
      kept,
      Array.from({ length: kept.length }, (_, i) => uidOf(99 - i)),
    );
    assert.deepEqual(
      {
        dropped: buffer.get(uidOf(first - 1)),
        oldest: buffer.get(uidOf(first))?.uid,
        newestTrace: buffer.withTraceId(traceIdOf(49)).map((t) => t.uid),
        droppedTrace: buffer.withTraceId(traceIdOf(0)),
      },
      { dropped: undefined, oldest: uidOf(first), newestTrace: [uidOf(98), uidOf(99)], droppedTrace: [] },
    );
    // A trace id of which one review was dropped: the other is still found.
    const half = first % 2 === 1 ? first - 1 : first - 2;
    assert.deepEqual(
      buffer.withTraceId(traceIdOf(half >> 1)).map((t) => t.uid),
      first % 2 === 1 ? [uidOf(first)] : [],
    );
    const values = buffer.get(uidOf(99))!.patch!.map((op) => ('value' in op ? op.value : undefined));
    const whole = values.filter((v) => v === String(values.indexOf(v) % 10).repeat(1000));
    assert.ok(whole.length * 1002 <= MAX_TRACED_VALUES_BYTES && whole.length >= 30, `${whole.length} values kept`);
    assert.deepEqual(
      values.slice(whole.length),
      values.slice(whole.length).map(() => '<left out: the trace keeps 32768 bytes of values at most>'),
    );
  });

  it('keeps the newest review of a uid sent again, and the ring wraps around its size', async () => {
    const base = await reviewed(requestOf(podCreate()));
    const buffer = new TraceBuffer(options({ size: 3 }));
    for (let i = 0; i < 7; i++) buffer.add(again(base, uidOf(i % 2), traceIdOf(i % 2)));
    // Kept: the reviews 4, 5, 6 (uids 0, 1, 0).
    assert.deepEqual(
      {
        recent: buffer.recent(10).map((s) => s.uid),
        ofZero: buffer.withTraceId(traceIdOf(0)).length,
        ofOne: buffer.withTraceId(traceIdOf(1)).length,
        found: [buffer.get(uidOf(0))?.uid, buffer.get(uidOf(1))?.uid],
      },
      { recent: [uidOf(0), uidOf(1), uidOf(0)], ofZero: 2, ofOne: 1, found: [uidOf(0), uidOf(1)] },
    );
  });

  it('leaves out a value larger than MAX_TRACED_VALUE_BYTES, saying so', async () => {
    const base = await reviewed(requestOf(podCreate()), 2, 5000);
    const buffer = new TraceBuffer(options({ includeObjects: true }));
    buffer.add(base);
    const trace = buffer.get(base.request.uid)!;
    assert.deepEqual(
      { patch: trace.patch, clipped: trace.clipped },
      {
        patch: [
          { op: 'add', path: '/metadata/labels/a0', value: '<left out: more than 4096 bytes>' },
          { op: 'add', path: '/metadata/labels/a1', value: '<left out: more than 4096 bytes>' },
        ],
        clipped: true,
      },
    );
  });
});
