/**
 * `kube.policyParams`: what the watches of `fromCluster` params may hold (docs/decisions.md, "Params from the cluster:
 * bounded watches"). Per paramRef at most as many objects as a binding reads of one (256), and the bytes of a few
 * of the largest objects the apiserver stores; all paramRefs together a share of the memory the Deployment's
 * limit leaves beside the reviews.
 */
import type { Reader } from './reader.js';
import type { PolicyParamsConfig } from './types.js';

const MiB = 1024 * 1024;

export const DEFAULT_POLICY_PARAMS: PolicyParamsConfig = {
  maxObjects: 256,
  maxBytes: 4 * MiB,
  maxTotalObjects: 2048,
  maxTotalBytes: 8 * MiB,
};

export function readPolicyParams(r: Reader, value: unknown): PolicyParamsConfig {
  const p = 'kube.policyParams';
  const m = r.map(value, p, ['maxObjects', 'maxBytes', 'maxTotalObjects', 'maxTotalBytes']);
  const d = DEFAULT_POLICY_PARAMS;
  const maxObjects = r.integer(m.maxObjects, `${p}.maxObjects`, 1, d.maxObjects) ?? d.maxObjects;
  const maxBytes = r.integer(m.maxBytes, `${p}.maxBytes`, 1024, 1024 * MiB) ?? d.maxBytes;
  const maxTotalObjects = r.integer(m.maxTotalObjects, `${p}.maxTotalObjects`, 1, 1_000_000) ?? d.maxTotalObjects;
  const maxTotalBytes = r.integer(m.maxTotalBytes, `${p}.maxTotalBytes`, 1024, 1024 * MiB) ?? d.maxTotalBytes;
  if (maxTotalObjects < maxObjects)
    r.fail(`${p}.maxTotalObjects`, `must be at least maxObjects (${maxObjects})`, maxTotalObjects);
  if (maxTotalBytes < maxBytes) r.fail(`${p}.maxTotalBytes`, `must be at least maxBytes (${maxBytes})`, maxTotalBytes);
  return { maxObjects, maxBytes, maxTotalObjects, maxTotalBytes };
}
