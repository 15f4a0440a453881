/**
 * The test file's providers held against the config under test: each is a provider entry of its chain (a
 * misspelt one would answer nothing), and a provider that is discovered has a discovery document it can read,
 * without which it has no steps to call. A mistake is the test file's (exit 2), at its line.
 */
import { didYouMean } from '../base/did-you-mean.js';
import { ConfigError } from '../base/errors.js';
import { locateConfigError } from '../config/field-positions.js';
import type { GatewayConfig, ProviderEntry } from '../config/types.js';
import { parseDiscovery } from '../providers/discovery.js';
import type { TestSuite } from './suite.js';

export function checkProviders(suite: TestSuite, config: GatewayConfig): void {
  const entries = config.chain.filter((e): e is ProviderEntry => e.kind === 'provider');
  const names = entries.map((e) => e.name);
  const fail = (field: string, message: string): never => {
    throw locateConfigError(new ConfigError(suite.file, field, message), suite.file, suite.locate);
  };
  for (const double of suite.providers.values()) {
    if (names.includes(double.name)) continue;
    const hint = didYouMean(double.name, names) || (names.length ? ` (its providers: ${names.join(', ')})` : '');
    fail(double.field, `the chain of ${config.file} has no provider "${double.name}"${hint}`);
  }
  for (const entry of entries.filter((e) => e.discovery)) {
    const field = `providers.${entry.name}.discovery`;
    const document = suite.providers.get(entry.name)?.discovery;
    if (document === undefined) {
      fail(
        field,
        `is required: provider "${entry.name}" is discovered (discovery: true in ${config.file}), so its steps come ` +
          'from the discovery document it serves',
      );
    }
    // Checked as the provider's runtime will read it, so that a mistake is the file's, not a warning at run time.
    try {
      parseDiscovery(document, entry.name, entry.url ? new URL(entry.url).pathname : (entry.service?.path ?? '/'));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      fail(err.path ? `${field}.${err.path}` : field, err.expected);
    }
  }
}
