/**
 * The bounds on a server's connections (gateway.yaml's `server` fields, also the provider SDK's options of the
 * same names): how many may be open, and how long a client may take over its handshake, its headers, its
 * request and its body. Anyone who can reach a port can open connections and send slowly; server/http applies
 * these bounds.
 */
import { childPath, type Reader } from './reader.js';
import type { ConnectionBounds } from './types.js';

export const CONNECTION_FIELDS = [
  'maxConnections',
  'headersTimeoutSeconds',
  'requestTimeoutSeconds',
  'bodyTimeoutSeconds',
  'minBodyBytesPerSecond',
] as const;

/**
 * Open connections per server: a small part of the Deployment's memory in idle TLS connections, and still room
 * for several apiservers' keep-alive pools (docs/decisions.md, "Idle connections: `server.maxConnections` 512").
 */
export const DEFAULT_MAX_CONNECTIONS = 512;

/** The bounds among `m`'s fields (a map read with CONNECTION_FIELDS among its known keys), defaults applied. */
export function readConnectionBounds(r: Reader, m: Readonly<Record<string, unknown>>, p: string): ConnectionBounds {
  const at = (key: (typeof CONNECTION_FIELDS)[number]) => childPath(p, key);
  const headersTimeoutSeconds = r.number(m.headersTimeoutSeconds, at('headersTimeoutSeconds'), 1, 300) ?? 10;
  return {
    maxConnections: r.integer(m.maxConnections, at('maxConnections'), 1, 1_000_000) ?? DEFAULT_MAX_CONNECTIONS,
    headersTimeoutSeconds,
    requestTimeoutSeconds:
      r.number(m.requestTimeoutSeconds, at('requestTimeoutSeconds'), headersTimeoutSeconds, 600) ??
      Math.max(30, headersTimeoutSeconds),
    bodyTimeoutSeconds: r.number(m.bodyTimeoutSeconds, at('bodyTimeoutSeconds'), 1, 600) ?? 10,
    minBodyBytesPerSecond: r.integer(m.minBodyBytesPerSecond, at('minBodyBytesPerSecond'), 1, 2 ** 30) ?? 64 * 1024,
  };
}

/** The connection fields of `source` (a server's config, the provider SDK's options) and nothing else. */
export function connectionFieldsOf<T extends Partial<ConnectionBounds>>(
  source: T,
): Pick<T, (typeof CONNECTION_FIELDS)[number]> {
  return Object.fromEntries(CONNECTION_FIELDS.map((field) => [field, source[field]]));
}
