/**
 * The mutate phase: matching steps run one after another in chain order on one working copy, each
 * seeing the previous steps' result (apiserver mutating/dispatcher.go). The review carries one patch,
 * the diff from the request object to the final copy — none when nothing changed, never on DELETE or
 * CONNECT. A step with reinvocationPolicy IfNeeded runs once more when a later step changed the object.
 */
import { PatchApplyError, StepFailedError } from '../base/errors.js';
import type { JsonPatchOperation, KubeObject } from '../admission/types.js';
import { applyPatchInPlace } from '../patch/apply.js';
import { diffWritten } from '../patch/diff-written.js';
import { trackObject, type TrackedSession } from '../patch/tracked-object.js';
import { WorkingCopy } from '../patch/working-copy.js';
import { WrittenPaths } from '../patch/written-paths.js';
import { invokeStep, type InvokeResult } from './invoke-step.js';
import {
  elapsedMs,
  recordSkip,
  settleDenial,
  settleFailure,
  settleSuccess,
  timeLeft,
  yieldIfLarge,
  type Rejection,
  type ReviewContext,
} from './review-context.js';
import type { Step } from './step.js';
import { skipReason } from './skip.js';

export interface MutateOutcome {
  readonly rejection?: Rejection;
  readonly patch?: JsonPatchOperation[];
}

/** Operations whose object cannot be patched (the apiserver refuses such patches). */
const UNPATCHABLE = new Set(['DELETE', 'CONNECT']);

export async function runMutatePhase(steps: readonly Step[], ctx: ReviewContext): Promise<MutateOutcome> {
  const { request } = ctx;
  const patchable = !!request.object && !UNPATCHABLE.has(request.operation);
  let working: WorkingCopy<KubeObject> | undefined;
  /** Which step wrote which JSON pointers: conflicts, and what the final diff compares. */
  const written = new WrittenPaths();
  let changes = 0;
  const seenChanges = new Map<Step, number>();

  /** What a step's result does to the review; undefined when the chain goes on. */
  const settle = (
    step: Step,
    round: number,
    session: TrackedSession<KubeObject> | undefined,
    started: number,
    result: InvokeResult,
  ): Rejection | undefined => {
    let failure = result.failure;
    if (result.decision?.allowed && result.decision.patch?.length) {
      if (!session) {
        failure = new StepFailedError(
          'invalid_patch',
          `returned a patch, but a ${request.operation} request's object cannot be modified`,
        );
      } else {
        try {
          applyPatchInPlace(session.view, result.decision.patch);
        } catch (err) {
          if (!(err instanceof PatchApplyError)) throw err;
          failure = new StepFailedError('invalid_patch', `returned a patch that does not apply: ${err.message}`, {
            cause: err,
          });
        }
      }
    }
    const unusable = session?.close();
    if (unusable && !failure) failure = new StepFailedError('error', unusable);
    const ms = elapsedMs(ctx, started);

    if (failure || result.decision?.allowed === false) {
      session?.rollback();
      seenChanges.set(step, changes);
      return failure
        ? settleFailure(ctx, step, ms, failure, round)
        : settleDenial(ctx, step, ms, result.decision as Rejection, round);
    }
    const changed = session !== undefined && session.writeCount > 0;
    if (changed) {
      changes++;
      recordWrites(ctx, step, session, written);
    }
    seenChanges.set(step, changes);
    settleSuccess(ctx, step, ms, changed, round);
    return undefined;
  };

  /** Runs one step; synchronous when the step answers synchronously. */
  const runStep = (step: Step, round: number): Rejection | undefined | Promise<Rejection | undefined> => {
    if (step.needsObject && !patchable) {
      recordSkip(ctx, step, `nothing to mutate on ${request.operation}`);
      return undefined;
    }
    if (patchable) working ??= new WorkingCopy(request.object!);
    const session = working ? trackObject(working, step.name) : undefined;
    const started = ctx.now();
    const result = invokeStep(
      step,
      {
        request,
        object: session?.view,
        plainObject: working?.root ?? request.object ?? undefined,
        oldObject: request.oldObject,
        notes: ctx.notes,
        stepLog: ctx.stepLog,
        now: ctx.now,
      },
      timeLeft(ctx, step),
    );
    return result instanceof Promise
      ? result.then((settled) => settle(step, round, session, started, settled))
      : settle(step, round, session, started, result);
  };

  const invoked: Step[] = [];
  for (const step of steps) {
    const skip = skipReason(step, ctx);
    if (skip) {
      recordSkip(ctx, step, skip);
      continue;
    }
    invoked.push(step);
    await yieldIfLarge(ctx);
    const ran = runStep(step, 0);
    const rejection = ran instanceof Promise ? await ran : ran;
    if (rejection) return { rejection };
  }
  // Reinvocation: once, in order, for IfNeeded steps whose view of the object is stale.
  for (const step of invoked) {
    if (step.reinvocationPolicy !== 'IfNeeded' || (seenChanges.get(step) ?? 0) === changes) continue;
    const ran = runStep(step, 1);
    const rejection = ran instanceof Promise ? await ran : ran;
    if (rejection) return { rejection };
  }

  if (!working || changes === 0) return {};
  await yieldIfLarge(ctx);
  // Only what some step wrote can differ: diff those subtrees, not the whole object.
  const patch = diffWritten(request.object!, working.root, written);
  return patch.length > 0 ? { patch } : {};
}

/**
 * Records a step's writes. A conflict is a write to a path an earlier step wrote, or to one of its
 * ancestors (replacing or removing what the earlier step put there). Writing below an earlier step's value
 * (adding a label to the labels map it created) is cooperation, not a conflict.
 */
function recordWrites(
  ctx: ReviewContext,
  step: Step,
  session: TrackedSession<KubeObject>,
  written: WrittenPaths,
): void {
  let conflicts = 0;
  let first: { path: string; earlier: string; earlierPath: string } | undefined;
  const onOverwrite = (path: string, earlierPath: string, earlier: string) => {
    conflicts++;
    first ??= { path, earlier, earlierPath };
  };
  session.forEachWrite((place, key) => written.recordAt(place, key, step.name, onOverwrite));
  if (!first) return;
  // One annotation and one log line per step, however many paths it overwrote: both stay bounded.
  const more = conflicts > 1 ? ` (and ${conflicts - 1} more)` : '';
  ctx.metrics.patchConflicts.inc({ step: step.name }, conflicts);
  ctx.notes.annotate(
    step.name,
    'patch-conflict',
    `${first.path} overwrote ${first.earlierPath} written by ${first.earlier}${more}`,
  );
  ctx.log().debug({ step: step.name, ...first, conflicts }, 'patch conflict');
}
