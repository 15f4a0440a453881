/**
 * The steps of an `admissionPolicies` chain entry: its files read, their objects checked and compiled, and one
 * validate step per binding whose policy the files define, in policy then binding name order (the apiserver
 * skips a binding without its policy, and so does the gateway).
 */
import { resolveStepOptions } from '../config/step-options.js';
import type { NativePoliciesEntry } from '../config/types.js';
import type { Step } from '../steps/step.js';
import { createNativeStep } from './native-step.js';
import { readPolicyDocuments } from './policy-files.js';
import { readPolicySet } from './read-objects.js';

/** Reads the entry's files (ConfigError for any mistake, naming file, line and field) and builds its steps. */
export function buildNativeSteps(entry: NativePoliciesEntry, configFile: string): Step[] {
  const set = readPolicySet(readPolicyDocuments(entry.files, `${entry.path}.files`, configFile));
  const policies = new Map(set.policies.map((policy) => [policy.name, policy]));
  const placement = {
    entry: entry.name,
    order: entry.order,
    timeoutMs: resolveStepOptions(entry).timeoutSeconds * 1000,
    ...(entry.shadow ? { shadow: true as const } : {}),
  };
  return [...set.bindings]
    .sort((a, b) => (a.policyName === b.policyName ? (a.name < b.name ? -1 : 1) : a.policyName < b.policyName ? -1 : 1))
    .flatMap((binding) => {
      const policy = policies.get(binding.policyName);
      return policy ? [createNativeStep(policy, binding, set.objects, placement)] : [];
    });
}
