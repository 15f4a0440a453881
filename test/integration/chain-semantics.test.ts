import assert from 'node:assert/strict';
import type { AdmissionResponse } from '../../server/admission/types.js';
import type { JsonPatchOperation } from '../../server/plugin-api/index.js';
import { podCreate, requestOf } from '../fixtures/reviews/index.js';
import { reviewOf, startHarness, type Harness } from '../helpers/gateway-harness.js';
import { applyPatch, decodePatch } from '../helpers/patch.js';
import { createTestPlugins, type TestPlugins } from '../helpers/test-plugins.js';

const UID = '0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21';
const FIXTURE_LABELS = { app: 'web', team: 'payments' };

/** The response with its patch decoded, so a whole answer can be compared at once. */
function decoded(response: AdmissionResponse): Omit<AdmissionResponse, 'patch'> & { patch?: JsonPatchOperation[] } {
  const { patch, ...rest } = response;
  return patch === undefined ? rest : { ...rest, patch: decodePatch(response) };
}

function addLabel(key: string, value: string): JsonPatchOperation {
  return { op: 'add', path: `/metadata/labels/${key}`, value };
}

describe('chain semantics through the real gateway', function () {
  let harness: Harness | undefined;
  let test: TestPlugins;

  async function start(yaml: string): Promise<Harness> {
    harness = await startHarness({ yaml, plugins: test.plugins });
    return harness;
  }

  function steps(name: string, phase: 'mutate' | 'validate', outcome: string): Promise<number> {
    return harness!.metric('admission_gateway_step_calls_total', { step: name, phase, outcome });
  }

  beforeEach(function () {
    test = createTestPlugins();
  });

  afterEach(async function () {
    test.gate.release();
    await harness?.close();
    harness = undefined;
  });

  describe('mutate phase', function () {
    it('runs the steps one after another in chain order, each seeing the result of the previous ones', async function () {
      const h = await start(`
chain:
  - { plugin: records-calls, name: look-0, settings: { tag: look-0 } }
  - { plugin: slow-async, name: first, settings: { tag: first, labels: { first: '1' } } }
  - { plugin: records-calls, name: look-1, settings: { tag: look-1 } }
  - { plugin: add-label, name: second, settings: { tag: second, labels: { second: '2' } } }
  - { plugin: records-calls, name: look-2, settings: { tag: look-2 } }
`);

      const review = reviewOf(await h.post('/mutate', podCreate()));

      assert.deepEqual(
        test.calls.records.map((r) => [`${r.tag}:${r.event}`, r.labels]),
        [
          ['look-0:call', FIXTURE_LABELS],
          ['first:call', FIXTURE_LABELS],
          ['first:end', { ...FIXTURE_LABELS, first: '1' }],
          ['look-1:call', { ...FIXTURE_LABELS, first: '1' }],
          ['second:call', { ...FIXTURE_LABELS, first: '1' }],
          ['look-2:call', { ...FIXTURE_LABELS, first: '1', second: '2' }],
        ],
      );
      assert.deepEqual(decoded(review.response), {
        uid: UID,
        allowed: true,
        patchType: 'JSONPatch',
        patch: [addLabel('first', '1'), addLabel('second', '2')],
      });
      const object = requestOf(podCreate()).object!;
      const expected = structuredClone(object);
      expected.metadata!.labels = { ...FIXTURE_LABELS, first: '1', second: '2' };
      assert.deepEqual(applyPatch(object, decodePatch(review.response)), expected);
    });

    describe('given a step that edits the object and then throws', function () {
      const chain = (policy: string) => `
chain:
  - { plugin: add-label, name: before, settings: { tag: before, labels: { before: 'yes' } } }
  - plugin: throws
    name: exploder
    failurePolicy: ${policy}
    settings: { tag: exploder, message: exploded after editing, labels: { partial: 'yes' } }
  - { plugin: add-label, name: after, settings: { tag: after, labels: { after: 'yes' } } }
`;

      it('with failurePolicy Fail, refuses with code 500 naming the step and (error), and stops the chain', async function () {
        const h = await start(chain('Fail'));

        const answer = await h.post('/mutate', podCreate());

        assert.equal(answer.status, 200, 'a step failure is a verdict, never an HTTP error');
        assert.deepEqual(reviewOf(answer).response, {
          uid: UID,
          allowed: false,
          status: {
            code: 500,
            reason: 'InternalError',
            message: 'plugin "exploder" failed (error): exploded after editing',
          },
        });
        assert.deepEqual(test.calls.sequence(), ['before:call', 'exploder:call']);
        assert.equal(await steps('exploder', 'mutate', 'error'), 1);
        assert.equal(await h.metric('admission_gateway_fail_open_total', { step: 'exploder' }), 0);
        // The plugin's author learns where it threw.
        const line = h.logs.find((l) => l.msg === 'step failed, refusing the request');
        assert.deepEqual([line?.level, line?.step, line?.err], ['warn', 'exploder', 'exploded after editing']);
        assert.match(String(line?.stack), /^Error: exploded after editing\n\s+at .*test-plugins\.ts:\d+:\d+/);
        assert.equal(
          await h.metric('admission_gateway_requests_total', {
            phase: 'mutate',
            operation: 'CREATE',
            allowed: 'false',
          }),
          1,
        );
      });

      it('with failurePolicy Ignore, fails open: warning, audit annotation, metric, and none of its partial edits', async function () {
        const h = await start(chain('Ignore'));

        const review = reviewOf(await h.post('/mutate', podCreate()));

        assert.deepEqual(decoded(review.response), {
          uid: UID,
          allowed: true,
          patchType: 'JSONPatch',
          patch: [addLabel('before', 'yes'), addLabel('after', 'yes')],
          warnings: ['exploder: failed open (error): exploded after editing'],
          auditAnnotations: { 'exploder.failed-open': 'error: exploded after editing' },
        });
        assert.deepEqual(test.calls.of('after')[0]?.labels, { ...FIXTURE_LABELS, before: 'yes' });
        assert.equal(await h.metric('admission_gateway_fail_open_total', { step: 'exploder' }), 1);
        assert.equal(await steps('exploder', 'mutate', 'error'), 1);
        const line = h.logs.find((l) => l.msg === 'step failed, failing open');
        assert.deepEqual([line?.level, line?.step, line?.reason], ['warn', 'exploder', 'error']);
        assert.match(String(line?.stack), /^Error: exploded after editing\n\s+at .*test-plugins\.ts:\d+:\d+/);
      });
    });

    describe('given a step that hangs until its AbortSignal fires (?timeout=1s, deadlineMarginMs 250)', function () {
      const chain = (policy: string) => `
server: { deadlineMarginMs: 250 }
chain:
  - { plugin: add-label, name: before, settings: { tag: before, labels: { before: 'yes' } } }
  - { plugin: hangs, name: stuck, failurePolicy: ${policy}, settings: { tag: stuck } }
`;
      /** The milliseconds the step was granted, from `did not answer within <n> ms`. */
      function granted(text: string | undefined): number {
        const match = /did not answer within (\d+) ms$/.exec(text ?? '');
        assert.ok(match, `expected a timeout message, got ${JSON.stringify(text)}`);
        return Number(match[1]);
      }

      it('with Ignore, answers allowed with a failed-open timeout after granting at most the 750 ms budget', async function () {
        const h = await start(chain('Ignore'));

        const review = reviewOf(await h.post('/mutate?timeout=1s', podCreate()));

        const { warnings, auditAnnotations, ...rest } = decoded(review.response);
        assert.deepEqual(rest, { uid: UID, allowed: true, patchType: 'JSONPatch', patch: [addLabel('before', 'yes')] });
        assert.equal(warnings?.length, 1);
        const [warning = ''] = warnings ?? [];
        assert.match(warning, /^stuck: failed open \(timeout\): did not answer within \d+ ms$/);
        assert.deepEqual(Object.keys(auditAnnotations ?? {}), ['stuck.failed-open']);
        assert.match(auditAnnotations?.['stuck.failed-open'] ?? '', /^timeout: did not answer within \d+ ms$/);
        const ms = granted(warning);
        assert.ok(ms > 0 && ms <= 750, `granted ${ms} ms: expected its share of 1s - 250ms, not its own 10 s`);
        assert.deepEqual(
          test.calls.of('stuck').map((r) => [r.event, r.detail]),
          [
            ['call', undefined],
            ['aborted', 'TimeoutError'],
          ],
        );
        assert.equal(await steps('stuck', 'mutate', 'timeout'), 1);
        assert.equal(await h.metric('admission_gateway_fail_open_total', { step: 'stuck' }), 1);
      });

      it('with Fail, refuses with code 500 naming the step and (timeout)', async function () {
        const h = await start(chain('Fail'));

        const review = reviewOf(await h.post('/mutate?timeout=1s', podCreate()));

        const { status, ...rest } = review.response;
        assert.deepEqual(rest, { uid: UID, allowed: false });
        assert.equal(status?.code, 500);
        assert.equal(status?.reason, 'InternalError');
        assert.match(status?.message ?? '', /^plugin "stuck" failed \(timeout\): did not answer within \d+ ms$/);
        assert.ok(granted(status?.message) <= 750);
        assert.equal(await steps('stuck', 'mutate', 'timeout'), 1);
        assert.equal(await h.metric('admission_gateway_fail_open_total', { step: 'stuck' }), 0);
      });

      it('gives a later step only what is left (nothing, or a few ms), not its own 10 s, under its own failurePolicy', async function () {
        const h = await start(`
server: { deadlineMarginMs: 250 }
chain:
  - { plugin: hangs, name: stuck, failurePolicy: Ignore, settings: { tag: stuck } }
  - { plugin: hangs, name: late, failurePolicy: Ignore, settings: { tag: late } }
`);

        const review = reviewOf(await h.post('/mutate?timeout=1s', podCreate()));

        assert.equal(review.response.allowed, true);
        assert.equal(review.response.patch, undefined);
        assert.equal(review.response.warnings?.length, 2);
        // Timers may fire a few ms early, so the later step gets either nothing or the last milliseconds.
        assert.match(
          review.response.warnings?.[1] ?? '',
          /^late: failed open \(timeout\): (no time left in the request deadline|did not answer within \d ms)$/,
        );
        assert.equal(await steps('stuck', 'mutate', 'timeout'), 1);
        assert.equal(await steps('late', 'mutate', 'timeout'), 1);
        assert.equal(await h.metric('admission_gateway_fail_open_total', { step: 'late' }), 1);
      });
    });

    describe('given an in-process step that computes past its timeout (it cannot be interrupted)', function () {
      const chain = (policy: string) => `
chain:
  - { plugin: add-label, name: before, settings: { tag: before, labels: { before: 'yes' } } }
  - plugin: busy-loops
    name: heavy
    timeoutSeconds: 0.05
    failurePolicy: ${policy}
    settings: { tag: heavy, ms: 120, labels: { heavy: 'yes' } }
  - { plugin: add-label, name: after, settings: { tag: after, labels: { after: 'yes' } } }
`;

      it('with Fail, refuses with code 500 as a timeout, whatever the step answered', async function () {
        const h = await start(chain('Fail'));

        const review = reviewOf(await h.post('/mutate?timeout=10s', podCreate()));

        const { status, ...rest } = review.response;
        assert.deepEqual(rest, { uid: UID, allowed: false });
        assert.equal(status?.code, 500);
        assert.match(
          status?.message ?? '',
          /^plugin "heavy" failed \(timeout\): ran for \d+ ms, over its 50 ms \(an in-process step cannot be interrupted\)$/,
        );
        assert.deepEqual(
          test.calls.records.map((r) => [r.tag, r.event]),
          [
            ['before', 'call'],
            ['heavy', 'call'],
            ['heavy', 'end'],
          ],
        );
        assert.equal(await steps('heavy', 'mutate', 'timeout'), 1);
        const line = h.logs.find((l) => l.msg === 'step failed, refusing the request');
        // A timeout is the gateway's finding, not a throw of the plugin's: no stack to show.
        assert.deepEqual([line?.step, line?.reason, line?.stack], ['heavy', 'timeout', undefined]);
      });

      it('with Ignore, fails open: its edits are rolled back and the chain goes on', async function () {
        const h = await start(chain('Ignore'));

        const review = reviewOf(await h.post('/mutate?timeout=10s', podCreate()));

        const { warnings, auditAnnotations, ...rest } = decoded(review.response);
        assert.deepEqual(rest, {
          uid: UID,
          allowed: true,
          patchType: 'JSONPatch',
          patch: [addLabel('before', 'yes'), addLabel('after', 'yes')],
        });
        assert.match(warnings?.[0] ?? '', /^heavy: failed open \(timeout\): ran for \d+ ms, over its 50 ms/);
        assert.deepEqual(Object.keys(auditAnnotations ?? {}), ['heavy.failed-open']);
        assert.equal(await steps('heavy', 'mutate', 'timeout'), 1);
        assert.equal(await h.metric('admission_gateway_fail_open_total', { step: 'heavy' }), 1);
      });
    });

    describe('given a step whose patch does not apply (a remove of a missing path after a valid add)', function () {
      const chain = (policy: string) => `
chain:
  - { plugin: returns-bad-patch, name: bad-patch, failurePolicy: ${policy}, settings: { tag: bad-patch } }
  - { plugin: add-label, name: after, settings: { tag: after, labels: { after: 'yes' } } }
`;

      it('with Fail, refuses with code 500 (invalid_patch) in an HTTP 200 answer, never an InternalError of the gateway', async function () {
        const h = await start(chain('Fail'));

        const answer = await h.post('/mutate', podCreate());

        assert.equal(answer.status, 200);
        const { status, ...rest } = reviewOf(answer).response;
        assert.deepEqual(rest, { uid: UID, allowed: false });
        assert.equal(status?.code, 500);
        assert.ok(
          status?.message?.startsWith(
            'plugin "bad-patch" failed (invalid_patch): returned a patch that does not apply: ' +
              'operation 1 (remove /metadata/labels/does-not-exist) does not apply: ',
          ),
          status?.message,
        );
        assert.equal(await steps('bad-patch', 'mutate', 'error'), 1);
        assert.equal(await h.metric('admission_gateway_invalid_requests_total', { code: '500' }), 0);
      });

      it('with Ignore, fails open and rolls back the operations that did apply', async function () {
        const h = await start(chain('Ignore'));

        const review = reviewOf(await h.post('/mutate', podCreate()));

        assert.equal(review.response.allowed, true);
        assert.deepEqual(decodePatch(review.response), [addLabel('after', 'yes')]);
        assert.deepEqual(test.calls.of('after')[0]?.labels, FIXTURE_LABELS, 'half-applied must not be visible');
        assert.match(
          review.response.warnings?.[0] ?? '',
          /^bad-patch: failed open \(invalid_patch\): returned a patch that does not apply: operation 1 \(remove \/metadata\/labels\/does-not-exist\)/,
        );
        assert.deepEqual(Object.keys(review.response.auditAnnotations ?? {}), ['bad-patch.failed-open']);
        assert.equal(await h.metric('admission_gateway_fail_open_total', { step: 'bad-patch' }), 1);
      });
    });

    it('refuses the edits of a timed-out step that ignores its signal, and the next review is unaffected', async function () {
      const h = await start(`
server: { deadlineMarginMs: 250 }
chain:
  - plugin: slow-async
    name: late-editor
    failurePolicy: Ignore
    settings: { tag: late-editor, awaitRelease: true, ignoreAbort: true, labels: { late: 'yes' } }
`);

      const first = reviewOf(await h.post('/mutate?timeout=1s', podCreate()));
      test.gate.release();
      const refused = await test.calls.waitFor((r) => r.tag === 'late-editor' && r.event === 'refused');
      const second = reviewOf(await h.post('/mutate?timeout=1s', podCreate()));

      assert.equal(first.response.allowed, true);
      assert.equal(first.response.patch, undefined);
      assert.match(first.response.warnings?.[0] ?? '', /^late-editor: failed open \(timeout\)/);
      assert.equal(refused.detail, '"late-editor" modified the object after its step ended');
      assert.deepEqual(decoded(second.response), {
        uid: UID,
        allowed: true,
        patchType: 'JSONPatch',
        patch: [addLabel('late', 'yes')],
      });
    });

    it('stops at an enforcing deny and refuses with the step-prefixed message and its code, without a patch', async function () {
      const h = await start(`
chain:
  - { plugin: add-label, name: before, settings: { tag: before, labels: { before: 'yes' } } }
  - { plugin: slow-async, name: gatekeeper, settings: { tag: gatekeeper, deny: no pods on Fridays } }
  - { plugin: records-calls, name: after, settings: { tag: after } }
`);

      const review = reviewOf(await h.post('/mutate', podCreate()));

      assert.deepEqual(review.response, {
        uid: UID,
        allowed: false,
        status: { code: 403, reason: 'Forbidden', message: 'gatekeeper: no pods on Fridays' },
      });
      assert.deepEqual(test.calls.sequence(), ['before:call', 'gatekeeper:call', 'gatekeeper:end']);
      assert.equal(await steps('gatekeeper', 'mutate', 'denied'), 1);
    });

    it('leaves none of the edits of a step whose deny is only a warning (mode warn)', async function () {
      const h = await start(`
chain:
  - { plugin: slow-async, name: grumpy, mode: warn, settings: { tag: grumpy, deny: not like this, labels: { grumpy: 'yes' } } }
  - { plugin: add-label, name: after, settings: { tag: after, labels: { after: 'yes' } } }
`);

      const review = reviewOf(await h.post('/mutate', podCreate()));

      assert.deepEqual(decoded(review.response), {
        uid: UID,
        allowed: true,
        patchType: 'JSONPatch',
        patch: [addLabel('after', 'yes')],
        warnings: ['grumpy: not like this (mode warn: not enforced)'],
      });
      assert.deepEqual(test.calls.of('after')[0]?.labels, FIXTURE_LABELS);
      assert.equal(await steps('grumpy', 'mutate', 'denied'), 1);
    });

    it('treats a return value that is neither a verdict nor a patch as a failure', async function () {
      const h = await start(`chain: [{ plugin: returns-garbage, name: garbage, settings: { tag: garbage } }]`);

      const review = reviewOf(await h.post('/mutate', podCreate()));

      assert.deepEqual(review.response, {
        uid: UID,
        allowed: false,
        status: {
          code: 500,
          reason: 'InternalError',
          message: 'plugin "garbage" failed (error): returned number, expected a verdict from allow() or deny()',
        },
      });
    });

    describe('given reinvocationPolicy IfNeeded', function () {
      it('runs the step once more when a later step changed the object, and it then sees the change', async function () {
        const h = await start(`
chain:
  - { plugin: records-calls, name: watcher, reinvocationPolicy: IfNeeded, settings: { tag: watcher } }
  - { plugin: records-calls, name: bystander, settings: { tag: bystander } }
  - { plugin: add-label, name: labeller, settings: { tag: labeller, labels: { late: 'yes' } } }
`);

        await h.post('/mutate', podCreate());

        assert.deepEqual(
          test.calls.records.map((r) => [`${r.tag}:${r.event}`, r.labels]),
          [
            ['watcher:call', FIXTURE_LABELS],
            ['bystander:call', FIXTURE_LABELS],
            ['labeller:call', FIXTURE_LABELS],
            ['watcher:call', { ...FIXTURE_LABELS, late: 'yes' }],
          ],
        );
        assert.equal(await steps('watcher', 'mutate', 'allowed'), 2);
        assert.equal(await steps('bystander', 'mutate', 'allowed'), 1);
      });

      it("asks the step's matchConditions again of the changed object: false now, it is not reinvoked", async function () {
        const h = await start(`
explain: { keep: all }
chain:
  - plugin: records-calls
    name: watcher
    reinvocationPolicy: IfNeeded
    settings: { tag: watcher }
    matchConditions: [{ name: not-late, expression: "!('late' in object.metadata.labels)" }]
  - { plugin: add-label, name: labeller, settings: { tag: labeller, labels: { late: 'yes' } } }
`);

        const review = reviewOf(await h.post('/mutate', podCreate()));

        assert.deepEqual(test.calls.sequence(), ['watcher:call', 'labeller:call']);
        assert.equal(review.response.allowed, true);
        assert.equal(await steps('watcher', 'mutate', 'allowed'), 1);
        assert.equal(await steps('watcher', 'mutate', 'skipped'), 1);
        const trace = (await h.ops(`/explain/${review.response.uid}`)).body as { steps: Record<string, unknown>[] };
        assert.deepEqual(
          trace.steps.map((s) => [s.step, s.outcome, s.round, s.reason]),
          [
            ['watcher', 'allowed', undefined, undefined],
            ['labeller', 'patched', undefined, undefined],
            ['watcher', 'skipped', 1, 'not reinvoked: matchConditions[0] "not-late" is false'],
          ],
        );
      });

      it('reinvokes the step when its matchConditions still hold of the changed object', async function () {
        const h = await start(`
chain:
  - plugin: records-calls
    name: watcher
    reinvocationPolicy: IfNeeded
    settings: { tag: watcher }
    matchConditions: [{ name: pod, expression: "object.kind == 'Pod'" }]
  - { plugin: add-label, name: labeller, settings: { tag: labeller, labels: { late: 'yes' } } }
`);

        await h.post('/mutate', podCreate());

        assert.deepEqual(test.calls.sequence(), ['watcher:call', 'labeller:call', 'watcher:call']);
      });

      it('does not run the step again when no later step changed the object', async function () {
        const h = await start(`
chain:
  - { plugin: add-label, name: labeller, settings: { tag: labeller, labels: { early: 'yes' } } }
  - { plugin: records-calls, name: watcher, reinvocationPolicy: IfNeeded, settings: { tag: watcher } }
  - { plugin: records-calls, name: bystander, settings: { tag: bystander } }
`);

        await h.post('/mutate', podCreate());

        assert.deepEqual(test.calls.sequence(), ['labeller:call', 'watcher:call', 'bystander:call']);
      });
    });

    it('records a patch conflict when a later step rewrites a label an earlier step wrote', async function () {
      const h = await start(`
chain:
  - { plugin: add-label, name: first, settings: { tag: first, labels: { color: red } } }
  - { plugin: add-label, name: second, settings: { tag: second, labels: { color: blue } } }
`);

      const review = reviewOf(await h.post('/mutate', podCreate()));

      assert.deepEqual(decoded(review.response), {
        uid: UID,
        allowed: true,
        patchType: 'JSONPatch',
        patch: [addLabel('color', 'blue')],
        auditAnnotations: {
          'second.patch-conflict': '/metadata/labels/color overwrote /metadata/labels/color written by first',
        },
      });
      assert.equal(await h.metric('admission_gateway_patch_conflicts_total', { step: 'second' }), 1);
      assert.equal(await h.metric('admission_gateway_patch_conflicts_total', { step: 'first' }), 0);
      assert.deepEqual(
        h.logs.filter((l) => l.msg === 'patch conflict').map((l) => [l.step, l.path, l.earlier]),
        [['second', '/metadata/labels/color', 'first']],
      );
    });

    it('records a patch conflict when a later step replaces the map holding a label an earlier step wrote', async function () {
      const h = await start(`
chain:
  - { plugin: add-label, name: first, settings: { tag: first, labels: { color: red } } }
  - plugin: returns-bad-patch
    name: replacer
    settings: { tag: replacer, ops: [{ op: replace, path: /metadata/labels, value: { app: web } }] }
`);

      const review = reviewOf(await h.post('/mutate', podCreate()));

      assert.deepEqual(decoded(review.response), {
        uid: UID,
        allowed: true,
        patchType: 'JSONPatch',
        patch: [{ op: 'remove', path: '/metadata/labels/team' }],
        auditAnnotations: {
          'replacer.patch-conflict': '/metadata/labels overwrote /metadata/labels/color written by first',
        },
      });
      assert.equal(await h.metric('admission_gateway_patch_conflicts_total', { step: 'replacer' }), 1);
    });

    it('keeps warnings within the apiserver limits: over 4096 characters in total, each is cut to 256', async function () {
      const messages = Array.from({ length: 20 }, (_, i) => `${String(i).padStart(2, '0')} ${'x'.repeat(300)}`);
      const h = await start(
        `chain: [{ plugin: warns, name: noisy, settings: { tag: noisy, messages: ${JSON.stringify(messages)} } }]`,
      );

      const warnings = reviewOf(await h.post('/mutate', podCreate())).response.warnings ?? [];

      assert.deepEqual(
        warnings,
        messages.slice(0, 16).map((m) => `noisy: ${m}`.slice(0, 256)),
      );
      assert.ok(warnings.join('').length <= 4096);
    });

    it('de-duplicates warnings, removes control characters and prefixes each with its step', async function () {
      const h = await start(`
chain:
  - plugin: warns
    name: noisy
    settings:
      tag: noisy
      messages:
        - disk is almost full
        - disk is almost full
        - "line one\\nline two\\u0007\\tend"
        - line one line two end
        - "\\u001b[31mred\\u001b[0m"
  - { plugin: warns, name: echo, settings: { tag: echo, messages: [disk is almost full] } }
`);

      const review = reviewOf(await h.post('/mutate', podCreate()));

      assert.deepEqual(review.response, {
        uid: UID,
        allowed: true,
        warnings: [
          'noisy: disk is almost full',
          'noisy: line one line two end',
          'noisy: [31mred [0m',
          'echo: disk is almost full',
        ],
      });
    });

    it('gives the validate phase’s warnings in chain order, whichever step finishes first', async function () {
      // The steps run at once; the first waits until the second has been called (and has warned).
      const h = await start(`
chain:
  - { plugin: slow-async, name: slow, settings: { tag: slow, awaitCall: quick, warn: checked last } }
  - { plugin: warns, name: quick, settings: { tag: quick, messages: [checked first] } }
`);

      const review = reviewOf(await h.post('/validate', podCreate()));

      assert.deepEqual(review.response, {
        uid: UID,
        allowed: true,
        warnings: ['slow: checked last', 'quick: checked first'],
      });
    });

    it('skips steps whose namespaceSelector or objectSelector does not match, and counts them skipped', async function () {
      const rules = `rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] }]`;
      const h = await start(`
chain:
  - plugin: records-calls
    name: other-namespace
    settings: { tag: other-namespace }
    match: { ${rules}, namespaceSelector: { matchLabels: { kubernetes.io/metadata.name: team-b } } }
  - plugin: records-calls
    name: this-namespace
    settings: { tag: this-namespace }
    match: { ${rules}, namespaceSelector: { matchLabels: { kubernetes.io/metadata.name: team-a } } }
  - plugin: records-calls
    name: databases
    settings: { tag: databases }
    match: { ${rules}, objectSelector: { matchLabels: { app: db } } }
  - plugin: records-calls
    name: web-servers
    settings: { tag: web-servers }
    match: { ${rules}, objectSelector: { matchExpressions: [{ key: app, operator: In, values: [web] }] } }
`);

      await h.post('/mutate', podCreate());

      assert.deepEqual(test.calls.sequence(), ['this-namespace:call', 'web-servers:call']);
      assert.deepEqual(
        {
          'other-namespace': await steps('other-namespace', 'mutate', 'skipped'),
          'this-namespace': await steps('this-namespace', 'mutate', 'skipped'),
          databases: await steps('databases', 'mutate', 'skipped'),
          'web-servers': await steps('web-servers', 'mutate', 'skipped'),
        },
        { 'other-namespace': 1, 'this-namespace': 0, databases: 1, 'web-servers': 0 },
      );
    });

    describe('given steps split by failure policy', function () {
      const yaml = `
chain:
  - { plugin: records-calls, name: strict, failurePolicy: Fail, settings: { tag: strict } }
  - { plugin: records-calls, name: lenient, failurePolicy: Ignore, settings: { tag: lenient } }
`;
      const cases = [
        { route: '/mutate/fail', expected: ['strict:call'] },
        { route: '/mutate/ignore', expected: ['lenient:call'] },
        { route: '/mutate', expected: ['strict:call', 'lenient:call'] },
        { route: '/validate/fail', expected: ['strict:call'] },
        { route: '/validate/ignore', expected: ['lenient:call'] },
        { route: '/validate', expected: ['strict:call', 'lenient:call'] },
      ];
      for (const { route, expected } of cases) {
        const names = expected.map((s) => s.split(':')[0]).join(' and ');
        it(`${route} runs ${expected.length === 1 ? `only ${names}` : `both ${names}`}`, async function () {
          const h = await start(yaml);

          const review = reviewOf(await h.post(route, podCreate()));

          assert.deepEqual(review.response, { uid: UID, allowed: true });
          assert.deepEqual(test.calls.sequence(), expected);
          const phase = route.startsWith('/mutate') ? 'mutate' : 'validate';
          assert.deepEqual(new Set(test.calls.records.map((r) => r.phase)), new Set([phase]));
        });
      }
    });
  });

  describe('validate phase', function () {
    it('runs the steps in parallel (each waits until the other has started)', async function () {
      const h = await start(`
chain:
  - { plugin: slow-async, name: left, timeoutSeconds: 3, settings: { tag: left, awaitCall: right } }
  - { plugin: slow-async, name: right, timeoutSeconds: 3, settings: { tag: right, awaitCall: left } }
`);

      const review = reviewOf(await h.post('/validate', podCreate()));

      assert.deepEqual(review.response, { uid: UID, allowed: true });
      assert.deepEqual(test.calls.sequence().slice(0, 2), ['left:call', 'right:call']);
      assert.deepEqual(test.calls.sequence().slice(2).sort(), ['left:end', 'right:end']);
    });

    it('reports every denial, each prefixed with its step, joined in chain order whatever order they finish in', async function () {
      const h = await start(`
chain:
  - { plugin: slow-async, name: first-denier, settings: { tag: first-denier, awaitEnd: second-denier, deny: first reason } }
  - { plugin: records-calls, name: allower, settings: { tag: allower } }
  - { plugin: slow-async, name: second-denier, settings: { tag: second-denier, deny: second reason } }
`);

      const review = reviewOf(await h.post('/validate', podCreate()));

      assert.deepEqual(review.response, {
        uid: UID,
        allowed: false,
        status: { code: 403, reason: 'Forbidden', message: 'first-denier: first reason; second-denier: second reason' },
      });
      const ends = test.calls.sequence().filter((s) => s.endsWith(':end'));
      assert.deepEqual(ends, ['second-denier:end', 'first-denier:end']);
      assert.equal(await steps('first-denier', 'validate', 'denied'), 1);
      assert.equal(await steps('second-denier', 'validate', 'denied'), 1);
      assert.equal(await steps('allower', 'validate', 'allowed'), 1);
    });

    it('turns a deny in mode warn into a warning and in mode audit into an audit annotation', async function () {
      const h = await start(`
chain:
  - { plugin: deny-with-reason, name: warner, mode: warn, settings: { tag: warner, reason: missing owner label } }
  - { plugin: deny-with-reason, name: auditor, mode: audit, settings: { tag: auditor, reason: image not signed } }
`);

      const review = reviewOf(await h.post('/validate', podCreate()));

      assert.deepEqual(review.response, {
        uid: UID,
        allowed: true,
        warnings: ['warner: missing owner label (mode warn: not enforced)'],
        auditAnnotations: { 'auditor.would-deny': 'image not signed' },
      });
      assert.equal(await steps('warner', 'validate', 'denied'), 1);
      assert.equal(await steps('auditor', 'validate', 'denied'), 1);
    });

    it('fails a validating step that tries to modify its object, which is read-only', async function () {
      const h = await start(`chain: [{ plugin: edits-in-validate, name: sneaky, settings: { tag: sneaky } }]`);

      const review = reviewOf(await h.post('/validate', podCreate()));

      assert.deepEqual(review.response, {
        uid: UID,
        allowed: false,
        status: {
          code: 500,
          reason: 'InternalError',
          message: 'plugin "sneaky" failed (error): "sneaky" may not modify the object in the validate phase',
        },
      });
      assert.equal(await steps('sneaky', 'validate', 'error'), 1);
    });

    it('reports a Fail step that throws together with a denial, in chain order', async function () {
      const h = await start(`
chain:
  - { plugin: throws, name: exploder, settings: { tag: exploder, message: validator crashed } }
  - { plugin: deny-with-reason, name: denier, settings: { tag: denier, reason: not today } }
`);

      const review = reviewOf(await h.post('/validate', podCreate()));

      assert.deepEqual(review.response, {
        uid: UID,
        allowed: false,
        status: {
          code: 500,
          reason: 'InternalError',
          message: 'plugin "exploder" failed (error): validator crashed; denier: not today',
        },
      });
    });
  });
});
