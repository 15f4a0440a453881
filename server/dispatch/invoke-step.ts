/**
 * Runs one admission step invocation within its share of the review's deadline (invocation.ts: a synchronous
 * step costs no timer). A returned deny is a decision; a throw, a timeout or a malformed return value is a
 * failure.
 */
import type { Decision } from '../admission/decision.js';
import type { KubeObject } from '../admission/types.js';
import { StepFailedError } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { readOnlyView } from '../patch/tracked-object.js';
import { Invocation, callWithin, type CallRules, type Called } from '../steps/invocation.js';
import type { StepNotes } from './notes.js';
import type { ReviewTrace } from '../trace/review-trace.js';
import type { Step, StepInvocation } from '../steps/step.js';

/** What an invocation comes to: the step's decision, or its failure with the reason. */
export type StepResult = Called<Decision>;

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
 * A StepInvocation with everything costly created on first use: the AbortController (invocation.ts), the
 * logger, the read-only view of oldObject and the warn/annotate functions bound to the step.
 */
class AdmissionInvocation extends Invocation implements StepInvocation {
  readonly request: StepInvocation['request'];
  readonly object: KubeObject | undefined;
  readonly plainObject: KubeObject | undefined;
  private oldView: KubeObject | undefined;
  private oldViewMade = false;
  private boundWarn: ((message: string) => void) | undefined;
  private boundAnnotate: ((key: string, value: string) => void) | undefined;
  private traceHeadersOf: readonly string[] | undefined;

  constructor(
    private readonly stepOf: Step,
    private readonly input: InvocationInput,
    timeoutMs: number,
  ) {
    super(timeoutMs);
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

  get log(): Logger {
    return this.input.logs.stepLog(this.stepOf.name);
  }

  get warn(): (message: string) => void {
    return (this.boundWarn ??= (message) =>
      this.input.notes.stepWarn(this.stepOf.name, message, this.stepOf.ownWords === true));
  }

  get annotate(): (key: string, value: string) => void {
    return (this.boundAnnotate ??= (key, value) =>
      this.input.notes.stepAnnotate(this.stepOf.name, key, value, this.stepOf.ownWords === true));
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

/** An admission step's answer is a Decision; its timeouts are worded for the review's warnings and denials. */
const ADMISSION_RULES: CallRules<Decision> = {
  answer: checkDecision,
  late: (timeoutMs) => `did not answer within ${timeoutMs} ms`,
  overran: (ms, timeoutMs) =>
    `ran for ${Math.round(ms)} ms, over its ${timeoutMs} ms (an in-process step cannot be interrupted)`,
};

/**
 * A step that answers synchronously (most in-process plugins) gets its result back synchronously: no
 * promise and no microtask hop per step on the path of every review.
 */
export function invokeStep(step: Step, input: InvocationInput, timeoutMs: number): StepResult | Promise<StepResult> {
  const invocation = new AdmissionInvocation(step, input, timeoutMs);
  return callWithin<AdmissionInvocation, Decision>(step, invocation, ADMISSION_RULES, input.now);
}
