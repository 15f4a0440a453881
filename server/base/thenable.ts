/** Whether `value` is a promise, or any thenable: what a plugin's hook or a step may return for its answer. */
export function isThenable<T>(value: unknown): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
