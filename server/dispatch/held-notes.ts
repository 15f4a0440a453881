/**
 * The notes of a step that runs beside others of its level, held until the level is settled in chain order:
 * warnings and audit annotations then reach the review in the chain's order, and a step the chain would not
 * have reached (after a denial earlier in its level) adds none. Holds no more than the review would keep of
 * one step, and counts the rest as dropped, so a step adding notes without end costs nothing more.
 */
import { MAX_STEP_NOTES, type ReviewNotes, type StepNotes } from './notes.js';

export class HeldNotes implements StepNotes {
  // Made when the first note comes: most steps add none, and each step of a phase that runs several at once holds
  // its notes.
  private warnings: Array<readonly [string, string, boolean]> | undefined;
  private annotations: Array<readonly [string, string, string, boolean]> | undefined;
  private over: Map<string, { warnings: number; annotations: number }> | undefined;

  stepWarn(step: string, text: string, asWritten = false): void {
    const warnings = (this.warnings ??= []);
    if (warnings.length < MAX_STEP_NOTES) warnings.push([step, text, asWritten]);
    else this.overOf(step).warnings++;
  }

  stepAnnotate(step: string, key: string, value: string, asWritten = false): void {
    const annotations = (this.annotations ??= []);
    if (annotations.length < MAX_STEP_NOTES) annotations.push([step, key, value, asWritten]);
    else this.overOf(step).annotations++;
  }

  /** Hands what was held to the review's notes, as if the step had added it there. */
  passTo(notes: ReviewNotes): void {
    for (const [step, text, asWritten] of this.warnings ?? []) notes.stepWarn(step, text, asWritten);
    for (const [step, key, value, asWritten] of this.annotations ?? []) {
      notes.stepAnnotate(step, key, value, asWritten);
    }
    this.over?.forEach((over, step) => notes.stepDropped(step, over.warnings, over.annotations));
  }

  private overOf(step: string): { warnings: number; annotations: number } {
    this.over ??= new Map();
    let over = this.over.get(step);
    if (!over) this.over.set(step, (over = { warnings: 0, annotations: 0 }));
    return over;
  }
}
