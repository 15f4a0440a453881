/**
 * The validate phase: the matching steps run in parallel on read-only views of the object (apiserver
 * validating/dispatcher.go). Every refusal is reported, in chain order, each prefixed with its step.
 */
import { StepFailedError } from '../base/errors.js';
import { readOnlyView } from '../patch/tracked-object.js';
import { invokeStep } from './invoke-step.js';
import {
  elapsedMs,
  recordSkip,
  settleDenial,
  settleFailure,
  settleSuccess,
  timeLeft,
  type Rejection,
  type ReviewContext,
} from './review-context.js';
import { skipReason } from './skip.js';
import type { Step } from './step.js';

export interface ValidateOutcome {
  readonly rejection?: Rejection;
}

export async function runValidatePhase(steps: readonly Step[], ctx: ReviewContext): Promise<ValidateOutcome> {
  const relevant: Step[] = [];
  for (const step of steps) {
    const skip = skipReason(step, ctx);
    if (skip) recordSkip(ctx, step, skip);
    else relevant.push(step);
  }
  if (relevant.length === 0) return {};

  const { request } = ctx;
  const results = await Promise.all(
    relevant.map(async (step) => {
      const started = ctx.now();
      const result = await invokeStep(
        step,
        {
          request,
          object: readOnlyView(request.object, step.name),
          plainObject: request.object ?? undefined,
          oldObject: request.oldObject,
          notes: ctx.notes,
          stepLog: ctx.stepLog,
          now: ctx.now,
        },
        timeLeft(ctx, step),
      );
      return { step, result, ms: elapsedMs(ctx, started) };
    }),
  );

  const rejections: Rejection[] = [];
  for (const { step, result, ms } of results) {
    let rejection: Rejection | undefined;
    if (result.failure) rejection = settleFailure(ctx, step, ms, result.failure, 0);
    else if (!result.decision.allowed) rejection = settleDenial(ctx, step, ms, result.decision, 0);
    else if (result.decision.patch?.length) {
      const failure = new StepFailedError('invalid_response', 'a validating step may not return a patch');
      rejection = settleFailure(ctx, step, ms, failure, 0);
    } else settleSuccess(ctx, step, ms, false, 0);
    if (rejection) rejections.push(rejection);
  }
  if (rejections.length === 0) return {};
  return {
    rejection: { message: rejections.map((r) => r.message).join('; '), code: rejections[0]!.code },
  };
}
