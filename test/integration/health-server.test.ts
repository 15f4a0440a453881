/**
 * The probes' own port (server.healthPort, plain HTTP): /healthz and /readyz for the kubelet, answered whatever
 * other clients do to the ops port, and bounded so that no one client can take the kubelet's connections.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { HEALTH_CONNECTIONS } from '../../server/http/health-app.js';
import { podCreate } from '../fixtures/reviews/index.js';
import { startHarness, type Harness } from '../helpers/gateway-harness.js';
import { createTestPlugins, type TestPlugins } from '../helpers/test-plugins.js';
import { eventually } from '../helpers/wait.js';

/** Opens a TCP connection to `url`'s port (from `localAddress`); resolves once connected. */
function connect(url: string, localAddress?: string): Promise<net.Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port), ...(localAddress ? { localAddress } : {}) });
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Resolves once the server closes `socket` (or with 'open' if it is still open after a request round trip). */
function closedByServer(socket: net.Socket): Promise<boolean> {
  return new Promise((resolve) => {
    socket.on('error', () => undefined);
    socket.once('close', () => resolve(true));
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    socket.once('data', () => resolve(false));
  });
}

describe('health server (plain HTTP, server.healthPort)', function () {
  let harness: Harness | undefined;
  let test: TestPlugins;
  const sockets: net.Socket[] = [];

  async function start(yaml = 'chain: []'): Promise<Harness> {
    harness = await startHarness({ yaml, plugins: test.plugins });
    return harness;
  }

  beforeEach(function () {
    test = createTestPlugins();
  });

  afterEach(async function () {
    for (const socket of sockets.splice(0)) socket.destroy();
    test.gate.release();
    await harness?.close();
    harness = undefined;
  });

  it('answers /healthz with 200 ok, and nothing but the probes', async function () {
    const h = await start();

    const answer = await h.health('/healthz');
    const other = await h.health('/metrics');
    const onOps = await h.ops('/healthz');

    assert.deepEqual({ status: answer.status, text: answer.text }, { status: 200, text: 'ok' });
    assert.match(String(answer.headers['content-type']), /^text\/plain/);
    assert.deepEqual([other.status, other.body], [404, { error: 'not found; try /healthz, /readyz' }]);
    assert.equal(onOps.status, 404);
  });

  it('answers /readyz with 200 ok once config and certificate are loaded, and lists the checks when verbose', async function () {
    const h = await start();

    const plain = await h.health('/readyz');
    const verbose = await h.health('/readyz?verbose');

    assert.deepEqual({ status: plain.status, text: plain.text }, { status: 200, text: 'ok' });
    assert.deepEqual(
      { status: verbose.status, body: verbose.body },
      {
        status: 200,
        body: {
          ready: true,
          checks: [
            { name: 'config', ready: true },
            { name: 'certificate', ready: true },
            { name: 'shutdown', ready: true },
          ],
        },
      },
    );
  });

  it('answers /readyz with 503 and the reason while the gateway is closing', async function () {
    const h = await start(`chain: [{ plugin: slow-async, name: slow, settings: { tag: slow, awaitRelease: true } }]`);
    const inflight = h.post('/mutate', podCreate());
    await test.calls.waitFor((r) => r.tag === 'slow' && r.event === 'call');

    const closed = h.gateway.close();
    const plain = await h.health('/readyz');
    const verbose = await h.health('/readyz?verbose');
    test.gate.release();
    await inflight;
    await closed;

    assert.deepEqual(
      { status: plain.status, text: plain.text },
      { status: 503, text: 'not ready: shutdown (shutting down)' },
    );
    assert.deepEqual(verbose.body, {
      ready: false,
      checks: [
        { name: 'config', ready: true },
        { name: 'certificate', ready: true },
        { name: 'shutdown', ready: false, detail: 'shutting down' },
      ],
    });
  });

  it('answers the probes while every connection the ops port keeps is taken', async function () {
    const h = await start('server: { maxConnections: 3 }\nchain: []');
    for (let i = 0; i < 3; i++) sockets.push(await connect(h.gateway.opsUrl));
    const over = await connect(h.gateway.opsUrl);
    sockets.push(over);
    assert.equal(await closedByServer(over), true, 'the ops port is full');

    const live = await h.health('/healthz');
    const ready = await h.health('/readyz');

    assert.deepEqual([live.status, live.text, ready.status, ready.text], [200, 'ok', 200, 'ok']);
  });

  it(`keeps at most ${HEALTH_CONNECTIONS.perAddress} connections from one address, so another still gets in`, async function () {
    const h = await start();
    // Every 127/8 address is this host's: 127.0.0.2 is another client as the server sees it.
    for (let i = 0; i < HEALTH_CONNECTIONS.perAddress; i++)
      sockets.push(await connect(h.gateway.healthUrl, '127.0.0.2'));
    const over = await connect(h.gateway.healthUrl, '127.0.0.2');
    sockets.push(over);

    assert.equal(await closedByServer(over), true);
    const live = await h.health('/healthz');
    assert.deepEqual([live.status, live.text], [200, 'ok']);
    await eventually(
      'the connection over the bound is counted',
      async () =>
        (await h.metric('admission_gateway_connections_closed_total', {
          server: 'health',
          reason: 'max_connections_per_address',
        })) === 1,
    );
  });
});
