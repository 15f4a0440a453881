import assert from 'node:assert/strict';
import { ProviderCallError } from '../../server/base/errors.js';

/** The ProviderCallError `promise` rejects with; fails the test if it resolves or rejects with anything else. */
export async function callFailure(promise: Promise<unknown>): Promise<ProviderCallError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ProviderCallError) return err;
    throw err;
  }
  return assert.fail('expected the call to fail with a ProviderCallError');
}
