/**
 * The config as a test runs it: its providers' circuit breakers never open. A breaker counts failures across
 * reviews; in a test run those are earlier cases', and a case must be answered the same alone or after any
 * others. A provider answer that fails a call is settled by the step's failurePolicy, as in serve.
 */
import type { GatewayConfig } from '../config/types.js';

export function withIndependentCases(config: GatewayConfig): GatewayConfig {
  return {
    ...config,
    chain: config.chain.map((entry) =>
      entry.kind === 'provider'
        ? { ...entry, circuitBreaker: { ...entry.circuitBreaker, volumeThreshold: Number.MAX_SAFE_INTEGER } }
        : entry,
    ),
  };
}
