/** The `https://HOST[:PORT]` flags of `manifests` (`--url`, `--authorization-url`). */
import { ManifestsUsageError } from './usage-error.js';

/**
 * `https://HOST[:PORT]` given to `flag`, returned without a trailing slash: the apiserver only calls https
 * URLs, and `routes` are appended, so a path, query, fragment or user info would produce a URL the gateway
 * does not serve.
 */
export function parseHttpsOrigin(value: string, flag: string, routes: string): string {
  const expected = `expected https://HOST[:PORT] (${routes})`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ManifestsUsageError(`${flag}: ${expected}, got "${value}"`);
  }
  if (url.protocol !== 'https:') {
    throw new ManifestsUsageError(`${flag}: the apiserver only calls https URLs; ${expected}, got "${value}"`);
  }
  if (url.username || url.password || url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) {
    throw new ManifestsUsageError(`${flag}: ${expected}, without a path, query, fragment or user, got "${value}"`);
  }
  return `https://${url.host}`;
}
