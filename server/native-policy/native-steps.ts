/**
 * The steps of an `admissionPolicies` chain entry: its files read, their objects checked and compiled, and one
 * step per binding whose policy the files define — a validate step for a ValidatingAdmissionPolicy's, a mutate
 * step for a MutatingAdmissionPolicy's — in policy then binding name order (the apiserver skips a binding
 * without its policy, and so does the gateway).
 */
import { resolveStepOptions } from '../config/step-options.js';
import type { NativePoliciesEntry } from '../config/types.js';
import type { Step } from '../steps/step.js';
import { createNativeMutateStep } from './native-mutate-step.js';
import type { NativeStepPlacement } from './binding-step.js';
import { createNativeStep } from './native-step.js';
import { readPolicyDocuments } from './policy-files.js';
import { readPolicySet } from './read-objects.js';

/** `bindings` in policy then binding name order, each with its policy; those without one left out. */
function bound<P extends { readonly name: string }, B extends { readonly name: string; readonly policyName: string }>(
  policies: readonly P[],
  bindings: readonly B[],
): [P, B][] {
  const byName = new Map(policies.map((policy) => [policy.name, policy]));
  return [...bindings]
    .sort((a, b) => (a.policyName === b.policyName ? (a.name < b.name ? -1 : 1) : a.policyName < b.policyName ? -1 : 1))
    .flatMap((binding) => {
      const policy = byName.get(binding.policyName);
      return policy ? [[policy, binding] as [P, B]] : [];
    });
}

/** Reads the entry's files (ConfigError for any mistake, naming file, line and field) and builds its steps. */
export function buildNativeSteps(entry: NativePoliciesEntry, configFile: string): Step[] {
  const set = readPolicySet(readPolicyDocuments(entry.files, `${entry.path}.files`, configFile));
  const placement: NativeStepPlacement = {
    entry: entry.name,
    order: entry.order,
    timeoutMs: resolveStepOptions(entry).timeoutSeconds * 1000,
    ...(entry.shadow ? { shadow: true as const } : {}),
  };
  return [
    ...bound(set.mutatingPolicies, set.mutatingBindings).map(([policy, binding]) =>
      createNativeMutateStep(policy, binding, set.objects, placement),
    ),
    ...bound(set.policies, set.bindings).map(([policy, binding]) =>
      createNativeStep(policy, binding, set.objects, placement),
    ),
  ];
}
