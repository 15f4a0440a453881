/**
 * How every step of every chain is called within its time: the admission steps (invoke-step.ts) and the
 * authorize steps (authorizer.ts) alike. A step that answers synchronously (most in-process plugins) gets its
 * answer back synchronously, with no timer and no promise; an asynchronous one is raced against its time, and
 * its AbortSignal fires when the time is up. A step that kept the event loop past its time has timed out,
 * whatever it answered: JavaScript cannot interrupt a synchronous plugin that computes for seconds, so it is only
 * noticed when it returns, and its answer is discarded as if it had come too late. A throw or a rejection is the
 * step's failure.
 */
import { StepFailedError, errorMessage } from '../base/errors.js';
import { isThenable } from '../base/thenable.js';

/** What a chain takes a step's answer for, and how it words a step's timeout. */
export interface CallRules<A> {
  /** A step's answer as the chain takes it; a malformed one is the step's failure. */
  answer(value: unknown): A | StepFailedError;
  /** A step that did not answer within its `timeoutMs`. */
  late(timeoutMs: number): string;
  /** A step that answered after keeping the event loop for `ms`, past its `timeoutMs`. */
  overran(ms: number, timeoutMs: number): string;
}

/** What a call comes to: the step's answer, or its failure with the reason. */
export type Called<A> = A | StepFailedError;

/**
 * One call of a step, as the step receives it: its time, and the AbortSignal that fires when the time is up.
 * The AbortController is made only when the step reads the signal.
 */
export class Invocation {
  private controller: AbortController | undefined;
  private expired = false;

  constructor(readonly timeoutMs: number) {}

  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.expired && !this.controller.signal.aborted) this.controller.abort(timeoutError(this.timeoutMs));
    return this.controller.signal;
  }

  /** The time is up: the signal fires, or is aborted already when the step reads it later. */
  expire(): void {
    this.expired = true;
    this.controller?.abort(timeoutError(this.timeoutMs));
  }
}

/** Calls `step` with `invocation` within its time; synchronously when the step answers synchronously. */
export function callWithin<I extends Invocation, A>(
  step: { invoke(invocation: I): unknown },
  invocation: I,
  rules: CallRules<A>,
  now: () => number,
): Called<A> | Promise<Called<A>> {
  const { timeoutMs } = invocation;
  if (timeoutMs <= 0) return new StepFailedError('timeout', 'no time left in the request deadline');
  const started = now();
  let result: Called<A>;
  try {
    const returned = step.invoke(invocation);
    if (isThenable(returned)) {
      return settleWithin(invocation, returned, rules).then((settled) =>
        settled instanceof StepFailedError && settled.reason === 'timeout'
          ? settled
          : (overrun(rules, now() - started, timeoutMs) ?? settled),
      );
    }
    result = returned instanceof StepFailedError ? returned : rules.answer(returned);
  } catch (err) {
    result = failureOf(err);
  }
  return overrun(rules, now() - started, timeoutMs) ?? result;
}

/** A step that kept the event loop past its time has timed out, whatever it answered. */
function overrun<A>(rules: CallRules<A>, ms: number, timeoutMs: number): StepFailedError | undefined {
  return ms <= timeoutMs ? undefined : new StepFailedError('timeout', rules.overran(ms, timeoutMs));
}

const TIMED_OUT = Symbol('timed out');

async function settleWithin<A>(
  invocation: Invocation,
  returned: PromiseLike<unknown>,
  rules: CallRules<A>,
): Promise<Called<A>> {
  const { timeoutMs } = invocation;
  const pending = Promise.resolve(returned);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(resolve, timeoutMs, TIMED_OUT);
  });
  try {
    const settled = await Promise.race([pending, deadline]);
    if (settled === TIMED_OUT) {
      invocation.expire();
      // The step keeps running in the background; its late outcome must never surface as an unhandled rejection.
      pending.catch(() => undefined);
      return new StepFailedError('timeout', rules.late(timeoutMs));
    }
    return rules.answer(settled);
  } catch (err) {
    return failureOf(err);
  } finally {
    clearTimeout(timer);
  }
}

/** A thrown error is the step's failure; what it threw stays its cause (the failure's log line shows its stack). */
function failureOf(err: unknown): StepFailedError {
  if (err instanceof StepFailedError) return err;
  const name = err instanceof Error || err instanceof DOMException ? err.name : '';
  if (name === 'TimeoutError' || name === 'AbortError') {
    return new StepFailedError('timeout', `timed out: ${errorMessage(err)}`, { cause: err });
  }
  return new StepFailedError('error', errorMessage(err), { cause: err });
}

function timeoutError(ms: number): DOMException {
  return new DOMException(`step deadline of ${ms} ms exceeded`, 'TimeoutError');
}
