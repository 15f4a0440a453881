/**
 * What the steps of one `policy` chain entry share, its validate step and its mutate step: the placement of any
 * entry (steps/placement.ts) and the head of their `/chain` description.
 */
import type { Phase } from '../admission/types.js';
import type { PolicyEntry } from '../config/types.js';
import { specReadsNamespaceObject } from '../policy/policy-spec.js';
import { describePlacement, placeEntry, placedFields } from '../steps/placement.js';
import type { Step, StepStatus } from '../steps/step.js';

/** A policy step's fields besides what it does (`invoke`, `needsObject`, `declarations`) and its description. */
export interface PolicyStepBase {
  readonly fields: Omit<Step, 'invoke' | 'describe' | 'needsObject' | 'declarations'>;
  /** The step for `/chain`, with what only its phase has (`validations`, `mutations`, …). */
  describe(own: StepStatus): StepStatus;
}

export function policyStepBase(entry: PolicyEntry, phase: Phase): PolicyStepBase {
  const placement = placeEntry(entry, { match: entry.match! });
  const { declarations: _placed, ...fields } = placedFields(placement, phase);
  return {
    fields: { ...fields, source: 'policy', phase, readsNamespaceObject: specReadsNamespaceObject(entry.spec) },
    describe: (own) => ({
      name: entry.name,
      source: 'policy',
      policy: entry.policy,
      phase,
      order: entry.order,
      ...describePlacement(placement, phase),
      ...own,
    }),
  };
}
