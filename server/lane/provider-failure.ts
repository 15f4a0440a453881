/** A provider call's failure as it crosses between a lane worker and the main thread, and back to an error. */
import { FAILURE_REASONS, ProviderCallError, errorMessage } from '../base/errors.js';
import type { ProviderFailure } from './lane-messages.js';

type CallReason = ProviderCallError['reason'];

/** A failure the main thread reported, as the ProviderCallError the main lane's client throws. */
export function failureError({ reason, message }: ProviderFailure): ProviderCallError {
  const known =
    (FAILURE_REASONS as readonly string[]).includes(reason) && reason !== 'error' && reason !== 'invalid_patch';
  return new ProviderCallError(known ? (reason as CallReason) : 'connection', message);
}

/** A ProviderCallError (or anything a call threw) as a message can carry it. */
export function failureOf(err: unknown): ProviderFailure {
  return err instanceof ProviderCallError
    ? { reason: err.reason, message: err.message }
    : { reason: 'invalid_response', message: errorMessage(err) };
}
