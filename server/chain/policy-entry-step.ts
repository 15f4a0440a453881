/**
 * The steps of a `policy` chain entry (README "Policies in CEL"): its validate step, with its placement like any
 * entry's and its decision from server/policy/, and the mutate step of its `mutations` (policy-mutate-step.ts).
 */
import { StepFailedError } from '../base/errors.js';
import type { PolicyEntry } from '../config/types.js';
import { keepPolicyRun } from '../policy/policy-runs.js';
import { evaluatePolicy } from '../policy/run-policy.js';
import type { Step } from '../steps/step.js';
import { createPolicyMutateStep } from './policy-mutate-step.js';
import { policyStepBase } from './policy-step-base.js';

/** A policy entry's steps: a mutate step when it has mutations, a validate step when it validates or annotates. */
export function createPolicySteps(entry: PolicyEntry): Step[] {
  const { spec } = entry;
  return [
    ...((spec.mutations?.length ?? 0) > 0 ? [createPolicyMutateStep(entry)] : []),
    ...(spec.validations.length > 0 || spec.auditAnnotations.length > 0 ? [createPolicyStep(entry)] : []),
  ];
}

/** The validate step of a `policy` chain entry. */
export function createPolicyStep(entry: PolicyEntry): Step {
  const { spec } = entry;
  const base = policyStepBase(entry, 'validate');
  return {
    ...base.fields,
    needsObject: false,
    invoke(inv) {
      const run = evaluatePolicy(spec, inv);
      // For the decision trace, read only if someone reads it (explain-policy.ts).
      keepPolicyRun(inv.request, entry.name, run);
      if (run.outcome instanceof StepFailedError) throw run.outcome;
      return run.outcome;
    },
    describe: () =>
      base.describe({
        validations: spec.validations.length,
        ...(spec.auditAnnotations.length > 0 ? { auditAnnotations: spec.auditAnnotations.map((a) => a.key) } : {}),
      }),
  };
}
