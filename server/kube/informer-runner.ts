/**
 * Keeps a client-node informer running: client-node reports a failed list or watch once and stops
 * (its own example restarts by hand), so this owns restart with exponential backoff, and tracks whether
 * the first list has synced (for /readyz).
 */
import type { Informer, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../base/log.js';
import { kubeErrorMessage } from './kube-errors.js';

export interface InformerRunner {
  /** True once a list has completed since start (stays true across later reconnects: the cache is kept). */
  hasSynced(): boolean;
  /** Why it is not (or no longer) connected, for /readyz and logs. */
  lastError(): string | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface BackoffOptions {
  readonly initialMs?: number;
  readonly maxMs?: number;
}

export interface InformerRunnerOptions {
  readonly backoff?: BackoffOptions;
  /** Told when the list/watch connects or loses its connection (for a metric). */
  readonly onConnectionChange?: (connected: boolean) => void;
}

export function runInformer<T extends KubernetesObject>(
  name: string,
  informer: Informer<T>,
  log: Logger,
  options: InformerRunnerOptions = {},
): InformerRunner {
  const initial = options.backoff?.initialMs ?? 500;
  const max = options.backoff?.maxMs ?? 30_000;
  let delay = initial;
  let synced = false;
  let stopped = true;
  let failure: string | undefined;
  let timer: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    if (stopped) return;
    let failed = false;
    const onError = () => {
      failed = true;
    };
    informer.on('error', onError);
    try {
      await informer.start();
    } finally {
      informer.off('error', onError);
    }
    if (!failed && !stopped) {
      if (!synced) log.info({ informer: name }, 'informer synced');
      synced = true;
      failure = undefined;
      delay = initial;
      options.onConnectionChange?.(true);
    }
  };

  informer.on('error', (err?: unknown) => {
    if (stopped) return;
    failure = kubeErrorMessage(err);
    options.onConnectionChange?.(false);
    log.warn({ informer: name, err: failure, retryInMs: delay }, 'list/watch failed; retrying');
    clearTimeout(timer);
    timer = setTimeout(() => void connect(), delay);
    timer.unref();
    delay = Math.min(delay * 2, max);
  });

  return {
    hasSynced: () => synced,
    lastError: () => failure,
    async start() {
      stopped = false;
      await connect();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await informer.stop();
    },
  };
}
