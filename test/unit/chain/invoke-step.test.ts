import assert from 'node:assert/strict';
import { invokeStep, type InvocationInput, type StepResult } from '../../../server/dispatch/invoke-step.js';
import { ReviewNotes } from '../../../server/dispatch/notes.js';
import { compileMatch } from '../../../server/steps/match.js';
import type { Decision } from '../../../server/admission/decision.js';
import type { Step, StepInvocation } from '../../../server/steps/step.js';
import { StepFailedError } from '../../../server/base/errors.js';
import { podCreate } from '../../fixtures/reviews/index.js';

function step(invoke: (inv: StepInvocation) => Decision | Promise<Decision>): Step {
  return {
    name: 'under-test',
    source: 'plugin',
    phase: 'validate',
    match: compileMatch({ rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] }),
    failurePolicy: 'Fail',
    timeoutMs: 1000,
    mode: 'enforce',
    sideEffects: 'None',
    reinvocationPolicy: 'Never',
    order: 10,
    extension: 'under-test',
    attach: 'Always',
    needsObject: false,
    invoke,
    describe: () => ({}),
  };
}

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const input: InvocationInput = {
  request: podCreate().request!,
  object: undefined,
  oldObject: undefined,
  plainObject: undefined,
  notes: new ReviewNotes(),
  logs: { stepLog: () => silent },
  now: () => performance.now(),
};

/** An input whose clock only moves when the step moves it. */
function withClock(): { input: InvocationInput; advance: (ms: number) => void } {
  let t = 1000;
  return { input: { ...input, now: () => t }, advance: (ms) => (t += ms) };
}

async function failureOf(result: StepResult | Promise<StepResult>): Promise<StepFailedError> {
  const settled = await result;
  assert.ok(settled instanceof StepFailedError, `expected a failure, got ${JSON.stringify(settled)}`);
  return settled;
}

describe('invokeStep()', () => {
  it('returns a synchronous decision as is', async () => {
    assert.deepEqual(
      await invokeStep(
        step(() => ({ allowed: true })),
        withClock().input,
        50,
      ),
      { allowed: true },
    );
  });

  it('returns an asynchronous deny as a decision', async () => {
    const result = await invokeStep(
      step(() => Promise.resolve({ allowed: false, message: 'no', code: 403 })),
      withClock().input,
      50,
    );
    assert.deepEqual(result, { allowed: false, message: 'no', code: 403 });
  });

  it('fills in a deny without a message, as the apiserver does', async () => {
    const result = await invokeStep(
      step(() => ({ allowed: false, message: '', code: 200 })),
      withClock().input,
      50,
    );
    assert.deepEqual(result, { allowed: false, message: 'denied without explanation', code: 403 });
  });

  it('fails a synchronous step that ran past its time as a timeout, whatever it answered', async () => {
    const clock = withClock();
    const failure = await failureOf(
      invokeStep(
        step(() => {
          clock.advance(1500);
          return { allowed: true };
        }),
        clock.input,
        1000,
      ),
    );
    assert.ok(failure instanceof StepFailedError);
    assert.deepEqual(
      [failure.reason, failure.message],
      ['timeout', 'ran for 1500 ms, over its 1000 ms (an in-process step cannot be interrupted)'],
    );
  });

  it('keeps the answer of a synchronous step that used exactly its time', async () => {
    const clock = withClock();
    const result = await invokeStep(
      step(() => {
        clock.advance(1000);
        return { allowed: false, message: 'no', code: 403 };
      }),
      clock.input,
      1000,
    );
    assert.deepEqual(result, { allowed: false, message: 'no', code: 403 });
  });

  it('fails an asynchronous step that blocked past its time before its promise settled', async () => {
    const clock = withClock();
    const failure = await failureOf(
      invokeStep(
        step(() => {
          clock.advance(2000);
          return Promise.resolve({ allowed: true });
        }),
        clock.input,
        1000,
      ),
    );
    assert.equal(failure.reason, 'timeout');
    assert.match(failure.message, /^ran for 2000 ms, over its 1000 ms/);
  });

  it('turns a synchronous throw into an error failure', async () => {
    const failure = await failureOf(
      invokeStep(
        step(() => {
          throw new Error('boom');
        }),
        withClock().input,
        50,
      ),
    );
    assert.ok(failure instanceof StepFailedError);
    assert.deepEqual([failure.reason, failure.message], ['error', 'boom']);
  });

  it('takes a returned StepFailedError for the failure of the step, as if it had been thrown', () => {
    const open = new StepFailedError('breaker_open', 'circuit breaker of "p" is open');
    const result = invokeStep(
      step(() => open as unknown as Decision),
      withClock().input,
      50,
    );
    // Synchronously, and the very error: no promise, no wrapping in an "invalid answer".
    assert.equal(result, open);
  });

  it('turns a non-verdict return value into an error failure', async () => {
    const failure = await failureOf(
      invokeStep(
        step(() => 'yes' as unknown as Decision),
        withClock().input,
        50,
      ),
    );
    assert.equal(failure.message, 'returned string, expected a verdict from allow() or deny()');
  });

  it('times out a step that never answers and aborts its signal', async () => {
    let signal: AbortSignal | undefined;
    const failure = await failureOf(
      invokeStep(
        step((inv) => {
          signal = inv.signal;
          return new Promise(() => undefined);
        }),
        input,
        20,
      ),
    );
    assert.equal(failure.reason, 'timeout');
    assert.equal(failure.message, 'did not answer within 20 ms');
    assert.equal(signal?.aborted, true);
    assert.equal((signal?.reason as DOMException).name, 'TimeoutError');
  });

  it('gives a step that reads its signal late an already-aborted signal', async () => {
    let invocation: StepInvocation | undefined;
    await invokeStep(
      step((inv) => {
        invocation = inv;
        return new Promise(() => undefined);
      }),
      input,
      10,
    );
    assert.equal(invocation!.signal.aborted, true);
  });

  it('classifies an AbortError thrown by the step as a timeout', async () => {
    const failure = await failureOf(
      invokeStep(
        step(() => Promise.reject(new DOMException('aborted', 'AbortError'))),
        withClock().input,
        50,
      ),
    );
    assert.equal(failure.reason, 'timeout');
  });

  it('fails at once when no time is left', async () => {
    let called = false;
    const failure = await failureOf(
      invokeStep(
        step(() => {
          called = true;
          return { allowed: true };
        }),
        input,
        0,
      ),
    );
    assert.equal(failure.message, 'no time left in the request deadline');
    assert.equal(called, false);
  });

  it('swallows the late rejection of a timed-out step', async () => {
    let reject: (err: Error) => void = () => undefined;
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      await invokeStep(
        step(() => new Promise((_, r) => (reject = r))),
        input,
        5,
      );
      reject(new Error('late'));
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
