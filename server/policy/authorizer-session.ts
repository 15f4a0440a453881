/**
 * The `authorizer` of one review's admission policies: its checks asked of the apiserver (a SubjectAccessReview
 * each, server/kube/subject-access-checker.ts), each question once per review, as the apiserver's caching
 * authorizer asks it once per admission request. Everything is bounded: questions per review, the time each may
 * take (within the step's own), and questions in flight for the whole process. A check that cannot be answered
 * — the apiserver failed, timed out or was not asked — is an errored Decision, as the apiserver's is when its
 * authorizer fails: `allowed()` false, `errored()` true, `error()` saying why.
 *
 * CEL evaluation is synchronous and an answer is not, so a step runs its expressions (withAnswers), and when they
 * read a Decision without an answer, runs them again once the questions asked are answered; the units a run that
 * is set aside spent are given back to the review's budget (its time is not), so the review is charged what one
 * evaluation with the answers costs, as the apiserver charges it.
 */
import type { AdmissionRequest } from '../admission/types.js';
import type { AccessAnswer, AccessAttributes, AccessQuestions, AccessRecord, AccessUser } from '../cel/index.js';

/** Asks the apiserver: rejects when it did not answer (unreachable, an error, the signal). */
export interface SubjectAccessChecker {
  check(user: AccessUser, attributes: AccessAttributes, signal: AbortSignal): Promise<AccessAnswer>;
  /** What a review may ask of it (default AUTHORIZER_LIMITS). */
  readonly limits?: Partial<AuthorizerLimits>;
}

export interface AuthorizerLimits {
  /** Distinct questions one review may ask; past it a check is errored without asking. */
  readonly maxChecksPerReview: number;
  /** Longest wait for one answer (the step's own time bounds it too). */
  readonly checkTimeoutMs: number;
}

export const AUTHORIZER_LIMITS: AuthorizerLimits = { maxChecksPerReview: 32, checkTimeoutMs: 5_000 };

/** What a check answers without a cluster to ask (standalone, `review`, `replay`, `test`, `audit`). */
export const NOT_IN_CLUSTER = 'no authorizer: the gateway is not in cluster mode, so no SubjectAccessReview is asked';

const errored = (error: string): AccessAnswer => ({ allowed: false, reason: '', error });

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

interface Question extends AccessRecord {
  readonly user: AccessUser;
  readonly attributes: AccessAttributes;
  asking?: Promise<void>;
}

/** A question's identity: the same user asking the same thing (groups and extra in any order). */
function keyOf(user: AccessUser, attributes: AccessAttributes): string {
  const extra = Object.entries(user.extra ?? {})
    .map(([k, v]) => [k, [...v].sort()] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([user.username, user.uid ?? '', [...(user.groups ?? [])].sort(), extra, attributes]);
}

/** One review's questions and their answers. */
export class ReviewAuthorizer implements AccessQuestions {
  /** Reads of a Decision without an answer so far: a run that adds to it is run again (withAnswers). */
  waits = 0;
  /** Made by the first check: most reviews ask none. */
  private questions?: Map<string, Question>;
  private readonly limits: AuthorizerLimits;

  constructor(private readonly checker: SubjectAccessChecker | undefined) {
    this.limits = checker?.limits ? { ...AUTHORIZER_LIMITS, ...checker.limits } : AUTHORIZER_LIMITS;
  }

  ask(user: AccessUser, attributes: AccessAttributes): AccessRecord {
    if (this.checker === undefined) return { answer: errored(NOT_IN_CLUSTER) };
    const key = keyOf(user, attributes);
    const questions = (this.questions ??= new Map<string, Question>());
    const known = questions.get(key);
    if (known) return known;
    if (questions.size >= this.limits.maxChecksPerReview)
      return {
        answer: errored(`more than ${this.limits.maxChecksPerReview} different authorization checks in one review`),
      };
    const question: Question = { user, attributes };
    questions.set(key, question);
    return question;
  }

  waited(): void {
    this.waits++;
  }

  /** Answers every question asked so far (those another step is asking included); never rejects. */
  async answerAll(signal: AbortSignal): Promise<void> {
    const waiting: Promise<void>[] = [];
    for (const question of this.questions?.values() ?? []) {
      if (question.answer !== undefined) continue;
      waiting.push((question.asking ??= this.answer(question, signal)));
    }
    await Promise.all(waiting);
  }

  private async answer(question: Question, signal: AbortSignal): Promise<void> {
    const checker = this.checker!;
    const { checkTimeoutMs } = this.limits;
    const controller = new AbortController();
    const abort = (why: string) => controller.abort(new Error(why));
    const timer = setTimeout(() => abort(`no answer within ${checkTimeoutMs} ms`), checkTimeoutMs);
    const onStepEnd = () => abort("the step's time is up");
    if (signal.aborted) onStepEnd();
    else signal.addEventListener('abort', onStepEnd, { once: true });
    // Settled when the signal aborts even if the call ignored it.
    const aborted = new Promise<never>((_, reject) =>
      controller.signal.addEventListener('abort', () => reject(controller.signal.reason as Error), { once: true }),
    );
    try {
      question.answer = await Promise.race([
        checker.check(question.user, question.attributes, controller.signal),
        aborted,
      ]);
    } catch (err) {
      question.answer = errored(`SubjectAccessReview failed: ${errorText(err)}`);
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onStepEnd);
    }
  }
}

/**
 * Where each review's checks are asked, given by the reviewer in cluster mode (dispatch/reviewer.ts); a review
 * without one answers every check NOT_IN_CLUSTER.
 */
const checkers = new WeakMap<AdmissionRequest, SubjectAccessChecker>();

export function provideAccessChecker(request: AdmissionRequest, checker: SubjectAccessChecker): void {
  checkers.set(request, checker);
}

export function accessCheckerOf(request: AdmissionRequest): SubjectAccessChecker | undefined {
  return checkers.get(request);
}

/** What withAnswers needs of the review's shared CEL state (review-cel.ts). */
export interface AnsweringCel {
  readonly budget: { remaining: number };
  readonly questions: ReviewAuthorizer;
}

/**
 * `run` (a step's expressions, all of them, synchronously) until it reads no Decision without an answer: its
 * value at once when it read none (a policy without checks pays nothing more), else after as many rounds of
 * answers as it needs, at most one per question the review may ask. A run set aside gives back the units it
 * spent. `run` must have no effect but its value.
 */
export function withAnswers<T>(cel: AnsweringCel, signal: AbortSignal, run: () => T): T | Promise<T> {
  const before = cel.budget.remaining;
  const waits = cel.questions.waits;
  const value = run();
  if (cel.questions.waits === waits) return value;
  cel.budget.remaining = before;
  return answerThenRun(cel, signal, run);
}

async function answerThenRun<T>(cel: AnsweringCel, signal: AbortSignal, run: () => T): Promise<T> {
  for (;;) {
    await cel.questions.answerAll(signal);
    const before = cel.budget.remaining;
    const waits = cel.questions.waits;
    const value = run();
    if (cel.questions.waits === waits) return value;
    cel.budget.remaining = before;
  }
}
