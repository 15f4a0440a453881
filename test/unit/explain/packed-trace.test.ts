/**
 * A packed trace (explain/packed-trace.ts) reads back as the trace its kept input gives: every part a trace shows,
 * for reviews of the shipped chain, for the parts only some reviews have, and for strings of any code units. What
 * cannot be packed (an operation with its value) is kept whole and reads back the same.
 */
import assert from 'node:assert/strict';
import type { AdmissionRequest } from '../../../server/admission/types.js';
import { keptInput, type KeptInput } from '../../../server/explain/kept-trace.js';
import { StepArrays, packTrace, unpackTrace, type PackedTrace } from '../../../server/explain/packed-trace.js';
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
});
