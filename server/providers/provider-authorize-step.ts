/** Adapts a remote provider with the `authorize` phase to the authorize chain's step, through its breaker. */
import type { AuthorizeStep } from '../authorization/authorize-step.js';
import { compileAuthorizeMatch, type AuthorizeMatch } from '../authorization/authorize-match.js';
import type { ProviderBreaker } from './provider-breaker.js';
import type { ProviderClient } from './provider-client.js';

export interface ProviderAuthorizeStepOptions {
  readonly name: string;
  readonly order: number;
  readonly url: string;
  readonly failurePolicy: 'Fail' | 'Ignore';
  readonly timeoutMs: number;
  readonly matchSpec: AuthorizeMatch;
  readonly client: ProviderClient;
  readonly breaker: ProviderBreaker;
}

export function createProviderAuthorizeStep(o: ProviderAuthorizeStepOptions): AuthorizeStep {
  return {
    name: o.name,
    source: 'provider',
    order: o.order,
    failurePolicy: o.failurePolicy,
    timeoutMs: o.timeoutMs,
    match: compileAuthorizeMatch(o.matchSpec),
    matchSpec: o.matchSpec,
    // A failed call rejects with a ProviderCallError (its reason: timeout, connection, breaker_open, …).
    invoke: (call) =>
      o.breaker.fire(() =>
        o.client.authorize({ attributes: call.attributes, timeoutMs: call.timeoutMs, signal: call.signal }),
      ),
    describe: () => ({
      name: o.name,
      source: 'provider',
      provider: o.name,
      phase: 'authorize',
      order: o.order,
      url: o.url,
      failurePolicy: o.failurePolicy,
      timeoutSeconds: o.timeoutMs / 1000,
      match: o.matchSpec,
      breaker: { state: o.breaker.state(), ...o.breaker.stats() },
    }),
  };
}
