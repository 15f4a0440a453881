/**
 * The config a test file runs against: its `config`, with the native admission policies the file names under
 * `policies` as one `admissionPolicies` entry after the config's own entries (docs/policy-tests.md), so a team
 * tests its ValidatingAdmissionPolicy files where they keep them, without a gateway.yaml entry for them.
 */
import path from 'node:path';
import { readNativePoliciesEntry } from '../config/native-policies-entry.js';
import { Reader } from '../config/reader.js';
import type { ChainEntry, GatewayConfig } from '../config/types.js';
import type { TestSuite } from './suite.js';

/** The name of the entry a test file's `policies` become: its steps are `policies/<policy>/<binding>`. */
export const TEST_POLICIES_ENTRY = 'policies';

/** The place after every entry of `chain` (entries are 10, 20, 30, …). */
const after = (chain: readonly ChainEntry[]): number => Math.max(0, ...chain.map((e) => e.order)) + 10;

export function suiteConfig(config: GatewayConfig, suite: Pick<TestSuite, 'file' | 'policies'>): GatewayConfig {
  if (suite.policies.length === 0) return config;
  // Read as gateway.yaml's entry is, so the same checks and the same shape: the paths are absolute already.
  const entry = readNativePoliciesEntry(
    new Reader(suite.file),
    { admissionPolicies: TEST_POLICIES_ENTRY, files: suite.policies },
    'policies',
    after(config.chain),
    path.dirname(suite.file),
  );
  return { ...config, chain: [...config.chain, entry] };
}
