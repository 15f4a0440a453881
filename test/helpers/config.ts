/** Config parsing as the config tests use it: a document from /etc/gateway/gateway.yaml, and its refusal. */
import assert from 'node:assert/strict';
import { parseConfigText } from '../../server/config/load.js';
import { ConfigError } from '../../server/base/errors.js';

export const parseConfig = (yaml: string) => parseConfigText(yaml, 'gateway.yaml', '/etc/gateway');

/** The ConfigError message `yaml` is refused with (fails the test when it is accepted or fails otherwise). */
export function configError(yaml: string): string {
  try {
    parseConfig(yaml);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.message;
  }
  assert.fail('the config was accepted');
}
