/**
 * The main thread's side of the provider calls of the large-review lane's workers (remote-provider.ts is the
 * worker's): each call goes through the provider's one breaker and one connection pool, the same a main-lane
 * review's call goes through. The breaker is fired around the exchange of bytes and the worker's verdict on them,
 * so that an answer the worker finds invalid counts as a failure, as it does in the main lane. A worker's messages
 * are checked before use (a malformed one is dropped); a call's wait is bounded by its own time even when its
 * worker dies without a word.
 */
import type { Phase } from '../admission/types.js';
import { ProviderCallError } from '../base/errors.js';
import type { BreakerState, ProviderBreaker } from '../providers/provider-breaker.js';
import type { ProviderClient } from '../providers/provider-client.js';
import type { ProviderFailure, ProviderFromWorker, ToWorker } from './lane-messages.js';
import { failureError, failureOf } from './provider-failure.js';
import { liveStepOf } from './lane-trace.js';
import { ownedBytes } from './owned-bytes.js';

/** What the main thread keeps of one provider. */
export interface HostedProvider {
  readonly name: string;
  readonly client: ProviderClient;
  readonly breaker: ProviderBreaker;
}

/** A step's time is at most 30 s; a worker asking for more is held to it. */
const MAX_CALL_MS = 30_000;
/** How long past its time a call may wait for a worker that said nothing (it died): then it fails as a timeout. */
const WORKER_SILENCE_MS = 1000;

type Reply = (message: ToWorker, transfer?: ArrayBuffer[]) => void;

interface HostedCall {
  readonly abort: AbortController;
  verdict?: (failure: ProviderFailure | undefined) => void;
}

export interface ProviderHost {
  /** Handles a worker's provider message; `reply` answers that worker. */
  handle(message: ProviderFromWorker, reply: Reply): void;
  /** The breaker states, when they differ from those last returned (to tell the workers); else undefined. */
  changedStates(): Extract<ToWorker, { type: 'breakers' }> | undefined;
  /** The breaker states as a worker is told before its first job. */
  states(): Extract<ToWorker, { type: 'breakers' }>;
}

const isCall = (n: unknown): n is number => Number.isSafeInteger(n);
const isStrings = (v: unknown): v is readonly string[] =>
  Array.isArray(v) && v.length <= 4 && v.every((s) => typeof s === 'string');

/** Marks a failure that is the worker's verdict: the worker has it already. */
class VerdictFailure extends ProviderCallError {}

export interface ProviderHostDeps {
  readonly providers: () => readonly HostedProvider[];
  /**
   * Starts the span of step `step` of job `job` now, as it calls out; the trace context to send (none when the job
   * is not traced or no longer running).
   */
  readonly stepStarted: (job: number, phase: Phase, step: string) => readonly string[] | undefined;
}

export function createProviderHost({ providers, stepStarted }: ProviderHostDeps): ProviderHost {
  const calls = new WeakMap<Reply, Map<number, HostedCall>>();
  const byName = (name: unknown): HostedProvider | undefined =>
    typeof name === 'string' ? providers().find((p) => p.name === name) : undefined;
  const callsOf = (reply: Reply): Map<number, HostedCall> => {
    let map = calls.get(reply);
    if (!map) calls.set(reply, (map = new Map<number, HostedCall>()));
    return map;
  };
  /**
   * A new call of `reply`'s worker, its time held to 1 ms–MAX_CALL_MS: its signal aborts on cancel, or once that
   * time and a second are gone.
   */
  const begin = (
    reply: Reply,
    call: number,
    askedMs: number,
  ): { hosted: HostedCall; signal: AbortSignal; timeoutMs: number } => {
    const timeoutMs = Math.min(Math.max(1, askedMs), MAX_CALL_MS);
    const hosted: HostedCall = { abort: new AbortController() };
    callsOf(reply).set(call, hosted);
    const limit = AbortSignal.timeout(Math.floor(timeoutMs) + WORKER_SILENCE_MS);
    return { hosted, signal: AbortSignal.any([hosted.abort.signal, limit]), timeoutMs };
  };
  /** A call that is never made: the worker's step fails as a connection failure would. */
  const refuse = (reply: Reply, call: number, why: string) =>
    reply({ type: 'provider-failed', call, failure: { reason: 'connection', message: why } });
  const fail = (reply: Reply, call: number, err: unknown) => {
    if (!(err instanceof VerdictFailure)) reply({ type: 'provider-failed', call, failure: failureOf(err) });
  };

  const exchange = (
    message: Extract<ProviderFromWorker, { type: 'provider-call' }>,
    provider: HostedProvider,
    reply: Reply,
  ): void => {
    const { call, path, body } = message;
    const { hosted, signal, timeoutMs } = begin(reply, call, message.timeoutMs);
    const verdict = (): Promise<void> =>
      new Promise((resolve, reject) => {
        const late = () => reject(new ProviderCallError('timeout', `no verdict on the answer of "${provider.name}"`));
        if (signal.aborted) return late();
        signal.addEventListener('abort', late, { once: true });
        hosted.verdict = (failure) => {
          signal.removeEventListener('abort', late);
          if (failure) reject(new VerdictFailure(failureError(failure).reason, failure.message));
          else resolve();
        };
      });
    provider.breaker
      .fire(async () => {
        // Asked for here, where the main lane's step asks: a call behind the open breaker starts no span.
        const live = liveStepOf(message.traceHeaders);
        const traceHeaders = live && stepStarted(live.job, live.phase, live.step);
        const answered = ownedBytes(await provider.client.exchange({ path, body, timeoutMs, signal, traceHeaders }));
        reply({ type: 'provider-bytes', call, body: answered }, [answered.buffer]);
        await verdict();
      })
      .catch((err: unknown) => fail(reply, call, err))
      .finally(() => callsOf(reply).delete(call));
  };

  let told = '';
  const states = (): Extract<ToWorker, { type: 'breakers' }> => {
    const all: Record<string, BreakerState> = {};
    for (const p of providers()) all[p.name] = p.breaker.state();
    return { type: 'breakers', states: all };
  };

  return {
    handle(message, reply) {
      if (!isCall((message as { call?: unknown }).call) && message.type !== 'provider-rejected') return;
      switch (message.type) {
        case 'provider-call': {
          const provider = byName(message.provider);
          const valid =
            typeof message.path === 'string' &&
            message.path.startsWith('/') &&
            message.body instanceof Uint8Array &&
            Number.isFinite(message.timeoutMs) &&
            (message.traceHeaders === undefined || isStrings(message.traceHeaders));
          if (!provider || !valid) {
            return refuse(
              reply,
              message.call,
              provider ? 'a malformed call' : `no provider "${String(message.provider)}" in the chain`,
            );
          }
          return exchange(message, provider, reply);
        }
        case 'provider-verdict':
          return callsOf(reply)
            .get(message.call)
            ?.verdict?.(typeof message.failure?.message === 'string' ? message.failure : undefined);
        case 'provider-cancel':
          return callsOf(reply).get(message.call)?.abort.abort();
        case 'provider-rejected':
          // Counted into the breaker's rejects as a main-lane call behind it is.
          return void byName(message.provider)?.breaker.failingFast();
        case 'provider-get': {
          const provider = byName(message.provider);
          const { call } = message;
          if (!provider || typeof message.path !== 'string' || !Number.isFinite(message.timeoutMs)) {
            return refuse(reply, call, 'a malformed call');
          }
          const { signal, timeoutMs } = begin(reply, call, message.timeoutMs);
          return void provider.client
            .getJson(message.path, timeoutMs, signal)
            .then(
              (value) => reply({ type: 'provider-json', call, value }),
              (err: unknown) => fail(reply, call, err),
            )
            .finally(() => callsOf(reply).delete(call));
        }
      }
    },
    changedStates() {
      const message = states();
      const key = JSON.stringify(message.states);
      if (key === told) return undefined;
      told = key;
      return message;
    },
    states,
  };
}
