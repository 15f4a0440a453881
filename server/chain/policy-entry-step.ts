/**
 * The validate step of a `policy` chain entry (README "Policies in CEL"): its placement like any entry's, its
 * decision from server/policy/.
 */
import { StepFailedError } from '../base/errors.js';
import { resolveStepOptions } from '../config/step-options.js';
import type { PolicyEntry } from '../config/types.js';
import { keepPolicyRun } from '../policy/policy-runs.js';
import { evaluatePolicy } from '../policy/run-policy.js';
import { attachmentOf, describeAttachment } from '../extensions/chain-extensions.js';
import { compileMatch } from '../steps/match.js';
import type { Step } from '../steps/step.js';

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
