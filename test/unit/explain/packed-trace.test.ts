/**
 * A packed trace (explain/packed-trace.ts) reads back as the trace its kept input gives: every part a trace shows,
 * for reviews of the shipped chain, for the parts only some reviews have, and for strings of any code units. What
 * cannot be packed (an operation with its value) is kept whole and reads back the same.
 */
import assert from 'node:assert/strict';
import type { AdmissionRequest, JsonPatchOperation } from '../../../server/admission/types.js';
import { keptInput, type KeptInput } from '../../../server/explain/kept-trace.js';
import {
  StepArrays,
  packReview,
  packTrace,
  unpackTrace,
  type PackedTrace,
} from '../../../server/explain/packed-trace.js';
import { RecordWriter } from '../../../server/explain/record-bytes.js';
import { compileRedaction } from '../../../server/recording/redact.js';
import {
  TRACE_ANNOTATION,
  buildDecisionTrace,
  traceAnnotation,
  traceIdOfUid,
  type ReviewedRequest,
  type TraceInput,
} from '../../../server/trace/decision-trace.js';
import type { StepDetail, StepReport } from '../../../server/trace/step-report.js';
import { OBJECT_SELECTOR_DOES_NOT_MATCH } from '../../../server/steps/match.js';
import { availablePlugins } from '../../../plugins/index.js';
import { edited, podCreate, requestOf } from '../../fixtures/reviews/index.js';
import { heardReviews } from '../../helpers/heard-reviews.js';

const SHIPPED_LIKE = `
  - { plugin: default-labels, settings: { labels: { admissiongateway.io/admitted: 'true' } } }
  - { plugin: resource-defaults, settings: { requests: { cpu: 100m, memory: 128Mi } } }
  - { plugin: image-policy, mode: warn, settings: { forbidLatest: true } }
  - { plugin: require-labels, settings: { labels: [team] } }
  - plugin: pod-security
    mode: warn
    match:
      rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: ['*'], resources: [pods] }]
      objectSelector: { matchLabels: { checked: 'yes' } }
`;

const kept = (reviewed: ReviewedRequest, includeObjects = false): KeptInput =>
  keptInput(reviewed.traceInput, { includeObjects, redaction: compileRedaction([]) });

/** A kept input packed: what is kept beside the bytes, and the bytes. */
function pack(k: KeptInput, steps = new StepArrays()): PackedTrace & { readonly bytes: Buffer } {
  const w = new RecordWriter();
  const packed = packTrace(k, w, steps);
  // At an offset, as in the buffer's ring.
  const bytes = Buffer.concat([Buffer.from('xyz'), w.bytes.subarray(0, w.length)]);
  return { ...packed, bytes };
}

const unpack = (packed: ReturnType<typeof pack>): KeptInput =>
  unpackTrace(packed.bytes, 3, packed.steps, packed.objects);

/** The trace a kept input gives, and the one its packed form gives. */
function bothTraces(k: KeptInput, steps = new StepArrays()) {
  const packed = pack(k, steps);
  const back = unpack(packed);
  return {
    packed,
    expected: { trace: buildDecisionTrace(k.input), bytes: k.bytes, clipped: k.clipped },
    actual: { trace: buildDecisionTrace(back.input), bytes: back.bytes, clipped: back.clipped },
  };
}

async function shippedReviews(): Promise<ReviewedRequest[]> {
  const labelled = requestOf(edited(podCreate(), { 'request.object.metadata.labels': { team: 'a', checked: 'yes' } }));
  const unlabelled: AdmissionRequest = {
    ...requestOf(edited(podCreate(), { 'request.object.metadata.labels': { app: 'web' } })),
    uid: '7a1c2d3e-4a5b-4c6d-8e7f-901234567890',
  };
  return heardReviews(SHIPPED_LIKE, availablePlugins, [
    [labelled, 'mutate'],
    [labelled, 'validate'],
    [unlabelled, 'validate'],
  ]);
}

describe('packed traces', () => {
  it('read back as the trace of their kept input: patches, warnings, refusals, skips and their reasons', async () => {
    const reviews = await shippedReviews();
    const [mutated, warned, refused] = reviews.map((r) => bothTraces(kept(r)));
    for (const { expected, actual } of [mutated!, warned!, refused!]) assert.deepStrictEqual(actual, expected);
    // What each shows, so that the comparison is of traces that have these parts.
    assert.ok(mutated!.expected.trace.patch?.length);
    assert.ok(warned!.expected.trace.warnings?.length);
    assert.equal(refused!.expected.trace.allowed, false);
    assert.ok(refused!.expected.trace.steps.some((s) => s.outcome === 'skipped' && s.reason));
  });

  it('hold an ordinary review as bytes and a shared steps array, no objects of its own', async () => {
    const [mutated, warned] = await shippedReviews();
    const steps = new StepArrays();
    const a = pack(kept(warned!), steps);
    const b = pack(kept(warned!), steps);
    assert.equal(a.objects, undefined);
    assert.equal(pack(kept(mutated!), steps).objects, undefined);
    assert.equal(a.steps, b.steps, 'one array for the reviews of one route');
    assert.equal(a.traceId, undefined, 'a trace id made from the uid is made again, not kept');
  });

  it('read back the parts only some reviews have: a trace id given, rounds, levels, shadow steps, conflicts', async () => {
    const [mutated] = await shippedReviews();
    const base = kept(mutated!).input;
    const reports: StepReport[] = [
      ...base.reports.map((r, i) =>
        i === 0 ? { ...r, round: 1, level: 2, failedOpen: true, reason: 'timeout', mode: 'warn' as const } : r,
      ),
      // A step no detail names (one skipped), and a step reinvoked: named again after a later one.
      { step: 'not-run', outcome: 'skipped', ms: 0, reason: 'no match' },
      { ...base.reports[0]!, round: 1 },
    ];
    // A step's operations that are not the review's (a later step overwrote them) are kept whole.
    const notTheReviews = [
      { op: 'remove' as const, path: '/metadata/annotations/x' },
      { op: 'move' as const, from: '/a', path: '/b' },
    ];
    const details: StepDetail[] = base.details.map((d, i) =>
      i === 0 ? { ...d, patch: [...(d.patch ?? []), ...notTheReviews], patchOpsOmitted: 7 } : d,
    );
    const input: TraceInput = {
      ...base,
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      reports,
      details,
      shadow: [{ step: 'shadow-labels', outcome: 'denied', message: 'no cost-center' }],
      shadowSteps: 1,
      patchOpsOmitted: 3,
      conflicts: new Map([
        [base.reports[1]!.step, { count: 2, first: { path: '/a', earlier: base.reports[0]!.step, earlierPath: '/a' } }],
      ]),
      response: { ...base.response, auditAnnotations: { 'a/b': 'c' }, warnings: ['w1', 'w2'] },
    };
    const { packed, expected, actual } = bothTraces({ input, bytes: 1234, clipped: true });
    assert.deepStrictEqual(actual, expected);
    assert.equal(packed.traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
    // The shadow steps fill their array in after the answer: the packed trace holds that array itself.
    assert.equal(unpack(packed).input.shadow, input.shadow);
  });

  it('read back the decision-trace annotation, written as a mark when it is the one made from the keys', async () => {
    const [mutated] = await shippedReviews();
    const base = kept(mutated!).input;
    const uid = base.request.uid;
    const given = '4bf92f3577b34da6a3ce929d0e0e4736';
    const cases: Array<[string | undefined, Record<string, string>, boolean]> = [
      // The trace id made from the uid, and one given: the value is the keys', after another annotation.
      [traceIdOfUid(uid), { 'a/b': 'c', [TRACE_ANNOTATION]: traceAnnotation(uid, traceIdOfUid(uid)!) }, false],
      [given, { [TRACE_ANNOTATION]: traceAnnotation(uid, given), 'a/b': 'c' }, false],
      // The same key with another value (a step wrote it as written), or the value of another review's keys.
      [given, { [TRACE_ANNOTATION]: 'uid=x traceId=y' }, true],
      [given, { [TRACE_ANNOTATION]: traceAnnotation(uid, traceIdOfUid(uid)!) }, true],
    ];
    for (const [traceId, auditAnnotations, asText] of cases) {
      const input: TraceInput = { ...base, traceId, response: { ...base.response, auditAnnotations } };
      const { packed, expected, actual } = bothTraces({ input, bytes: 1000, clipped: false });
      assert.deepStrictEqual(actual, expected);
      assert.deepStrictEqual(
        Object.entries(unpack(packed).input.response.auditAnnotations!),
        Object.entries(auditAnnotations),
      );
      const value = auditAnnotations[TRACE_ANNOTATION]!;
      assert.equal(packed.bytes.includes(value, 0, 'latin1'), asText, value);
    }
  });

  it('keep the trace id of a uid that is not a UUID, made at random once, and read it back the same', async () => {
    const request: AdmissionRequest = { ...requestOf(podCreate()), uid: 'not-a-uuid' };
    const [warned] = await heardReviews(SHIPPED_LIKE, availablePlugins, [[request, 'validate']]);
    const k = kept(warned!);
    const packed = pack(k);
    assert.match(packed.traceId ?? '', /^[0-9a-f]{32}$/);
    assert.equal(packed.traceId, k.input.traceId);
    const read = () => buildDecisionTrace(unpack(packed).input).traceId;
    assert.equal(read(), packed.traceId);
    assert.equal(read(), packed.traceId);
  });

  it('read back any string as it was: NUL, characters past Latin-1, a lone surrogate, long ones', async () => {
    const [, warned] = await shippedReviews();
    const base = kept(warned!);
    const strange = [
      'a\u0000b',
      'ünïcödé ✓ 日本',
      '\ud800 alone',
      'é'.repeat(300),
      'x'.repeat(20_000),
      `${'y'.repeat(200)}✓`,
      '\udc00'.repeat(100),
      '',
    ];
    const input: TraceInput = {
      ...base.input,
      request: { ...base.input.request, name: strange[1], namespace: strange[2] },
      response: { ...base.input.response, warnings: strange },
    };
    const { packed, expected, actual } = bothTraces({ ...base, input });
    assert.equal(packed.objects, undefined, 'packed, not kept whole');
    assert.deepStrictEqual(actual, expected);
    assert.deepStrictEqual(actual.trace.warnings, strange);
  });

  it('keep whole a review whose operations keep their values', async () => {
    const [mutated] = await shippedReviews();
    const valued = kept(mutated!, true);
    assert.ok(valued.input.decision.patch?.some((op) => 'value' in op && op.value !== undefined));
    const { packed, expected, actual } = bothTraces(valued);
    assert.equal(packed.objects?.whole, valued);
    assert.deepStrictEqual(actual, expected);
  });

  describe('written straight from a review (packReview)', () => {
    const options = (includeObjects = false) => ({ includeObjects, redaction: compileRedaction([]) });

    /** The record packReview writes of `input`, and the one packTrace writes of its kept input. */
    function bothRecords(input: TraceInput, includeObjects = false) {
      const w = new RecordWriter();
      const steps = new StepArrays();
      const direct = packReview(input, options(includeObjects), w, steps);
      const directBytes = Buffer.from(w.bytes.subarray(0, w.length));
      const k = keptInput(input, options(includeObjects));
      const packed = packTrace(k, w, steps);
      return { direct, directBytes, k, packed, keptBytes: Buffer.from(w.bytes.subarray(0, w.length)) };
    }

    /** Asserts the two records are the same; returns whether the trace reads back as clipped. */
    function assertSame(input: TraceInput, what: string): boolean {
      const { direct, directBytes, k, packed, keptBytes } = bothRecords(input);
      assert.ok(direct, `${what}: written straight`);
      assert.deepStrictEqual(directBytes, keptBytes, what);
      assert.deepStrictEqual(direct, { packed, bytes: k.bytes }, what);
      const { clipped } = unpackTrace(directBytes, 0, direct.packed.steps);
      assert.equal(clipped, k.clipped, what);
      return clipped;
    }

    const long = (c: string, n: number) => c.repeat(n);
    const ops = (n: number, path: (i: number) => string): JsonPatchOperation[] =>
      Array.from({ length: n }, (_, i): JsonPatchOperation => {
        if (i % 5 === 3) return { op: 'move', from: `${path(i)}-from`, path: path(i) };
        if (i % 5 === 4) return { op: 'remove', path: path(i) };
        return { op: 'add', path: path(i), value: { i } };
      });

    it('write the same bytes as the kept input, and count and clip the same', async () => {
      const [mutated, warned] = await shippedReviews();
      const request: AdmissionRequest = { ...requestOf(podCreate()), uid: 'not-a-uuid' };
      const [randomId] = await heardReviews(SHIPPED_LIKE, availablePlugins, [[request, 'mutate']]);
      assert.equal(assertSame(mutated!.traceInput, 'the shipped chain on /mutate'), false);
      assertSame(warned!.traceInput, 'the shipped chain on /validate, warned');
      assertSame(randomId!.traceInput, 'a uid that is not a UUID');
      const base = mutated!.traceInput;
      assertSame({ ...base, traceId: '4bf92f3577b34da6a3ce929d0e0e4736' }, 'a trace id given');
      // Every string keptInput clips, past its bound.
      const clippedStrings = assertSame(
        {
          ...base,
          request: {
            ...base.request,
            name: long('n', 300),
            namespace: long('é', 257),
            subResource: 'status',
            dryRun: true,
            kind: { group: long('g', 300), version: 'v1', kind: long('K', 257) },
            resource: { group: '', version: long('v', 1000), resource: 'pods' },
            userInfo: { username: long('u', 256) },
          },
        },
        'strings past their bounds',
      );
      assert.equal(clippedStrings, true, 'strings past their bounds read back as clipped');
      assertSame(
        { ...base, request: { ...base.request, name: '', namespace: '', subResource: '', userInfo: {} } },
        'empty names, no user',
      );
      // More operations than are kept, paths past their bound (some the same once clipped), moves and removes;
      // a step's own that are the review's beyond the first kept, and a step's message past its bound.
      const reviewOps = ops(60, (i) => (i % 7 === 0 ? `/p/${long('x', 1100)}${i}` : `/p/${i}`));
      const stepOps = [...reviewOps.slice(40, 60).reverse(), { op: 'remove' as const, path: '/q' }, ...reviewOps];
      const details: StepDetail[] = base.details.map((d, i) =>
        i === 0
          ? { ...d, written: undefined, patch: stepOps, message: long('m', 5000) }
          : { ...d, message: 'kept as it is' },
      );
      const clippedOps = assertSame(
        { ...base, decision: { allowed: true, patch: reviewOps }, details },
        'many operations, long paths, a long message',
      );
      assert.equal(clippedOps, true, 'long paths and a long message read back as clipped');
      assertSame({ ...base, decision: { allowed: true, patch: [] } }, 'an empty patch');
      const noPatch: StepDetail[] = base.details.map((d) => ({ ...d, written: undefined, patch: [] }));
      assertSame({ ...base, details: noPatch }, 'a step with an empty patch of its own');
    });

    it('leave to keptInput what keeps objects: a refusal, a status, conflicts, shadow steps, labels, values', async () => {
      const [mutated, , refused] = await shippedReviews();
      const base = mutated!.traceInput;
      const cases: Array<[string, TraceInput, boolean?]> = [
        ['a refusal with a selector skip', refused!.traceInput],
        ['a status', { ...base, response: { ...base.response, status: { code: 200, message: 'ok' } } }],
        [
          'conflicts',
          {
            ...base,
            conflicts: new Map([['a', { count: 1, first: { path: '/a', earlier: 'b', earlierPath: '/a' } }]]),
          },
        ],
        ['shadow steps', { ...base, shadow: [], shadowSteps: 1 }],
        [
          'an allowed review with a selector skip',
          {
            ...base,
            reports: [
              ...base.reports,
              { step: 'x', outcome: 'skipped', ms: 0, reason: OBJECT_SELECTOR_DOES_NOT_MATCH },
            ],
          },
        ],
        ['values kept (explain.includeObjects)', base, true],
      ];
      for (const [what, input, includeObjects] of cases) {
        const { direct } = bothRecords(input, includeObjects);
        assert.equal(direct, undefined, what);
      }
    });
  });
});
