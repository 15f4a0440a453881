/**
 * The `exception` label of `exceptions_applied_total`: exceptions are created by whoever RBAC lets, so
 * their names are not bounded by the configuration as step names are. The first MAX_EXCEPTION_LABELS distinct
 * exceptions a process applies keep their own series; any later one counts under OTHER_EXCEPTIONS.
 */
import type { GatewayException } from './exception.js';

export const MAX_EXCEPTION_LABELS = 100;
export const OTHER_EXCEPTIONS = '_other';

/** `namespace/name`, or the name of a cluster-wide exception. */
export function exceptionLabelValue(exception: GatewayException): string {
  return exception.namespace === undefined ? exception.name : `${exception.namespace}/${exception.name}`;
}

export function createExceptionLabels(max = MAX_EXCEPTION_LABELS): (exception: GatewayException) => string {
  const seen = new Set<string>();
  return (exception) => {
    const value = exceptionLabelValue(exception);
    if (seen.has(value)) return value;
    if (seen.size >= max) return OTHER_EXCEPTIONS;
    seen.add(value);
    return value;
  };
}
