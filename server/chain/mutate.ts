/**
 * The mutate phase: matching steps run one after another in chain order on one working copy, each
 * seeing the previous steps' result (apiserver mutating/dispatcher.go). The review carries one patch,
 * the diff from the request object to the final copy — none when nothing changed, never on DELETE or
 * CONNECT. A step with reinvocationPolicy IfNeeded runs once more when a later step changed the object.
 */
import { PatchApplyError, StepFailedError } from '../errors.js';
import type { JsonPatchOperation, KubeObject } from '../plugin-api/types.js';
import { applyPatchInPlace, diffWritten } from '../patch/apply.js';
import { trackObject, type TrackedSession } from '../patch/tracked-object.js';
import { WorkingCopy } from '../patch/working-copy.js';
import { invokeStep, type InvokeResult } from './invoke-step.js';
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
  /** Which step last wrote each JSON pointer, for conflict detection. */
  const writers = new Map<string, string>();
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
    session?.close();
    const ms = elapsedMs(ctx, started);

    if (failure || result.decision?.allowed === false) {
      session?.rollback();
      seenChanges.set(step, changes);
      return failure
        ? settleFailure(ctx, step, ms, failure, round)
        : settleDenial(ctx, step, ms, result.decision as Rejection, round);
    }
    const writes = session?.writes ?? [];
    if (writes.length > 0) {
      changes++;
      noteConflicts(ctx, step, writes, writers);
    }
    seenChanges.set(step, changes);
    settleSuccess(ctx, step, ms, writes.length > 0, round);
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
  // Only what some step wrote can differ: diff those subtrees, not the whole object.
  const patch = diffWritten(request.object!, working.root, writers.keys());
  return patch.length > 0 ? { patch } : {};
}

function isAncestorOrSelf(ancestor: string, path: string): boolean {
  if (path.length === ancestor.length) return path === ancestor;
  return path.length > ancestor.length && path.charCodeAt(ancestor.length) === 47 /* / */ && path.startsWith(ancestor);
}

/**
 * A conflict is a write to a path an earlier step wrote, or to one of its ancestors (replacing or
 * removing what the earlier step put there). Writing below an earlier step's value (adding a label to
 * the labels map it created) is cooperation, not a conflict.
 */
function noteConflicts(ctx: ReviewContext, step: Step, writes: readonly string[], writers: Map<string, string>): void {
  for (const path of writes) {
    for (const [written, writer] of writers) {
      if (writer !== step.name && isAncestorOrSelf(path, written)) {
        ctx.metrics.patchConflicts.inc({ step: step.name });
        ctx.notes.annotate(step.name, 'patch-conflict', `${path} overwrote ${written} written by ${writer}`);
        ctx.log().debug({ step: step.name, path, earlier: writer, earlierPath: written }, 'patch conflict');
      }
    }
  }
  for (const path of writes) writers.set(path, step.name);
}
