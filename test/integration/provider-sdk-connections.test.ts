/**
 * The provider SDK's server is bounded as the gateway's webhook server is (server/http/connection-limits.ts):
 * anyone who can reach a provider's port can open connections and send slowly, so connections beyond
 * `maxConnections` are closed on accept, and a request whose headers trickle in is cut at
 * `headersTimeoutSeconds` with 408.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import pino from 'pino';
import { generateCertificates } from '../../certs/generate.js';
import defaultLabels from '../../plugins/default-labels.js';
import {
  serveProvider,
  type ProviderServer,
  type ProviderServerOptions,
} from '../../server/provider-sdk/serve-provider.js';

describe('the provider SDK’s server: connection bounds', function () {
  const bundle = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  let provider: ProviderServer | undefined;
  const sockets: net.Socket[] = [];

  const serve = async (bounds: Partial<ProviderServerOptions>) => {
    provider = await serveProvider({
      plugins: [{ plugin: defaultLabels, settings: { labels: { team: 'unknown' } } }],
      tls: { cert: bundle.cert, key: bundle.key },
      host: '127.0.0.1',
      port: 0,
      log: pino({ level: 'silent' }),
      ...bounds,
    });
    return provider;
  };

  /** A TLS connection to the provider: 'connected' once the handshake is done, else the error's code. */
  const connect = (server: ProviderServer): Promise<{ socket: tls.TLSSocket; outcome: string }> =>
    new Promise((resolve) => {
      const socket = tls.connect({ host: '127.0.0.1', port: server.port, ca: bundle.caCert, servername: 'localhost' });
      sockets.push(socket);
      socket.once('secureConnect', () => resolve({ socket, outcome: 'connected' }));
      socket.once('error', (err: Error & { code?: string }) => resolve({ socket, outcome: err.code ?? err.message }));
    });

  /** What the server sent before it closed `socket`, or 'still open' after `ms`. */
  const closedWithin = (socket: net.Socket, ms: number): Promise<string> =>
    new Promise((resolve) => {
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
      socket.once('close', () => resolve(received));
      setTimeout(() => resolve('still open'), ms).unref();
    });

  afterEach(async function () {
    for (const socket of sockets.splice(0)) socket.destroy();
    await provider?.close();
    provider = undefined;
  });

  it('closes connections beyond maxConnections on accept', async function () {
    const server = await serve({ maxConnections: 3 });
    const open = await Promise.all([connect(server), connect(server), connect(server)]);

    const over = await connect(server);

    assert.deepEqual(
      open.map((o) => o.outcome),
      ['connected', 'connected', 'connected'],
    );
    assert.notEqual(over.outcome, 'connected');
  });

  it('cuts a request whose headers trickle in at headersTimeoutSeconds, with 408', async function () {
    const server = await serve({ headersTimeoutSeconds: 1, requestTimeoutSeconds: 1 });
    const { socket } = await connect(server);
    socket.write('POST /default-labels HTTP/1.1\r\nHost: localhost\r\n');
    const trickle = setInterval(() => socket.write('X-Slow: 1\r\n'), 200);

    const received = await closedWithin(socket, 5000);

    clearInterval(trickle);
    assert.match(received, /^HTTP\/1\.1 408 Request Timeout\r\n/);
  });

  it('refuses bounds out of range at start, naming the option', async function () {
    await assert.rejects(serve({ maxConnections: 0 }), {
      message: 'provider options: maxConnections: expected an integer from 1 to 1000000, got 0',
    });
  });
});
