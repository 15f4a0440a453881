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
import type { PatchConflict } from '../trace/step-report.js';
import type { StepPlan } from '../steps/step-graph.js';
import type { StepNotes } from './notes.js';
import type { Step } from '../steps/step.js';
import type { MatchCondition } from '../config/match-conditions.js';
import { firstWriteOutside, mergePatch, creationsOnTheWay, readsIn, writesOnMerge } from '../steps/write-set.js';
import { HeldNotes } from './held-notes.js';
import { stampExtensionsApplied } from './extensions-applied.js';
import { isPatchable } from '../steps/skip-reasons.js';
import { checkConditions } from './match-conditions.js';
import { skipReason } from './skip.js';

/** A declared step's call, finished: the copy it worked on and how it ended. */
interface Finished {
  readonly step: Step;
  readonly copy: WorkingCopy<KubeObject>;
  readonly session: TrackedSession<KubeObject>;
  readonly ms: number;
  readonly outcome: StepResult;
}

/** An approved step's writes, on the working copy now: how to record them, and their number in the history. */
interface StepWrites {
  readonly record: (record: WriteRecorder) => void;
  readonly entry: number | undefined;
}

type WriteRecorder = { record(pointer: string): void; recordAt(place: ContainerPlace, key: string): void };

const isRefusal = (outcome: StepResult): outcome is Denial | StepFailedError =>
  outcome instanceof StepFailedError || !outcome.allowed;

/**
 * The phase's decision: the first denial that ends it, or allowed with the review's one patch. The plan's
 * levels run in order; an undeclared step alone in its level edits the working copy itself, as webhooks run;
 * declared steps each work on a copy of the object as their level began, and their changes are merged in
 * chain order (step-graph.ts).
 */
export function runMutatePhase(plan: StepPlan, ctx: ReviewContext): Promise<Decision> {
  return new MutatePhase(plan, ctx).run();
}

/**
 * One review's mutate phase. Every step call has one life, on the working copy or on a copy of its own: it is
 * invoked (`invoke`), its returned patch applied and its view closed (`closed`), and it is settled: a refusal
 * by its mode and failurePolicy (`refused`), an approval with its writes recorded and counted (`approved`).
 */
class MutatePhase {
  private readonly request: ReviewContext['request'];
  private readonly patchable: boolean;
  private working: WorkingCopy<KubeObject> | undefined;
  /** Which step wrote which JSON pointers: conflicts, and what the final diff compares. */
  private readonly written = new WrittenPaths();
  /** How many step calls changed the working copy so far. */
  private changes = 0;
  /** `changes` when each step last ran: an undeclared IfNeeded step is reinvoked when it grew since. */
  private readonly seenChanges = new Map<Step, number>();
  /**
   * Declared IfNeeded steps that ran, with what they read as the object is now (write-set.ts readsIn); empty
   * until one has run, so that no step's changes need to be looked at before.
   */
  private readonly watched: Array<{ readonly step: Step; reads: string }> = [];
  /** Declared IfNeeded steps a later step changed something of that they read. */
  private readonly stale = new Set<Step>();
  private readonly invoked: Step[] = [];
  /** A traced review's writes, for each step's own patch in its decision trace (write-history.ts). */
  private readonly history: WriteHistory | undefined;

  constructor(
    private readonly plan: StepPlan,
    private readonly ctx: ReviewContext,
  ) {
    this.request = ctx.request;
    this.patchable = isPatchable(ctx.request);
    this.history = ctx.observer.details ? new WriteHistory() : undefined;
  }

  async run(): Promise<Decision> {
    const { ctx, request, patchable } = this;
    for (const level of this.plan.levels) {
      const runnable: Step[] = [];
      for (const step of level) {
        const skip =
          skipReason(step, ctx) ??
          (step.needsObject && !patchable ? `nothing to mutate on ${request.operation}` : undefined) ??
          (step.matchConditions ? this.conditions(step.matchConditions) : undefined);
        if (typeof skip === 'string') ctx.observer.skipped(step, skip);
        else if (skip) {
          // Not invoked: settled as a failure, without the bookkeeping of a step that ran.
          const denial = settleRefusal(ctx, step, 0, skip, 0);
          if (denial) return this.leveled(denial);
        } else runnable.push(step);
      }
      if (runnable.length === 0) continue;
      this.invoked.push(...runnable);
      await yieldIfLarge(ctx);
      const ran = this.runLevel(runnable, 0);
      const denial = ran instanceof Promise ? await ran : ran;
      if (denial) return this.leveled(denial);
    }
    // Reinvocation: once, in order, for IfNeeded steps whose view of the object is stale — for a declared step,
    // only when a later step changed something it reads. Its matchConditions are asked again of the object as it
    // is now, as the apiserver asks a reinvoked webhook's.
    for (const step of this.invoked) {
      if (step.reinvocationPolicy !== 'IfNeeded') continue;
      if (step.declarations ? !this.stale.has(step) : (this.seenChanges.get(step) ?? 0) === this.changes) continue;
      const skip = step.matchConditions ? this.conditions(step.matchConditions) : undefined;
      if (typeof skip === 'string') {
        ctx.observer.skipped(step, `not reinvoked: ${skip}`, 1);
        continue;
      }
      if (skip) {
        const denial = settleRefusal(ctx, step, 0, skip, 1);
        if (denial) return this.leveled(denial);
        continue;
      }
      const ran = this.runLevel([step], 1);
      const denial = ran instanceof Promise ? await ran : ran;
      if (denial) return this.leveled(denial);
    }
    this.leveled(undefined);

    // What was applied is visible on the object: the gateway's own write, after every step.
    const stamped = stampExtensionsApplied(ctx, this.working, this.written, this.history);
    const working = stamped ?? this.working;
    if (!working || (this.changes === 0 && !stamped)) return APPROVED;
    await yieldIfLarge(ctx);
    // Only what some step wrote can differ: diff those subtrees, not the whole object.
    const patch = diffWritten(request.object!, working.root, this.written);
    if (this.history) {
      // A write the gateway stamped over a step's is not told as a conflict: its share is worked back then.
      const plain = !stamped && ctx.observer.conflicts === undefined;
      this.history.finish(working.root, plain ? { patch, written: this.written.tree } : undefined);
      ctx.observer.writes = this.history;
    }
    return patch.length > 0 ? { allowed: true, patch } : APPROVED;
  }

  /** Gives the reports their levels once the phase is over, when some level ran several steps. */
  private leveled<T>(result: T): T {
    if (this.plan.concurrent) this.ctx.observer.leveled(levelNames(this.plan));
    return result;
  }

  /**
   * Runs a level's steps: declared ones side by side on copies, an undeclared one (alone in its level) or those
   * of a request whose object cannot change one after another. Synchronous while the steps answer synchronously.
   */
  private runLevel(steps: readonly Step[], round: number): Denial | undefined | Promise<Denial | undefined> {
    return this.patchable && steps[0]!.declarations ? this.runOnCopies(steps, round) : this.runInTurn(steps, 0, round);
  }

  private runInTurn(
    steps: readonly Step[],
    from: number,
    round: number,
  ): Denial | undefined | Promise<Denial | undefined> {
    for (let i = from; i < steps.length; i++) {
      const ran = this.runStep(steps[i]!, round);
      if (ran instanceof Promise) return ran.then((denial) => denial ?? this.runInTurn(steps, i + 1, round));
      if (ran) return ran;
    }
    return undefined;
  }

  /** A step's matchConditions, on the object as the earlier steps left it. */
  private conditions(conditions: readonly MatchCondition[]): string | StepFailedError | undefined {
    const object = this.working?.root ?? this.request.object ?? undefined;
    return checkConditions(conditions, this.request, object, this.changes);
  }

  /** Calls `step` on `object` (a tracked view, or none), with its share of the deadline. */
  private invoke(
    step: Step,
    object: KubeObject | undefined,
    plainObject: KubeObject | undefined,
    notes: StepNotes,
  ): StepResult | Promise<StepResult> {
    const { ctx, request } = this;
    // One object literal of one shape: this runs for every step of every review.
    const input = {
      request,
      object,
      plainObject,
      oldObject: request.oldObject,
      notes,
      logs: ctx.observer,
      now: ctx.now,
    };
    return invokeStep(step, input, timeLeft(ctx, step));
  }

  /** How a call ended once the patch it returned is applied to its view and the view is closed. */
  private closed(session: TrackedSession<KubeObject> | undefined, result: StepResult): StepResult {
    let outcome = result;
    if (!isRefusal(outcome) && outcome.patch?.length) {
      outcome = applyReturnedPatch(session, outcome.patch, this.request.operation) ?? outcome;
    }
    const unusable = session?.close();
    return unusable && !(outcome instanceof StepFailedError) ? new StepFailedError('error', unusable) : outcome;
  }

  /** A refusal (a denial or a failure) settled by the step's mode and failurePolicy: the denial that ends the phase. */
  private refused(step: Step, round: number, ms: number, refusal: Denial | StepFailedError): Denial | undefined {
    this.ran(step);
    return settleRefusal(this.ctx, step, ms, refusal, round);
  }

  /** An approval: its writes, on the working copy now, recorded (conflicts) and counted as a change. */
  private approved(step: Step, round: number, ms: number, decision: Decision, writes: StepWrites | undefined): void {
    if (writes) {
      this.changes++;
      recordWrites(this.ctx, step, this.written, writes.record);
      if (this.watched.length > 0) this.changedBy(step);
    }
    this.ran(step);
    this.ctx.observer.approved(step, ms, writes !== undefined, round, decision.patch, writes?.entry);
  }

  /** `step` ran and has seen the working copy as it is now. */
  private ran(step: Step): void {
    this.watch(step);
    this.seenChanges.set(step, this.changes);
  }

  /** After `by` changed the working copy: the watched steps that now read something else are stale. */
  private changedBy(by: Step): void {
    for (const entry of this.watched) {
      if (entry.step === by || this.stale.has(entry.step)) continue;
      if (readsIn(this.working!.root, entry.step.declarations!.reads) !== entry.reads) this.stale.add(entry.step);
    }
  }

  /** Starts (or renews) watching what `step` reads, when it is a declared IfNeeded step. */
  private watch(step: Step): void {
    const reads = step.declarations?.reads;
    const { working } = this;
    if (!reads || step.reinvocationPolicy !== 'IfNeeded' || !working) return;
    const entry = this.watched.find((e) => e.step === step);
    if (entry) entry.reads = readsIn(working.root, reads);
    else this.watched.push({ step, reads: readsIn(working.root, reads) });
  }

  /** Runs one undeclared step on the working copy; synchronous when the step answers synchronously. */
  private runStep(step: Step, round: number): Denial | undefined | Promise<Denial | undefined> {
    const { request } = this;
    if (this.patchable) this.working ??= new WorkingCopy(request.object!);
    const { working } = this;
    const session = working ? trackObject(working, step.name) : undefined;
    const started = this.ctx.now();
    const result = this.invoke(step, session?.view, working?.root ?? request.object ?? undefined, this.ctx.notes);
    return result instanceof Promise
      ? result.then((settled) => this.finishOnWorkingCopy(step, round, session, started, settled))
      : this.finishOnWorkingCopy(step, round, session, started, result);
  }

  /** What an undeclared step's result does to the review: the denial that ends it, or undefined. */
  private finishOnWorkingCopy(
    step: Step,
    round: number,
    session: TrackedSession<KubeObject> | undefined,
    started: number,
    result: StepResult,
  ): Denial | undefined {
    const outcome = this.closed(session, result);
    const ms = elapsedMs(this.ctx, started);
    // Every session, even one that wrote nothing or is rolled back: the copies the working copy made in its
    // place while it ran are how earlier steps' values are found again (write-history.ts).
    const entry = session && this.history?.add(session);
    if (isRefusal(outcome)) {
      session?.rollback();
      return this.refused(step, round, ms, outcome);
    }
    const writes: StepWrites | undefined =
      session !== undefined && session.writeCount > 0
        ? { record: (recorder) => session.forEachWrite((place, key) => recorder.recordAt(place, key)), entry }
        : undefined;
    this.approved(step, round, ms, outcome, writes);
    return undefined;
  }

  /** Starts a declared step on its own copy of `base`; what it returns, once it has. */
  private startOnCopy(step: Step, base: KubeObject, notes: HeldNotes): Finished | Promise<Finished> {
    const copy = new WorkingCopy(base);
    const session = trackObject(copy, step.name);
    const started = this.ctx.now();
    const result = this.invoke(step, session.view, base, notes);
    // Closed as soon as it answers: a step that timed out cannot go on writing while the others run.
    const finish = (settled: StepResult): Finished => {
      const outcome = this.closed(session, settled);
      return { step, copy, session, ms: elapsedMs(this.ctx, started), outcome };
    };
    return result instanceof Promise ? result.then(finish) : finish(result);
  }

  /**
   * Runs declared steps on copies of the object as it is now, all at once, then settles them in chain order:
   * each one's changes, kept to its supplies, are merged into the working copy.
   */
  private async runOnCopies(steps: readonly Step[], round: number): Promise<Denial | undefined> {
    const { ctx } = this;
    const working = (this.working ??= new WorkingCopy(this.request.object!));
    const base = working.root;
    // Every step is started before any is awaited: that is what lets remote calls overlap. Their notes are held
    // and passed on in chain order, up to a denial: as many as the chain's order would have added.
    const notes = steps.map(() => new HeldNotes());
    const finished = await Promise.all(
      steps.map((step, i) => Promise.resolve(this.startOnCopy(step, base, notes[i]!))),
    );
    // Every patch, and its check against the supplies, against the level's base first: merging one edits the
    // working copy in place, `base` included.
    const patches = finished.map((f) => ownPatch(f, base));
    const outside = finished.map((f, i) => firstWriteOutside(patches[i]!, base, f.step.declarations!.supplies));
    const created = finished.map((f) => creationsOnTheWay(f.session.writes, base, f.step.declarations!.supplies));
    for (let i = 0; i < finished.length; i++) {
      const { step, ms, session, copy } = finished[i]!;
      notes[i]!.passTo(ctx.notes);
      let outcome = finished[i]!.outcome;
      const patch = patches[i]!;
      const supplies = step.declarations!.supplies;
      if (!isRefusal(outcome) && patch.length > 0 && outside[i] !== undefined) {
        ctx.observer.wroteOutsideSupplies(step);
        outcome = new StepFailedError(
          'write_outside_supplies',
          `wrote ${outside[i]}, outside its supplies (${supplies.pointers.join(', ') || 'none'})`,
        );
      }
      if (isRefusal(outcome)) {
        const denial = this.refused(step, round, ms, outcome);
        if (denial) return denial;
        continue;
      }
      // A step that wrote counts as a change even when its writes came to nothing, as on the working copy.
      let writes: StepWrites | undefined;
      if (session.writeCount > 0) {
        // Recorded as the step made them (conflicts are told as serially), not as the merge applies them.
        const own = writesOnMerge(session.writes, created[i]!, working.root, copy.root, supplies);
        const merge = trackObject(working, step.name);
        const ways = mergePatch(patch, working.root, supplies, (op) => applyPatchInPlace(merge.view, [op]));
        merge.close();
        const entry = this.history?.add(merge);
        writes = { record: (recorder) => [...ways, ...own].forEach((pointer) => recorder.record(pointer)), entry };
      }
      this.approved(step, round, ms, outcome, writes);
    }
    return undefined;
  }
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
  visit: (record: WriteRecorder) => void,
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
