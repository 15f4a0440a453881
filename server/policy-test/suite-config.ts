/**
 * The config a test file runs against: its `config`, with the native admission policies the file names under
 * `policies` as one `admissionPolicies` entry after the config's own entries (docs/policy-tests.md), so a team
 * tests its ValidatingAdmissionPolicy files where they keep them, without a gateway.yaml entry for them.
 */
import type { ChainEntry, GatewayConfig, NativePoliciesEntry } from '../config/types.js';
import type { TestSuite } from './suite.js';

/** The name of the entry a test file's `policies` become: its steps are `policies/<policy>/<binding>`. */
export const TEST_POLICIES_ENTRY = 'policies';

/** The place after every entry of `chain` (entries are 10, 20, 30, …). */
const after = (chain: readonly ChainEntry[]): number => Math.max(0, ...chain.map((e) => e.order)) + 10;

export function suiteConfig(config: GatewayConfig, suite: Pick<TestSuite, 'policies'>): GatewayConfig {
  if (suite.policies.length === 0) return config;
  const entry: NativePoliciesEntry = {
    kind: 'admissionPolicies',
    admissionPolicies: TEST_POLICIES_ENTRY,
    name: TEST_POLICIES_ENTRY,
    order: after(config.chain),
    path: 'policies',
    files: suite.policies,
    fromCluster: false,
  };
  return { ...config, chain: [...config.chain, entry] };
}
