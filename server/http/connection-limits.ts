/**
 * Bounds on connections, for the webhook, ops and health servers and the provider SDK's alike: how many may be
 * open, and how long a client may take to finish its TLS handshake and to send a request. Without them
 * thousands of idle or trickling sockets (anyone who can reach the port can open them) exhaust memory or file
 * descriptors; the keep-alive time of a connection between requests is left as it is (see gateway.ts).
 */
import type http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionBounds } from '../config/types.js';
import type { Metrics } from '../metrics/metrics.js';

/**
 * How often a server looks for requests past their time (Node's default, 30 s, would let a slow sender keep
 * its socket up to that much longer than the bound).
 */
const CHECK_INTERVAL_MS = 1000;

/** Options for http(s).createServer: the handshake and the request must each arrive in time. */
export function connectionOptions(bounds: Pick<ConnectionBounds, 'headersTimeoutSeconds' | 'requestTimeoutSeconds'>) {
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

/** Which server a connection was closed by, in connections_closed_total. */
export type ServerName = 'webhook' | 'ops' | 'health' | 'provider';

/**
 * Caps the server's connections (`maxPerAddress`: also those from any one client address) and counts every
 * connection it closes without serving.
 */
export function watchConnections(
  server: http.Server | https.Server,
  name: ServerName,
  maxConnections: number,
  metrics: Metrics,
  maxPerAddress?: number,
): void {
  const closed = (reason: string) => metrics.connectionsClosed.inc({ server: name, reason });
  server.maxConnections = maxConnections;
  server.on('drop', () => closed('max_connections'));
  if (maxPerAddress !== undefined) capPerAddress(server, maxPerAddress, () => closed('max_connections_per_address'));
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

/** Closes each connection accepted while its client address already has `max` open. */
function capPerAddress(server: http.Server | https.Server, max: number, onClosed: () => void): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const count = open.get(address) ?? 0;
    if (count >= max) {
      onClosed();
      socket.destroy();
      return;
    }
    open.set(address, count + 1);
    socket.once('close', () => {
      const left = open.get(address)! - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
