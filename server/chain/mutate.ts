/**
 * The mutate phase: matching steps run in chain order on one working copy, each seeing the previous steps'
 * result (apiserver mutating/dispatcher.go) — steps that declare what they write and read may run side by
 * side (step-graph.ts). The review carries one patch,
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
import { WriteHistory } from '../patch/write-history.js';
import { WrittenPaths, type ContainerPlace } from '../patch/written-paths.js';
import { invokeStep, type StepResult } from './invoke-step.js';
import { elapsedMs, settleRefusal, timeLeft, yieldIfLarge, type ReviewContext } from './review-context.js';
import type { PatchConflict } from './review-observer.js';
import type { StepPlan } from './step-graph.js';
import type { Step } from './step.js';
import { firstWriteOutside, mergePatch, creationsOnTheWay, readsIn, writesOnMerge } from './write-set.js';
import { HeldNotes } from './held-notes.js';
import { stampExtensionsApplied } from './extensions-applied.js';
import { isPatchable, skipReason } from './skip.js';

/** A declared step's call, finished: the copy it worked on and how it ended. */
interface Finished {
  readonly step: Step;
  readonly copy: WorkingCopy<KubeObject>;
  readonly session: TrackedSession<KubeObject>;
  readonly started: number;
  readonly ms: number;
  readonly outcome: StepResult;
}

/**
 * The phase's decision: the first denial that ends it, or allowed with the review's one patch. The plan's
 * levels run in order; an undeclared step alone in its level edits the working copy itself, as webhooks run;
 * declared steps each work on a copy of the object as their level began, and their changes are merged in
 * chain order (step-graph.ts).
 */
export async function runMutatePhase(plan: StepPlan, ctx: ReviewContext): Promise<Decision> {
  const { request } = ctx;
  const patchable = isPatchable(request);
  let working: WorkingCopy<KubeObject> | undefined;
  /** Which step wrote which JSON pointers: conflicts, and what the final diff compares. */
  const written = new WrittenPaths();
  let changes = 0;
  const seenChanges = new Map<Step, number>();
  /**
   * Declared IfNeeded steps that ran, with what they read as the object is now (write-set.ts readsIn); empty
   * until one has run, so that no step's changes need to be looked at before.
   */
  const watched: Array<{ readonly step: Step; reads: string }> = [];
  /** Declared IfNeeded steps a later step changed something of that they read. */
  const stale = new Set<Step>();
  const invoked: Step[] = [];
  /** A traced review's writes, for each step's own patch in its decision trace (write-history.ts). */
  const history = ctx.observer.details ? new WriteHistory() : undefined;

  /** After `by` changed the working copy: the watched steps that now read something else are stale. */
  const changedBy = (by: Step) => {
    for (const entry of watched) {
      if (entry.step === by || stale.has(entry.step)) continue;
      if (readsIn(working!.root, entry.step.declarations!.reads) !== entry.reads) stale.add(entry.step);
    }
  };
  /** Starts (or renews) watching what `step` reads, when it is a declared IfNeeded step. */
  const watch = (step: Step) => {
    const reads = step.declarations?.reads;
    if (!reads || step.reinvocationPolicy !== 'IfNeeded' || !working) return;
    const entry = watched.find((e) => e.step === step);
    if (entry) entry.reads = readsIn(working.root, reads);
    else watched.push({ step, reads: readsIn(working.root, reads) });
  };

  /** Gives the reports their levels once the phase is over, when some level ran several steps. */
  const leveled = <T>(result: T): T => {
    if (plan.concurrent) ctx.observer.leveled(levelNames(plan));
    return result;
  };

  /** What an undeclared step's result does to the review: the denial that ends it, or undefined. */
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
    // Every session, even one that wrote nothing or is rolled back: the copies the working copy made in its
    // place while it ran are how earlier steps' values are found again (write-history.ts).
    const entry = session && history?.add(session);

    if (outcome instanceof StepFailedError || !outcome.allowed) {
      session?.rollback();
      watch(step);
      seenChanges.set(step, changes);
      return settleRefusal(ctx, step, ms, outcome, round);
    }
    const wrote = session !== undefined && session.writeCount > 0;
    if (wrote) {
      changes++;
      recordWrites(ctx, step, written, (record) => session.forEachWrite((place, key) => record.recordAt(place, key)));
      if (watched.length > 0) changedBy(step);
    }
    watch(step);
    seenChanges.set(step, changes);
    ctx.observer.approved(step, ms, wrote, round, outcome.patch, wrote ? entry : undefined);
    return undefined;
  };

  /** Runs one undeclared step on the working copy; synchronous when the step answers synchronously. */
  const runStep = (step: Step, round: number): Denial | undefined | Promise<Denial | undefined> => {
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

  /** Starts a declared step on its own copy of `base`; what it returns, once it has. */
  const startOnCopy = (step: Step, base: KubeObject, notes: HeldNotes): Finished | Promise<Finished> => {
    const copy = new WorkingCopy(base);
    const session = trackObject(copy, step.name);
    const started = ctx.now();
    const result = invokeStep(
      step,
      {
        request,
        object: session.view,
        plainObject: base,
        oldObject: request.oldObject,
        notes,
        logs: ctx.observer,
        now: ctx.now,
      },
      timeLeft(ctx, step),
    );
    // Closed as soon as it answers: a step that timed out cannot go on writing while the others run.
    const finish = (settled: StepResult): Finished => {
      let outcome = settled;
      if (!(outcome instanceof StepFailedError) && outcome.allowed && outcome.patch?.length) {
        outcome = applyReturnedPatch(session, outcome.patch, request.operation) ?? outcome;
      }
      const unusable = session.close();
      if (unusable && !(outcome instanceof StepFailedError)) outcome = new StepFailedError('error', unusable);
      return { step, copy, session, started, ms: elapsedMs(ctx, started), outcome };
    };
    return result instanceof Promise ? result.then(finish) : finish(result);
  };

  /**
   * Runs declared steps on copies of the object as it is now, all at once, then settles them in chain order:
   * each one's changes, kept to its supplies, are merged into the working copy.
   */
  const runOnCopies = async (steps: readonly Step[], round: number): Promise<Denial | undefined> => {
    working ??= new WorkingCopy(request.object!);
    const base = working.root;
    // Every step is started before any is awaited: that is what lets remote calls overlap. Their notes are held
    // and passed on in chain order, up to a denial: as many as the chain's order would have added.
    const notes = steps.map(() => new HeldNotes());
    const finished = await Promise.all(steps.map((step, i) => Promise.resolve(startOnCopy(step, base, notes[i]!))));
    // Every patch, and its check against the supplies, against the level's base first: merging one edits the
    // working copy in place, `base` included.
    const patches = finished.map((f) => ownPatch(f, base));
    const outside = finished.map((f, i) => firstWriteOutside(patches[i]!, base, f.step.declarations!.supplies));
    const created = finished.map((f) => creationsOnTheWay(f.session.writes, base, f.step.declarations!.supplies));
    for (let i = 0; i < finished.length; i++) {
      const { step, ms } = finished[i]!;
      notes[i]!.passTo(ctx.notes);
      let outcome = finished[i]!.outcome;
      const patch = patches[i]!;
      const supplies = step.declarations!.supplies;
      if (!(outcome instanceof StepFailedError) && outcome.allowed && patch.length > 0) {
        if (outside[i] !== undefined) {
          ctx.observer.wroteOutsideSupplies(step);
          outcome = new StepFailedError(
            'write_outside_supplies',
            `wrote ${outside[i]}, outside its supplies (${supplies.pointers.join(', ') || 'none'})`,
          );
        }
      }
      if (outcome instanceof StepFailedError || !outcome.allowed) {
        watch(step);
        seenChanges.set(step, changes);
        const denial = settleRefusal(ctx, step, ms, outcome, round);
        if (denial) return denial;
        continue;
      }
      // A step that wrote counts as a change even when its writes came to nothing, as on the working copy.
      const wrote = finished[i]!.session.writeCount > 0;
      let entry: number | undefined;
      if (wrote) {
        // Recorded as the step made them (conflicts are told as serially), not as the merge applies them.
        const own = writesOnMerge(
          finished[i]!.session.writes,
          created[i]!,
          working.root,
          finished[i]!.copy.root,
          supplies,
        );
        const merge = trackObject(working, step.name);
        const ways = mergePatch(patch, working.root, supplies, (op) => applyPatchInPlace(merge.view, [op]));
        merge.close();
        entry = history?.add(merge);
        changes++;
        recordWrites(ctx, step, written, (record) => [...ways, ...own].forEach((pointer) => record.record(pointer)));
        if (watched.length > 0) changedBy(step);
      }
      watch(step);
      seenChanges.set(step, changes);
      ctx.observer.approved(step, ms, wrote, round, outcome.patch, entry);
    }
    return undefined;
  };

  for (const level of plan.levels) {
    const runnable: Step[] = [];
    for (const step of level) {
      const skip =
        skipReason(step, ctx) ??
        (step.needsObject && !patchable ? `nothing to mutate on ${request.operation}` : undefined);
      if (skip) ctx.observer.skipped(step, skip);
      else runnable.push(step);
    }
    if (runnable.length === 0) continue;
    invoked.push(...runnable);
    await yieldIfLarge(ctx);
    let denial: Denial | undefined;
    if (patchable && runnable[0]!.declarations) {
      denial = await runOnCopies(runnable, 0);
    } else {
      // An undeclared step (alone in its level), or a request whose object cannot change: one after another.
      for (const step of runnable) {
        const ran = runStep(step, 0);
        denial = ran instanceof Promise ? await ran : ran;
        if (denial) break;
      }
    }
    if (denial) return leveled(denial);
  }
  // Reinvocation: once, in order, for IfNeeded steps whose view of the object is stale — for a declared step,
  // only when a later step changed something it reads.
  for (const step of invoked) {
    if (step.reinvocationPolicy !== 'IfNeeded') continue;
    if (step.declarations ? !stale.has(step) : (seenChanges.get(step) ?? 0) === changes) continue;
    let denial: Denial | undefined;
    if (patchable && step.declarations) denial = await runOnCopies([step], 1);
    else {
      const ran = runStep(step, 1);
      denial = ran instanceof Promise ? await ran : ran;
    }
    if (denial) return leveled(denial);
  }
  leveled(undefined);

  // What was applied is visible on the object: the gateway's own write, after every step.
  const stamped = stampExtensionsApplied(ctx, working, written, history);
  if (stamped) working = stamped;
  if (!working || (changes === 0 && !stamped)) return APPROVED;
  if (history) {
    history.finish(working.root);
    ctx.observer.writes = history;
  }
  await yieldIfLarge(ctx);
  // Only what some step wrote can differ: diff those subtrees, not the whole object.
  const patch = diffWritten(request.object!, working.root, written);
  return patch.length > 0 ? { allowed: true, patch } : APPROVED;
}

/** Step name → level, for the reports. */
function levelNames(plan: StepPlan): Map<string, number> {
  const names = new Map<string, number>();
  plan.levels.forEach((level, i) => {
    for (const step of level) names.set(step.name, i);
  });
  return names;
}

/**
 * A declared step's changes as a patch against `base`, with values of their own: merged into the working
 * copy, they must not share containers with the step's copy (which shares what it never read with `base`).
 */
function ownPatch(finished: Finished, base: KubeObject): JsonPatchOperation[] {
  const { outcome, session, copy, step } = finished;
  if (outcome instanceof StepFailedError || !outcome.allowed || session.writeCount === 0) return [];
  const paths = new WrittenPaths();
  session.forEachWrite((place, key) => paths.recordAt(place, key, step.name, ignoreOverwrite));
  return diffWritten(base, copy.root, paths).map((op) =>
    'value' in op && typeof op.value === 'object' && op.value !== null
      ? { ...op, value: structuredClone(op.value) }
      : op,
  );
}

const ignoreOverwrite = (): void => undefined;

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
  written: WrittenPaths,
  visit: (record: { record(pointer: string): void; recordAt(place: ContainerPlace, key: string): void }) => void,
): void {
  let conflicts = 0;
  let first: PatchConflict | undefined;
  const onOverwrite = (path: string, earlierPath: string, earlier: string) => {
    conflicts++;
    first ??= { path, earlier, earlierPath };
  };
  visit({
    record: (pointer) => written.record(pointer, step.name, onOverwrite),
    recordAt: (place, key) => written.recordAt(place, key, step.name, onOverwrite),
  });
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
