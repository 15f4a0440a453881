/**
 * The steps of an `admissionPolicies` chain entry: its files read, their objects checked and compiled, and one
 * step per binding whose policy the files define — a validate step for a ValidatingAdmissionPolicy's, a mutate
 * step for a MutatingAdmissionPolicy's — in policy then binding name order (the apiserver skips a binding
 * without its policy, and so does the gateway).
 */
import type { KubeObject } from '../admission/types.js';
import { resolveStepOptions } from '../config/step-options.js';
import type { NativePoliciesEntry } from '../config/types.js';
import type { Step } from '../steps/step.js';
import { createNativeMutateStep } from './native-mutate-step.js';
import type { NativePolicySet } from './native-objects.js';
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

/** Where an entry's steps sit and how long they may take. */
function placementOf(entry: NativePoliciesEntry): NativeStepPlacement {
  return {
    entry: entry.name,
    order: entry.order,
    timeoutMs: resolveStepOptions(entry).timeoutSeconds * 1000,
    ...(entry.shadow ? { shadow: true as const } : {}),
  };
}

/** The steps of the policy set `set` at the entry's place: one per binding whose policy the set holds. */
export function nativeStepsOf(entry: NativePoliciesEntry, set: NativePolicySet): Step[] {
  const placement = placementOf(entry);
  return [
    ...bound(set.mutatingPolicies, set.mutatingBindings).map(([policy, binding]) =>
      createNativeMutateStep(policy, binding, set.objects, placement),
    ),
    ...bound(set.policies, set.bindings).map(([policy, binding]) =>
      createNativeStep(policy, binding, set.objects, placement),
    ),
  ];
}

/** The objects of the entry's files, read and compiled (ConfigError for any mistake, naming file, line and field). */
export function readEntryFiles(entry: NativePoliciesEntry, configFile: string): NativePolicySet {
  return readPolicySet(readPolicyDocuments(entry.files, `${entry.path}.files`, configFile));
}

/** Reads the entry's files and builds its steps (the cluster's policies join them in cluster mode: server/kube/). */
export function buildNativeSteps(entry: NativePoliciesEntry, configFile: string): Step[] {
  return nativeStepsOf(entry, readEntryFiles(entry, configFile));
}

/** Those of `theirs` whose name none of `ours` has, after `ours`. */
function unionByName<T extends { readonly name: string }>(ours: readonly T[], theirs: readonly T[]): T[] {
  const names = new Set(ours.map((o) => o.name));
  return [...ours, ...theirs.filter((o) => !names.has(o.name))];
}

/** A params candidate's identity: its apiVersion, kind, namespace and name. */
export function objectKey(o: KubeObject): string {
  return `${String(o.apiVersion)} ${String(o.kind)} ${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

/**
 * The files' set and the cluster's together: a policy, binding or params object both define (same kind and name)
 * is the file's — the file is what this gateway's operator wrote for it, the cluster's copy is left out.
 */
export function mergePolicySets(files: NativePolicySet, cluster: NativePolicySet): NativePolicySet {
  const fileObjects = new Set(files.objects.map(objectKey));
  return {
    policies: unionByName(files.policies, cluster.policies),
    bindings: unionByName(files.bindings, cluster.bindings),
    mutatingPolicies: unionByName(files.mutatingPolicies, cluster.mutatingPolicies),
    mutatingBindings: unionByName(files.mutatingBindings, cluster.mutatingBindings),
    objects: [...files.objects, ...cluster.objects.filter((o) => !fileObjects.has(objectKey(o)))],
  };
}
