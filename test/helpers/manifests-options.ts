/** The ManifestsUsageError message `manifests` refuses `flags` with; fails the test when they are accepted. */
import assert from 'node:assert/strict';
import { ManifestsUsageError, parseManifestsOptions, type ManifestsFlags } from '../../server/manifests/options.js';

export function manifestsRefusal(flags: ManifestsFlags): string {
  try {
    parseManifestsOptions(flags);
  } catch (err) {
    assert.ok(err instanceof ManifestsUsageError, String(err));
    return err.message;
  }
  assert.fail(`accepted ${JSON.stringify(flags)}`);
}
