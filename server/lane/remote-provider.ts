/**
 * A remote provider as a worker of the large-review lane calls it: the same provider step (provider-step.ts) over
 * a client and a breaker that stand in for the main thread's. The worker encodes the AdmissionReview and
 * verifies the answer, which for a large object is most of a call's computation; the main thread exchanges the
 * bytes through the provider's one connection pool inside its one breaker (provider-host.ts), and waits for this
 * worker's verdict on them before the breaker counts the call. The breaker's state comes from the main thread
 * whenever it changes, so a call behind an open breaker fails here at once, as in the main lane.
 */
import type { ProviderCallError } from '../base/errors.js';
import { breakerOpenError, type BreakerState, type ProviderBreaker } from '../providers/provider-breaker.js';
import type { ProviderClient, ProviderTarget } from '../providers/provider-client.js';
import { createProviderCodec } from '../providers/provider-codec.js';
import type { FromWorker, ProviderToWorker } from './lane-messages.js';
import { failureError, failureOf } from './provider-failure.js';
import { ownedBytes } from './owned-bytes.js';

interface Pending {
  bytes?(body: Uint8Array): void;
  json?(value: unknown): void;
  failed(err: ProviderCallError): void;
}

export interface RemoteProviders {
  client(provider: string, target: ProviderTarget): ProviderClient;
  breaker(provider: string): ProviderBreaker;
  /** A message from the main thread about providers. */
  received(message: ProviderToWorker): void;
}

export function createRemoteProviders(post: (message: FromWorker, transfer?: ArrayBuffer[]) => void): RemoteProviders {
  let nextCall = 0;
  const pending = new Map<number, Pending>();
  let states: Readonly<Record<string, BreakerState>> = {};

  /** A new call, settled by what the main thread answers; its signal aborting cancels the main thread's exchange. */
  function track(signal: AbortSignal | undefined, handlers: Pending): number {
    const call = nextCall++;
    const cancel = () => post({ type: 'provider-cancel', call });
    signal?.addEventListener('abort', cancel, { once: true });
    const done = () => {
      pending.delete(call);
      signal?.removeEventListener('abort', cancel);
    };
    pending.set(call, {
      ...(handlers.bytes ? { bytes: (body: Uint8Array) => (done(), handlers.bytes!(body)) } : {}),
      ...(handlers.json ? { json: (value: unknown) => (done(), handlers.json!(value)) } : {}),
      failed: (err) => (done(), handlers.failed(err)),
    });
    if (signal?.aborted) queueMicrotask(cancel);
    return call;
  }

  return {
    client(provider, target) {
      const codec = createProviderCodec(target);
      return {
        call(input) {
          const encoded = codec.encode(input);
          const body = ownedBytes(Buffer.from(encoded.body, 'utf8'));
          return new Promise((resolve, reject) => {
            const call = track(input.signal, {
              bytes(answered) {
                try {
                  const answer = codec.verify(answered, encoded);
                  post({ type: 'provider-verdict', call });
                  resolve(answer);
                } catch (err) {
                  post({ type: 'provider-verdict', call, failure: failureOf(err) });
                  reject(err instanceof Error ? err : new Error(String(err)));
                }
              },
              failed: reject,
            });
            post(
              {
                type: 'provider-call',
                call,
                provider,
                path: encoded.path,
                body,
                timeoutMs: input.timeoutMs,
                ...(input.traceHeaders ? { traceHeaders: input.traceHeaders } : {}),
              },
              [body.buffer],
            );
          });
        },
        getJson(path, timeoutMs, signal) {
          return new Promise((resolve, reject) => {
            const call = track(signal, { json: resolve, failed: reject });
            post({ type: 'provider-get', call, provider, path, timeoutMs });
          });
        },
        exchange: () => Promise.reject(new Error('a lane worker exchanges no bytes itself')),
        // The authorize chain runs on the main thread (its requests are small).
        authorize: () => Promise.reject(new Error('a lane worker runs no authorize steps')),
        close: () => Promise.resolve(),
      };
    },
    breaker(provider) {
      const openError = breakerOpenError(provider);
      const state = (): BreakerState => states[provider] ?? 'closed';
      return {
        // The main thread fires its breaker around the exchange; the call only asks it to.
        fire: (call) => call(),
        failingFast() {
          if (state() !== 'open') return undefined;
          post({ type: 'provider-rejected', provider });
          return openError;
        },
        state,
        // What /chain shows is the main thread's breaker.
        stats: () => ({ fires: 0, failures: 0, rejects: 0, successes: 0 }),
        shutdown: () => undefined,
      };
    },
    received(message) {
      switch (message.type) {
        case 'breakers':
          states = message.states;
          return;
        case 'provider-bytes':
          return pending.get(message.call)?.bytes?.(message.body);
        case 'provider-json':
          return pending.get(message.call)?.json?.(message.value);
        case 'provider-failed':
          return pending.get(message.call)?.failed(failureError(message.failure));
      }
    },
  };
}
