/**
 * A packed trace (explain/packed-trace.ts) reads back as the trace its kept input gives: every part a trace shows,
 * for reviews of the shipped chain and for the parts only some reviews have. What cannot be packed (a string with
 * the separator in it, an operation with its value) is kept whole and reads back the same.
 */
import assert from 'node:assert/strict';
import type { AdmissionRequest } from '../../../server/admission/types.js';
import { keptInput, type KeptInput } from '../../../server/explain/kept-trace.js';
import { StepArrays, packTrace, unpackTrace } from '../../../server/explain/packed-trace.js';
import { compileRedaction } from '../../../server/recording/redact.js';
import { buildDecisionTrace, type ReviewedRequest, type TraceInput } from '../../../server/trace/decision-trace.js';
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

/** The trace a kept input gives, and the one its packed form gives. */
function bothTraces(k: KeptInput, steps = new StepArrays()) {
  const packed = packTrace(k, steps);
  const back = unpackTrace(packed);
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

  it('hold an ordinary review as a string and a shared steps array, no objects of its own', async () => {
    const [mutated, warned] = await shippedReviews();
    const steps = new StepArrays();
    const a = packTrace(kept(warned!), steps);
    const b = packTrace(kept(warned!), steps);
    assert.equal(a.objects, undefined);
    assert.equal(packTrace(kept(mutated!), steps).objects, undefined);
    assert.equal(a.steps, b.steps, 'one array for the reviews of one route');
    assert.equal(a.traceId, undefined, 'a trace id made from the uid is made again, not kept');
  });

  it('read back the parts only some reviews have: a trace id given, rounds, levels, shadow steps, conflicts', async () => {
    const [mutated] = await shippedReviews();
    const base = kept(mutated!).input;
    const reports: StepReport[] = base.reports.map((r, i) =>
      i === 0 ? { ...r, round: 1, level: 2, failedOpen: true, reason: 'timeout', mode: 'warn' } : r,
    );
    const details: StepDetail[] = base.details.map((d, i) => (i === 0 ? { ...d, patchOpsOmitted: 7 } : d));
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
    assert.equal(unpackTrace(packed).input.shadow, input.shadow);
  });

  it('keep the trace id of a uid that is not a UUID, made at random once, and read it back the same', async () => {
    const request: AdmissionRequest = { ...requestOf(podCreate()), uid: 'not-a-uuid' };
    const [warned] = await heardReviews(SHIPPED_LIKE, availablePlugins, [[request, 'validate']]);
    const k = kept(warned!);
    const packed = packTrace(k, new StepArrays());
    assert.match(packed.traceId ?? '', /^[0-9a-f]{32}$/);
    assert.equal(packed.traceId, k.input.traceId);
    const read = () => buildDecisionTrace(unpackTrace(packed).input).traceId;
    assert.equal(read(), packed.traceId);
    assert.equal(read(), packed.traceId);
  });

  it('keep whole a review with the separator in a string, and one whose operations keep their values', async () => {
    const [mutated, warned] = await shippedReviews();
    const hostile = kept(warned!);
    const withNul: KeptInput = {
      ...hostile,
      input: { ...hostile.input, response: { ...hostile.input.response, warnings: ['a\u0000b'] } },
    };
    const valued = kept(mutated!, true);
    assert.ok(valued.input.decision.patch?.some((op) => 'value' in op && op.value !== undefined));
    for (const k of [withNul, valued]) {
      const { packed, expected, actual } = bothTraces(k);
      assert.equal(packed.objects?.whole, k);
      assert.deepStrictEqual(actual, expected);
    }
  });
});
