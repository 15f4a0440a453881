/**
 * The validate phase: the matching steps run in parallel on read-only views of the object (apiserver
 * validating/dispatcher.go). Every refusal is reported, in chain order, each prefixed with its step; the steps'
 * warnings and audit annotations come in chain order too, whichever step finishes first.
 */
import { APPROVED, type Decision, type Denial } from '../admission/decision.js';
import { StepFailedError } from '../base/errors.js';
import { readOnlyView } from '../patch/tracked-object.js';
import { HeldNotes } from './held-notes.js';
import { invokeStep } from './invoke-step.js';
import { elapsedMs, settleRefusal, timeLeft, type ReviewContext } from './review-context.js';
import { checkConditions } from './match-conditions.js';
import { skipReason } from './skip.js';
import type { Step } from '../steps/step.js';

/** The phase's decision: allowed, or denied with every refusal joined. */
export async function runValidatePhase(steps: readonly Step[], ctx: ReviewContext): Promise<Decision> {
  const { request } = ctx;
  const relevant: Step[] = [];
  /** Steps whose matchConditions could not be evaluated: failed, not invoked. */
  let unmatched: Map<Step, StepFailedError> | undefined;
  for (const step of steps) {
    const skip =
      skipReason(step, ctx) ??
      (step.matchConditions ? checkConditions(step.matchConditions, request, request.object ?? undefined) : undefined);
    if (typeof skip === 'string') {
      ctx.observer.skipped(step, skip);
      continue;
    }
    if (skip) (unmatched ??= new Map()).set(step, skip);
    relevant.push(step);
  }
  if (relevant.length === 0) return APPROVED;

  // The steps run at once and finish in any order; their notes are held and passed on in chain order, so the same
  // review gets the same answer (as the mutate phase's levels do). A step alone needs no holding.
  const held = relevant.length > 1 ? relevant.map(() => new HeldNotes()) : undefined;
  const results = await Promise.all(
    relevant.map(async (step, i) => {
      const failure = unmatched?.get(step);
      if (failure) return { step, result: failure, ms: 0 };
      const started = ctx.now();
      const result = await invokeStep(
        step,
        {
          request,
          object: readOnlyView(request.object, step.name),
          plainObject: request.object ?? undefined,
          oldObject: request.oldObject,
          notes: held?.[i] ?? ctx.notes,
          logs: ctx.observer,
          now: ctx.now,
        },
        timeLeft(ctx, step),
      );
      return { step, result, ms: elapsedMs(ctx, started) };
    }),
  );

  if (held) for (const notes of held) notes.passTo(ctx.notes);
  const denials: Denial[] = [];
  for (const { step, result, ms } of results) {
    let refusal = result;
    if (!(refusal instanceof StepFailedError) && refusal.allowed) {
      if (!refusal.patch?.length) {
        ctx.observer.approved(step, ms, false, 0);
        continue;
      }
      refusal = new StepFailedError('invalid_response', 'a validating step may not return a patch');
    }
    const denial = settleRefusal(ctx, step, ms, refusal, 0);
    if (denial) denials.push(denial);
  }
  if (denials.length === 0) return APPROVED;
  return { allowed: false, message: denials.map((d) => d.message).join('; '), code: denials[0]!.code };
}
