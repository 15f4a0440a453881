/**
 * The validate step of a `policy` chain entry (README "Policies in CEL"): its placement like any entry's, its
 * decision from server/policy/.
 */
import { StepFailedError } from '../base/errors.js';
import type { PolicyEntry } from '../config/types.js';
import { keepPolicyRun } from '../policy/policy-runs.js';
import { evaluatePolicy } from '../policy/run-policy.js';
import { describePlacement, placeEntry, placedFields } from '../steps/placement.js';
import type { Step } from '../steps/step.js';

/** The validate step of a `policy` chain entry. */
export function createPolicyStep(entry: PolicyEntry): Step {
  const placement = placeEntry(entry, { match: entry.match! });
  const { spec } = entry;
  return {
    ...placedFields(placement, 'validate'),
    source: 'policy',
    phase: 'validate',
    needsObject: false,
    invoke(inv) {
      const run = evaluatePolicy(spec, inv);
      // For the decision trace, read only if someone reads it (explain-policy.ts).
      keepPolicyRun(inv.request, entry.name, run);
      if (run.outcome instanceof StepFailedError) throw run.outcome;
      return run.outcome;
    },
    describe: () => ({
      name: entry.name,
      source: 'policy',
      policy: entry.policy,
      phase: 'validate',
      order: entry.order,
      ...describePlacement(placement, 'validate'),
      validations: spec.validations.length,
      ...(spec.auditAnnotations.length > 0 ? { auditAnnotations: spec.auditAnnotations.map((a) => a.key) } : {}),
    }),
  };
}
