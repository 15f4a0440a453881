/**
 * Bounds on connections, for the webhook and the ops server alike: how many may be open, and how long a
 * client may take to finish its TLS handshake and to send a request. Without them thousands of idle or
 * trickling sockets (anyone who can reach the port can open them) exhaust memory or file descriptors; the
 * keep-alive time of a connection between requests is left as it is (see gateway.ts).
 */
import type http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import type { Metrics } from '../metrics/metrics.js';

export interface ConnectionBounds {
  readonly maxConnections: number;
  readonly headersTimeoutSeconds: number;
  readonly requestTimeoutSeconds: number;
}

/**
 * How often a server looks for requests past their time (Node's default, 30 s, would let a slow sender keep
 * its socket up to that much longer than the bound).
 */
const CHECK_INTERVAL_MS = 1000;

/** Options for http(s).createServer: the handshake and the request must each arrive in time. */
export function connectionOptions(bounds: ConnectionBounds) {
  return {
    headersTimeout: bounds.headersTimeoutSeconds * 1000,
    requestTimeout: bounds.requestTimeoutSeconds * 1000,
    connectionsCheckingInterval: CHECK_INTERVAL_MS,
    handshakeTimeout: bounds.headersTimeoutSeconds * 1000,
  };
}

/** Node's answers to a request it could not read, as its own default clientError handling writes them. */
const ANSWERS: Readonly<Record<string, string>> = {
  ERR_HTTP_REQUEST_TIMEOUT: 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n',
  HPE_HEADER_OVERFLOW: 'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n',
};
const BAD_REQUEST = 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n';

/** Caps the server's connections and counts every connection it closes without serving. */
export function watchConnections(
  server: http.Server | https.Server,
  name: 'webhook' | 'ops',
  maxConnections: number,
  metrics: Metrics,
): void {
  const closed = (reason: string) => metrics.connectionsClosed.inc({ server: name, reason });
  server.maxConnections = maxConnections;
  server.on('drop', () => closed('max_connections'));
  // A failed or timed-out handshake: Node has destroyed the socket already.
  if (server instanceof https.Server) server.on('tlsClientError', () => closed('tls_handshake'));
  // Listening replaces Node's default handling, which this does the same way (answer if possible, close).
  server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
    const code = err.code ?? '';
    closed(code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request_timeout' : 'bad_request');
    if (code !== 'ECONNRESET' && socket.writable) socket.end(ANSWERS[code] ?? BAD_REQUEST);
    socket.destroy();
  });
}
