/**
 * Runs one step invocation within its time: a synchronous step costs no timer; an asynchronous one is
 * raced against its share of the deadline, and its AbortSignal fires when that share is used up.
 * A returned deny is a decision; a throw, a timeout or a malformed return value is a failure.
 */
import type { Decision } from '../admission/decision.js';
import type { KubeObject } from '../admission/types.js';
import { StepFailedError, errorMessage } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { readOnlyView } from '../patch/tracked-object.js';
import type { StepNotes } from './notes.js';
import type { ReviewTrace } from './review-trace.js';
import type { Step, StepInvocation } from './step.js';

/** What an invocation comes to: the step's decision, or its failure with the reason. */
export type StepResult = Decision | StepFailedError;

/** Where a step's logger comes from: bound to the review and the step, made when the step first logs. */
export interface StepLogs {
  stepLog(step: string): Logger;
  /** The review's trace, when tracing is on: each invocation gets a span (review-trace.ts). */
  readonly trace?: ReviewTrace | undefined;
}

/** What the dispatcher provides for one invocation: plain data, no per-call closures (the hot path). */
export interface InvocationInput {
  readonly request: StepInvocation['request'];
  /** The view the step works on (tracked working copy, or read-only). */
  readonly object: KubeObject | undefined;
  readonly plainObject: KubeObject | undefined;
  /** The request's old object; handed out as a read-only view only when a step reads it. */
  readonly oldObject: KubeObject | null | undefined;
  readonly notes: StepNotes;
  readonly logs: StepLogs;
  /** The review's clock (performance.now() in production). */
  readonly now: () => number;
}

/**
 * A StepInvocation with everything costly created on first use: the AbortController, the logger, the
 * read-only view of oldObject and the warn/annotate functions bound to the step.
 */
class Invocation implements StepInvocation {
  readonly request: StepInvocation['request'];
  readonly object: KubeObject | undefined;
  readonly plainObject: KubeObject | undefined;
  expired = false;
  private controller: AbortController | undefined;
  private oldView: KubeObject | undefined;
  private oldViewMade = false;
  private boundWarn: ((message: string) => void) | undefined;
  private boundAnnotate: ((key: string, value: string) => void) | undefined;
  private traceHeadersOf: readonly string[] | undefined;

  constructor(
    private readonly stepOf: Step,
    private readonly input: InvocationInput,
    readonly timeoutMs: number,
  ) {
    this.request = input.request;
    this.object = input.object;
    this.plainObject = input.plainObject;
  }

  get oldObject(): KubeObject | undefined {
    if (!this.oldViewMade) {
      this.oldView = readOnlyView(this.input.oldObject, this.stepOf.name);
      this.oldViewMade = true;
    }
    return this.oldView;
  }

  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.expired && !this.controller.signal.aborted) this.controller.abort(timeoutError(this.timeoutMs));
    return this.controller.signal;
  }

  get log(): Logger {
    return this.input.logs.stepLog(this.stepOf.name);
  }

  get warn(): (message: string) => void {
    return (this.boundWarn ??= (message) => this.input.notes.stepWarn(this.stepOf.name, message));
  }

  get annotate(): (key: string, value: string) => void {
    return (this.boundAnnotate ??= (key, value) => this.input.notes.stepAnnotate(this.stepOf.name, key, value));
  }

  /**
   * With tracing on, the step's span starts when a step asks for its trace context (a provider, as it calls
   * out); a step that never asks (a plugin) gets its span when its outcome is recorded, dated from its start.
   */
  get traceHeaders(): readonly string[] | undefined {
    const trace = this.input.logs.trace;
    if (!trace) return undefined;
    return (this.traceHeadersOf ??= trace.stepStarted(this.stepOf));
  }

  expire(): void {
    this.expired = true;
    this.controller?.abort(timeoutError(this.timeoutMs));
  }
}

const TIMED_OUT = Symbol('timed out');

function isThenable<T>(value: unknown): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

function checkDecision(value: unknown): StepResult {
  if (typeof value === 'object' && value !== null && 'allowed' in value) {
    const v = value as Decision;
    if (v.allowed === true) return v;
    if (v.allowed === false) {
      const message = typeof v.message === 'string' && v.message ? v.message : 'denied without explanation';
      const code = typeof v.code === 'number' && v.code >= 400 && v.code < 600 ? Math.trunc(v.code) : 403;
      return { allowed: false, message, code };
    }
  }
  return new StepFailedError(
    'error',
    `returned ${value === null ? 'null' : typeof value}, expected a verdict from allow() or deny()`,
  );
}

/** A thrown error is the step's failure; what it threw stays its cause (the failure's log line shows its stack). */
function classify(err: unknown): StepFailedError {
  if (err instanceof StepFailedError) return err;
  const name = err instanceof Error || err instanceof DOMException ? err.name : '';
  if (name === 'TimeoutError' || name === 'AbortError') {
    return new StepFailedError('timeout', `timed out: ${errorMessage(err)}`, { cause: err });
  }
  return new StepFailedError('error', errorMessage(err), { cause: err });
}

/**
 * A step that answers synchronously (most in-process plugins) gets its result back synchronously: no
 * promise and no microtask hop per step on the path of every review.
 */
export function invokeStep(step: Step, input: InvocationInput, timeoutMs: number): StepResult | Promise<StepResult> {
  if (timeoutMs <= 0) return new StepFailedError('timeout', 'no time left in the request deadline');
  const invocation = new Invocation(step, input, timeoutMs);
  const started = input.now();
  let result: StepResult;
  try {
    const returned = step.invoke(invocation);
    if (isThenable(returned)) {
      return settleWithin(invocation, returned, timeoutMs).then((settled) =>
        settled instanceof StepFailedError && settled.reason === 'timeout'
          ? settled
          : (overrun(input, started, timeoutMs) ?? settled),
      );
    }
    result = checkDecision(returned);
  } catch (err) {
    result = classify(err);
  }
  return overrun(input, started, timeoutMs) ?? result;
}

/**
 * A step that kept the event loop past its time (JavaScript cannot be interrupted, so a synchronous plugin
 * that computes for seconds is only noticed when it returns) has timed out, whatever it answered: its result
 * is discarded and its failurePolicy applies, exactly as for one that answered too late.
 */
function overrun(input: InvocationInput, started: number, timeoutMs: number): StepFailedError | undefined {
  const ms = input.now() - started;
  if (ms <= timeoutMs) return undefined;
  return new StepFailedError(
    'timeout',
    `ran for ${Math.round(ms)} ms, over its ${timeoutMs} ms (an in-process step cannot be interrupted)`,
  );
}

async function settleWithin(
  invocation: Invocation,
  returned: PromiseLike<unknown>,
  timeoutMs: number,
): Promise<StepResult> {
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
      return new StepFailedError('timeout', `did not answer within ${timeoutMs} ms`);
    }
    return checkDecision(settled);
  } catch (err) {
    return classify(err);
  } finally {
    clearTimeout(timer);
  }
}

function timeoutError(ms: number): DOMException {
  return new DOMException(`step deadline of ${ms} ms exceeded`, 'TimeoutError');
}
