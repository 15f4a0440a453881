/**
 * Runs one step invocation within its time: a synchronous step costs no timer; an asynchronous one is
 * raced against its share of the deadline, and its AbortSignal fires when that share is used up.
 * A returned deny is a decision; a throw, a timeout or a malformed return value is a failure.
 */
import { StepFailedError, errorMessage } from '../errors.js';
import type { KubeObject, Logger } from '../plugin-api/types.js';
import type { Step, StepDecision, StepInvocation } from './step.js';

export type InvokeResult =
  | { readonly decision: StepDecision; readonly failure?: undefined }
  | { readonly decision?: undefined; readonly failure: StepFailedError };

/** What the dispatcher provides for one invocation. */
export interface InvocationInput {
  readonly request: StepInvocation['request'];
  readonly object: KubeObject | undefined;
  readonly oldObject: () => KubeObject | undefined;
  readonly plainObject: KubeObject | undefined;
  readonly log: () => Logger;
  readonly warn: (message: string) => void;
  readonly annotate: (key: string, value: string) => void;
}

const TIMED_OUT = Symbol('timed out');

function isThenable<T>(value: unknown): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

function checkDecision(step: Step, value: unknown): InvokeResult {
  if (typeof value === 'object' && value !== null && 'allowed' in value) {
    const v = value as StepDecision;
    if (v.allowed === true) return { decision: v };
    if (v.allowed === false) {
      const message = typeof v.message === 'string' && v.message ? v.message : 'denied without explanation';
      const code = typeof v.code === 'number' && v.code >= 400 && v.code < 600 ? Math.trunc(v.code) : 403;
      return { decision: { allowed: false, message, code } };
    }
  }
  return {
    failure: new StepFailedError(
      step.name,
      'error',
      `returned ${value === null ? 'null' : typeof value}, expected a verdict from allow() or deny()`,
    ),
  };
}

function classify(step: Step, err: unknown): InvokeResult {
  if (err instanceof StepFailedError) return { failure: err };
  const name = err instanceof Error || err instanceof DOMException ? err.name : '';
  if (name === 'TimeoutError' || name === 'AbortError') {
    return { failure: new StepFailedError(step.name, 'timeout', `timed out: ${errorMessage(err)}`, { cause: err }) };
  }
  return { failure: new StepFailedError(step.name, 'error', errorMessage(err), { cause: err }) };
}

export async function invokeStep(step: Step, input: InvocationInput, timeoutMs: number): Promise<InvokeResult> {
  if (timeoutMs <= 0) {
    return { failure: new StepFailedError(step.name, 'timeout', 'no time left in the request deadline') };
  }
  let controller: AbortController | undefined;
  let expired = false;
  let oldObject: KubeObject | undefined;
  let oldObjectRead = false;
  const invocation: StepInvocation = {
    request: input.request,
    object: input.object,
    plainObject: input.plainObject,
    timeoutMs,
    get oldObject() {
      if (!oldObjectRead) {
        oldObject = input.oldObject();
        oldObjectRead = true;
      }
      return oldObject;
    },
    get signal() {
      controller ??= new AbortController();
      if (expired && !controller.signal.aborted) controller.abort(timeoutError(timeoutMs));
      return controller.signal;
    },
    get log() {
      return input.log();
    },
    warn: input.warn,
    annotate: input.annotate,
  };

  let returned: unknown;
  try {
    returned = step.invoke(invocation);
  } catch (err) {
    return classify(step, err);
  }
  if (!isThenable(returned)) return checkDecision(step, returned);

  const pending = Promise.resolve(returned);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(resolve, timeoutMs, TIMED_OUT);
  });
  try {
    const settled = await Promise.race([pending, deadline]);
    if (settled === TIMED_OUT) {
      expired = true;
      controller?.abort(timeoutError(timeoutMs));
      // The step keeps running in the background; its late outcome must never surface as an unhandled rejection.
      pending.catch(() => undefined);
      return { failure: new StepFailedError(step.name, 'timeout', `did not answer within ${timeoutMs} ms`) };
    }
    return checkDecision(step, settled);
  } catch (err) {
    return classify(step, err);
  } finally {
    clearTimeout(timer);
  }
}

function timeoutError(ms: number): DOMException {
  return new DOMException(`step deadline of ${ms} ms exceeded`, 'TimeoutError');
}
