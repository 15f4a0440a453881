/**
 * What the steps of one `policy` chain entry share, its validate step and its mutate step: the placement of any
 * entry (match, options, attachment, shadow) and the head of their `/chain` description.
 */
import type { Phase } from '../admission/types.js';
import { resolveStepOptions } from '../config/step-options.js';
import type { PolicyEntry } from '../config/types.js';
import { attachmentOf, describeAttachment } from '../extensions/chain-extensions.js';
import { compileMatch } from '../steps/match.js';
import type { Step, StepStatus } from '../steps/step.js';

/** A policy step's fields besides what it does (`invoke`, `needsObject`, `declarations`) and its description. */
export interface PolicyStepBase {
  readonly fields: Omit<Step, 'invoke' | 'describe' | 'needsObject' | 'declarations'>;
  /** The step for `/chain`, with what only its phase has (`validations`, `mutations`, …). */
  describe(own: StepStatus): StepStatus;
}

export function policyStepBase(entry: PolicyEntry, phase: Phase): PolicyStepBase {
  const { timeoutSeconds, ...options } = resolveStepOptions(entry);
  const matchSpec = entry.match!;
  const attachment = attachmentOf(entry);
  // Only a mutate step is ever called again; a validate step's option is not read (validate.ts refuses it).
  const reinvocationPolicy = phase === 'mutate' ? options.reinvocationPolicy : 'Never';
  const { matchConditions } = entry.spec;
  return {
    fields: {
      name: entry.name,
      source: 'policy',
      phase,
      match: compileMatch(matchSpec),
      matchSpec,
      failurePolicy: options.failurePolicy,
      timeoutMs: timeoutSeconds * 1000,
      mode: options.mode,
      sideEffects: 'None',
      reinvocationPolicy,
      order: entry.order,
      ...attachment,
      ...(entry.shadow ? { shadow: true } : {}),
    },
    describe: (own) => ({
      name: entry.name,
      source: 'policy',
      policy: entry.policy,
      phase,
      order: entry.order,
      mode: options.mode,
      failurePolicy: options.failurePolicy,
      timeoutSeconds,
      sideEffects: 'None',
      reinvocationPolicy,
      match: matchSpec,
      ...(matchConditions.length > 0
        ? { matchConditions: matchConditions.map((c) => ({ name: c.name, expression: c.program.expression })) }
        : {}),
      ...own,
      ...describeAttachment(attachment),
      ...(entry.shadow ? { shadow: true } : {}),
    }),
  };
}
