/**
 * The steps of a `policy` chain entry (README "Policies in CEL"): its validate step, with its placement like any
 * entry's and its decision from server/policy/, and the mutate step of its `mutations` (policy-mutate-step.ts).
 */
import { StepFailedError } from '../base/errors.js';
import { resolveStepOptions } from '../config/step-options.js';
import type { PolicyEntry } from '../config/types.js';
import { runPolicy } from '../policy/run-policy.js';
import { attachmentOf, describeAttachment } from '../extensions/chain-extensions.js';
import { compileMatch } from '../steps/match.js';
import type { Step } from '../steps/step.js';
import { createPolicyMutateStep } from './policy-mutate-step.js';

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
  const { timeoutSeconds, ...options } = resolveStepOptions(entry);
  const matchSpec = entry.match!;
  const { spec } = entry;
  const attachment = attachmentOf(entry);
  return {
    name: entry.name,
    source: 'policy',
    phase: 'validate',
    match: compileMatch(matchSpec),
    matchSpec,
    failurePolicy: options.failurePolicy,
    timeoutMs: timeoutSeconds * 1000,
    mode: options.mode,
    sideEffects: 'None',
    reinvocationPolicy: 'Never',
    order: entry.order,
    ...attachment,
    needsObject: false,
    ...(entry.shadow ? { shadow: true } : {}),
    invoke(inv) {
      const outcome = runPolicy(spec, inv);
      if (outcome instanceof StepFailedError) throw outcome;
      return outcome;
    },
    describe: () => ({
      name: entry.name,
      source: 'policy',
      policy: entry.policy,
      phase: 'validate',
      order: entry.order,
      mode: options.mode,
      failurePolicy: options.failurePolicy,
      timeoutSeconds,
      sideEffects: 'None',
      reinvocationPolicy: 'Never',
      match: matchSpec,
      ...(spec.matchConditions.length > 0
        ? { matchConditions: spec.matchConditions.map((c) => ({ name: c.name, expression: c.program.expression })) }
        : {}),
      validations: spec.validations.length,
      ...(spec.auditAnnotations.length > 0 ? { auditAnnotations: spec.auditAnnotations.map((a) => a.key) } : {}),
      ...describeAttachment(attachment),
      ...(entry.shadow ? { shadow: true } : {}),
    }),
  };
}
