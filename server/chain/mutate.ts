/**
 * The mutate phase: matching steps run one after another in chain order on one working copy, each
 * seeing the previous steps' result (apiserver mutating/dispatcher.go). The review carries one patch,
 * the diff from the request object to the final copy — none when nothing changed, never on DELETE or
 * CONNECT. A step with reinvocationPolicy IfNeeded runs once more when a later step changed the object.
 */
import { APPROVED, type Decision, type Denial } from '../admission/decision.js';
import type { JsonPatchOperation, KubeObject } from '../admission/types.js';
import { PatchApplyError, StepFailedError } from '../base/errors.js';
import { applyPatchInPlace } from '../patch/apply.js';
import { diffWritten } from '../patch/diff-written.js';
import { trackObject, type TrackedSession } from '../patch/tracked-object.js';
import { WorkingCopy } from '../patch/working-copy.js';
import { WrittenPaths } from '../patch/written-paths.js';
import { invokeStep, type StepResult } from './invoke-step.js';
import { elapsedMs, settleRefusal, timeLeft, yieldIfLarge, type ReviewContext } from './review-context.js';
import type { PatchConflict } from './review-observer.js';
import type { Step } from './step.js';
import { skipReason } from './skip.js';

/** Operations whose object cannot be patched (the apiserver refuses such patches). */
const UNPATCHABLE = new Set(['DELETE', 'CONNECT']);

/** The phase's decision: the first denial that ends it, or allowed with the review's one patch. */
export async function runMutatePhase(steps: readonly Step[], ctx: ReviewContext): Promise<Decision> {
  const { request } = ctx;
  const patchable = !!request.object && !UNPATCHABLE.has(request.operation);
  let working: WorkingCopy<KubeObject> | undefined;
  /** Which step wrote which JSON pointers: conflicts, and what the final diff compares. */
  const written = new WrittenPaths();
  let changes = 0;
  const seenChanges = new Map<Step, number>();

  /** What a step's result does to the review: the denial that ends it, or undefined when the chain goes on. */
  const settle = (
    step: Step,
    round: number,
    session: TrackedSession<KubeObject> | undefined,
    started: number,
    result: StepResult,
  ): Denial | undefined => {
    let outcome = result;
    if (!(outcome instanceof StepFailedError) && outcome.allowed && outcome.patch?.length) {
      outcome = applyReturnedPatch(session, outcome.patch, request.operation) ?? outcome;
    }
    const unusable = session?.close();
    if (unusable && !(outcome instanceof StepFailedError)) outcome = new StepFailedError('error', unusable);
    const ms = elapsedMs(ctx, started);

    if (outcome instanceof StepFailedError || !outcome.allowed) {
      session?.rollback();
      seenChanges.set(step, changes);
      return settleRefusal(ctx, step, ms, outcome, round);
    }
    const changed = session !== undefined && session.writeCount > 0;
    if (changed) {
      changes++;
      recordWrites(ctx, step, session, written);
    }
    seenChanges.set(step, changes);
    ctx.observer.approved(step, ms, changed, round);
    return undefined;
  };

  /** Runs one step; synchronous when the step answers synchronously. */
  const runStep = (step: Step, round: number): Denial | undefined | Promise<Denial | undefined> => {
    if (step.needsObject && !patchable) {
      ctx.observer.skipped(step, `nothing to mutate on ${request.operation}`);
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
        logs: ctx.observer,
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
      ctx.observer.skipped(step, skip);
      continue;
    }
    invoked.push(step);
    await yieldIfLarge(ctx);
    const ran = runStep(step, 0);
    const denial = ran instanceof Promise ? await ran : ran;
    if (denial) return denial;
  }
  // Reinvocation: once, in order, for IfNeeded steps whose view of the object is stale.
  for (const step of invoked) {
    if (step.reinvocationPolicy !== 'IfNeeded' || (seenChanges.get(step) ?? 0) === changes) continue;
    const ran = runStep(step, 1);
    const denial = ran instanceof Promise ? await ran : ran;
    if (denial) return denial;
  }

  if (!working || changes === 0) return APPROVED;
  await yieldIfLarge(ctx);
  // Only what some step wrote can differ: diff those subtrees, not the whole object.
  const patch = diffWritten(request.object!, working.root, written);
  return patch.length > 0 ? { allowed: true, patch } : APPROVED;
}

/** Applies the patch a step returned to its view of the working copy; the failure when it cannot. */
function applyReturnedPatch(
  session: TrackedSession<KubeObject> | undefined,
  patch: readonly JsonPatchOperation[],
  operation: string,
): StepFailedError | undefined {
  if (!session) {
    return new StepFailedError(
      'invalid_patch',
      `returned a patch, but a ${operation} request's object cannot be modified`,
    );
  }
  try {
    applyPatchInPlace(session.view, patch);
    return undefined;
  } catch (err) {
    if (!(err instanceof PatchApplyError)) throw err;
    return new StepFailedError('invalid_patch', `returned a patch that does not apply: ${err.message}`, { cause: err });
  }
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
  let first: PatchConflict | undefined;
  const onOverwrite = (path: string, earlierPath: string, earlier: string) => {
    conflicts++;
    first ??= { path, earlier, earlierPath };
  };
  session.forEachWrite((place, key) => written.recordAt(place, key, step.name, onOverwrite));
  if (!first) return;
  // One annotation and one log line per step, however many paths it overwrote: both stay bounded.
  const more = conflicts > 1 ? ` (and ${conflicts - 1} more)` : '';
  ctx.notes.annotate(
    step.name,
    'patch-conflict',
    `${first.path} overwrote ${first.earlierPath} written by ${first.earlier}${more}`,
  );
  ctx.observer.patchConflicts(step, conflicts, first);
}
