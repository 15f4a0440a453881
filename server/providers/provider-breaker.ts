/**
 * One opossum circuit breaker per provider. Only failures count: the guarded call resolves with any
 * well-formed answer (a deny is a decision) and rejects only with a ProviderCallError. Each call carries
 * its own AbortSignal (opossum's shared abortController would abort every call in flight on the first
 * timeout), so the breaker's own timeout is off. Open → calls fail fast as `breaker_open`; after
 * resetTimeout one half-open probe decides between closing and reopening.
 */
import { EventEmitter } from 'node:events';
import CircuitBreaker from 'opossum';
import type { CircuitBreakerConfig } from '../config/types.js';
import { ProviderCallError } from '../base/errors.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../base/log.js';

export type BreakerState = 'closed' | 'half-open' | 'open';

const GAUGE: Record<BreakerState, number> = { closed: 0, 'half-open': 1, open: 2 };

export interface ProviderBreaker {
  fire<T>(call: () => Promise<T>): Promise<T>;
  /**
   * The error every call fails with while the breaker is open, for a caller to fail at once without a promise
   * (and without the timer a pending call gets); undefined when a call would be let through.
   */
  failingFast(): ProviderCallError | undefined;
  state(): BreakerState;
  stats(): { fires: number; failures: number; rejects: number; successes: number };
  shutdown(): void;
}

/** What a call behind the open breaker of `provider` fails with, in either lane. */
export const breakerOpenError = (provider: string): ProviderCallError =>
  new ProviderCallError('breaker_open', `circuit breaker of "${provider}" is open`);

export interface BreakerDeps {
  readonly metrics: Metrics;
  readonly log: Logger;
  readonly onStateChange?: (state: BreakerState) => void;
}

export function createProviderBreaker(
  provider: string,
  config: CircuitBreakerConfig,
  deps: BreakerDeps,
): ProviderBreaker {
  const breaker = new CircuitBreaker((call: () => Promise<unknown>) => call(), {
    name: provider,
    timeout: false,
    errorThresholdPercentage: config.errorThresholdPercentage,
    volumeThreshold: config.volumeThreshold,
    resetTimeout: config.resetTimeoutMs,
    rollingCountTimeout: config.rollingWindowMs,
    rollingCountBuckets: 10,
  });
  let state: BreakerState = 'closed';
  deps.metrics.breakerState.set({ provider }, GAUGE.closed);

  const enter = (next: BreakerState) => () => {
    if (next === state) return;
    const previous = state;
    state = next;
    deps.metrics.breakerState.set({ provider }, GAUGE[next]);
    deps.metrics.breakerTransitions.inc({ provider, state: next });
    const s = breaker.stats;
    deps.log[next === 'open' ? 'warn' : 'info'](
      { provider, from: previous, to: next, fires: s.fires, failures: s.failures },
      `circuit breaker ${next}`,
    );
    deps.onStateChange?.(next);
  };
  // @types/opossum types on() per event name; the events are plain EventEmitter events.
  const events = breaker as unknown as EventEmitter;
  events.on('open', enter('open'));
  events.on('halfOpen', enter('half-open'));
  events.on('close', enter('closed'));

  // While open every call fails the same way; opossum would build a new Error (and capture its stack) per
  // rejected call, the largest cost of a review behind an open breaker. One error per provider does.
  const openError = breakerOpenError(provider);
  let fastRejects = 0;

  const failingFast = (): ProviderCallError | undefined => {
    if (!breaker.opened) return undefined;
    fastRejects++;
    return openError;
  };

  return {
    failingFast,
    async fire<T>(call: () => Promise<T>): Promise<T> {
      const open = failingFast();
      if (open) throw open;
      try {
        return (await breaker.fire(call)) as T;
      } catch (err) {
        if (CircuitBreaker.isOurError(err as Error)) {
          const code = (err as { code?: string }).code;
          if (code === 'EOPENBREAKER') throw openError;
          throw new ProviderCallError('breaker_open', `circuit breaker of "${provider}": ${String(code)}`, {
            cause: err,
          });
        }
        throw err;
      }
    },
    state: () => state,
    stats: () => {
      const s = breaker.stats;
      return {
        fires: s.fires + fastRejects,
        failures: s.failures,
        rejects: s.rejects + fastRejects,
        successes: s.successes,
      };
    },
    shutdown: () => breaker.shutdown(),
  };
}
