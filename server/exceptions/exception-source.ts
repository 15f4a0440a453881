/**
 * Where reviews find the exceptions in force: the current index, swapped whole when the exceptions change
 * (files at start, the cluster's objects as they are watched), and the clock they are judged by. Every
 * review reads the index once and the clock once, so one review sees one set at one instant.
 */
import type { GatewayException } from './exception.js';
import { ExceptionIndex, type ExceptionIndexOptions } from './exception-index.js';

export interface ExceptionSource {
  /** The exceptions in force now (possibly expired ones: expiry is judged against `now()`). */
  current(): ExceptionIndex;
  /** Milliseconds since the epoch. */
  now(): number;
  /** An exception let a step off, or turned its denial into a warning (the metric): once per review per step. */
  applied(step: string, exception: GatewayException): void;
  /**
   * An admission review used the exception (its status's usage count): once per review, however many of the
   * review's steps it let off or warned of.
   */
  used(exception: GatewayException): void;
}

/**
 * `source` for reviews that are no requests (the audit's, shadow steps'): the same exceptions at the same clock,
 * what they let off not counted as admission's use.
 */
export function uncounted(source: ExceptionSource): ExceptionSource {
  return { current: () => source.current(), now: () => source.now(), applied: () => undefined, used: () => undefined };
}

export interface ExceptionStore extends ExceptionSource {
  /** Replaces the exceptions in force; each named by `ref` once (a later one of the same ref wins). */
  set(exceptions: readonly GatewayException[]): void;
}

export interface ExceptionStoreOptions extends ExceptionIndexOptions {
  readonly clock?: () => number;
  readonly onApplied?: (step: string, exception: GatewayException) => void;
  readonly onUsed?: (exception: GatewayException) => void;
}

export function createExceptionStore(options: ExceptionStoreOptions = {}): ExceptionStore {
  const clock = options.clock ?? Date.now;
  let index = ExceptionIndex.EMPTY;
  return {
    current: () => index,
    now: () => clock(),
    applied: (step, exception) => options.onApplied?.(step, exception),
    used: (exception) => options.onUsed?.(exception),
    set(exceptions) {
      const byRef = new Map(exceptions.map((e) => [e.ref, e]));
      index = byRef.size === 0 ? ExceptionIndex.EMPTY : new ExceptionIndex([...byRef.values()], options);
    },
  };
}
