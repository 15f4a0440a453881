/**
 * The exceptions in force as they cross to a worker of the large-review lane: plain data, each without its
 * compiled match, which the worker compiles again from the match as written. The main thread sends the whole
 * set whenever it changes (files at start, the cluster's objects as they are watched), so a worker's reviews
 * judge requests against the set the main lane's would; what a worker's review used is told back by reference.
 */
import type { GatewayException } from '../exceptions/exception.js';
import { compileExceptionMatch } from '../exceptions/exception-match.js';

export type PortableException = Omit<GatewayException, 'matches'>;

export function portableExceptions(exceptions: readonly GatewayException[]): PortableException[] {
  return exceptions.map(({ matches: _compiled, ...rest }) => rest);
}

export function restoredExceptions(portable: readonly PortableException[]): GatewayException[] {
  return portable.map((exception) => ({ ...exception, ...compileExceptionMatch(exception.matchSpec) }));
}
