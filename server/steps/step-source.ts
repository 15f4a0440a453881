/**
 * Where the chain's changing steps come from: a remote provider's runtime (providers/) implements this, so
 * the chain manager rebuilds the chain from sources it knows only by this interface.
 */
import type { Step } from './step.js';
import type { AuthorizeStep } from '../authorization/authorize-step.js';

export interface StepSource {
  readonly name: string;
  /** Its steps as they are now; it says when they change (ChainManagerDeps.createRuntime's `onChange`). */
  steps(): readonly Step[];
  /** Its steps in the authorize chain (POST /authorize), if it has any. */
  authorizeSteps?(): readonly AuthorizeStep[];
  /** Looks its steps up again where it can (discovery); resolves after this attempt, success or not. */
  discover(): Promise<void>;
  close(): Promise<void>;
}
