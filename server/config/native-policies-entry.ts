/**
 * An `admissionPolicies` chain entry (README "Native admission policies"): ValidatingAdmissionPolicies and
 * their bindings as the apiserver takes them, from YAML files or folders and (`fromCluster: true`, in cluster mode)
 * from the cluster. This reads the entry's own fields; the files are read and their policies compiled when the
 * chain is built (server/native-policy/), the cluster's as they are watched (server/kube/native-policy-watcher.ts).
 */
import path from 'node:path';
import { isDnsLabel } from './names.js';
import { childPath, type Reader } from './reader.js';
import { SHADOW_FIELDS, readShadow } from './shadow.js';
import { readStepOptions } from './step-options.js';
import type { NativePoliciesEntry } from './types.js';

export const NATIVE_POLICIES_FIELDS = ['admissionPolicies', 'files', 'fromCluster', 'timeoutSeconds', ...SHADOW_FIELDS];

/** Files or folders one entry may name. */
export const MAX_POLICY_PATHS = 64;

/** The entry at `p` (its keys not yet checked); relative paths resolve against `baseDir`. */
export function readNativePoliciesEntry(
  r: Reader,
  raw: Record<string, unknown>,
  p: string,
  order: number,
  baseDir: string,
): NativePoliciesEntry {
  const m = r.map(raw, p, NATIVE_POLICIES_FIELDS);
  const name = r.requiredString(m.admissionPolicies, childPath(p, 'admissionPolicies'));
  if (!isDnsLabel(name))
    r.fail(childPath(p, 'admissionPolicies'), 'expected a lower-case DNS-1123 label as the entry’s name', name);
  const files = r.stringList(m.files, childPath(p, 'files')) ?? [];
  const fromCluster = r.boolean(m.fromCluster, childPath(p, 'fromCluster')) ?? false;
  if (files.length === 0 && !fromCluster)
    r.fail(childPath(p, 'files'), 'expected the YAML files or folders that hold the policies (or fromCluster: true)');
  if (files.length > MAX_POLICY_PATHS)
    r.fail(childPath(p, 'files'), `expected at most ${MAX_POLICY_PATHS} items, got ${files.length}`);
  files.forEach((file, i) => {
    if (file === '') r.fail(childPath(childPath(p, 'files'), i), 'expected a file or folder');
  });
  const { timeoutSeconds } = readStepOptions(r, m, p);
  return {
    kind: 'admissionPolicies',
    admissionPolicies: name,
    name,
    order,
    path: p,
    files: files.map((file) => path.resolve(baseDir, file)),
    fromCluster,
    ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
    // Rehearsal: every binding runs as if bound with Deny, after the answer, never changing it.
    ...readShadow(r, m, p),
  };
}
