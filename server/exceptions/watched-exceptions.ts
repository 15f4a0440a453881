/**
 * The exceptions a running gateway (or a command) applies: those of `exceptions.files`, read once at start,
 * and in cluster mode the cluster's AdmissionExceptions and ClusterAdmissionExceptions, which the watcher
 * replaces as they change. Reviews see both as one index (exception-source.ts).
 */
import type { ExceptionsConfig } from '../config/exceptions.js';
import type { GatewayException } from './exception.js';
import { readExceptionFiles } from './exception-files.js';
import { createExceptionStore, type ExceptionSource } from './exception-source.js';

export interface WatchedExceptions extends ExceptionSource {
  /** The longest an exception may live (`exceptions.maxLifetime`), for reading the cluster's objects. */
  readonly maxLifetimeMs: number;
  /** Replaces the cluster's exceptions; those of the files stay. */
  setWatched(exceptions: readonly GatewayException[]): void;
  /** The files' exceptions, then the cluster's (a later one of the same ref wins, as in the index). */
  all(): readonly GatewayException[];
}

export interface LoadExceptionsOptions {
  /** Milliseconds since the epoch (Date.now); tests pass their own. */
  readonly clock?: () => number;
  readonly onApplied?: (step: string, exception: GatewayException) => void;
  /** Once per review per exception used (cluster mode counts it into the exception's status). */
  readonly onUsed?: (exception: GatewayException) => void;
  /** Files besides `config.files` (a command's `--exceptions`). */
  readonly files?: readonly string[];
}

export async function loadExceptions(
  config: ExceptionsConfig,
  options: LoadExceptionsOptions = {},
): Promise<WatchedExceptions> {
  const clock = options.clock ?? Date.now;
  const store = createExceptionStore({
    clock,
    allowedSteps: config.allowedSteps,
    ...(options.onApplied ? { onApplied: options.onApplied } : {}),
    ...(options.onUsed ? { onUsed: options.onUsed } : {}),
  });
  const fromFiles = await readExceptionFiles([...config.files, ...(options.files ?? [])], {
    maxLifetimeMs: config.maxLifetimeMs,
    now: clock(),
  });
  store.set(fromFiles);
  let all: readonly GatewayException[] = fromFiles;
  return {
    current: () => store.current(),
    now: () => store.now(),
    applied: (step, exception) => store.applied(step, exception),
    used: (exception) => store.used(exception),
    maxLifetimeMs: config.maxLifetimeMs,
    setWatched(watched) {
      all = [...fromFiles, ...watched];
      store.set(all);
    },
    all: () => all,
  };
}
