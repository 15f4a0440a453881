/**
 * The provider client on the wire, against a raw TLS server that writes exact bytes: HTTP/1.1 framing
 * split across packets, keep-alive reuse, servers closing or resetting connections, the response cap,
 * the connection bound and queue, SNI and mTLS. Every case asserts what the caller gets (the answer or
 * the ProviderCallError) and what the server saw (requests per connection).
 */
import assert from 'node:assert/strict';
import { ADMISSION_V1 } from '../../server/admission/types.js';
import {
  createProviderClient,
  type ProviderClient,
  type ProviderTarget,
} from '../../server/providers/provider-client.js';
import type { ProviderAnswer } from '../../server/providers/provider-response.js';
import { podCreate, requestOf } from '../fixtures/reviews/index.js';
import {
  allowedAnswer,
  allowedBody,
  issueClientCertificate,
  splitAt,
  startRawProvider,
  writeSplit,
  type RawHandler,
  type RawProvider,
} from './raw-provider.js';
import { callFailure } from './call-failure.js';

const REQUEST = requestOf(podCreate());
const ALLOWED: ProviderAnswer = { allowed: true, message: '', code: 403, warnings: [], auditAnnotations: {} };

/** Answers every request allowed, Content-Length framed, in one write. */
const answerAllowed: RawHandler = (request, socket) => void socket.write(allowedAnswer(request.uid));

describe('provider client on the wire (raw TLS provider)', function () {
  this.timeout(10_000);
  let provider: RawProvider;
  const clients: ProviderClient[] = [];

  before(async function () {
    provider = await startRawProvider(answerAllowed);
  });

  after(async function () {
    await provider.close();
  });

  afterEach(async function () {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    provider.handle(answerAllowed);
  });

  /** A fresh client (its own pool), and the requests the provider receives from now on. */
  function clientFor(
    target: Partial<ProviderTarget> = {},
    path = '/admit',
  ): { client: ProviderClient; seen: () => string[] } {
    const client = createProviderClient({
      url: provider.url(path),
      ca: provider.caPem,
      apiVersion: ADMISSION_V1,
      ...target,
    });
    clients.push(client);
    const from = provider.requests.length;
    const firstConnection = provider.connections;
    return {
      client,
      // "c<connection relative to this test>#<position on it>" for each request the provider got.
      seen: () => provider.requests.slice(from).map((r) => `c${r.connection - firstConnection}#${r.onConnection}`),
    };
  }

  function call(client: ProviderClient, signal = new AbortController().signal): Promise<ProviderAnswer> {
    return client.call({ request: REQUEST, object: REQUEST.object, mutating: true, timeoutMs: 5000, signal });
  }

  describe('the request', function () {
    it('one POST with Host, JSON content type, an exact Content-Length and the review; a non-ASCII handler path percent-encoded', async function () {
      const { client } = clientFor();

      await client.call({
        request: REQUEST,
        object: REQUEST.object,
        mutating: true,
        timeoutMs: 1500,
        signal: new AbortController().signal,
        path: '/hooks/café',
      });

      const [received] = provider.requests.slice(-1);
      assert.equal(received?.method, 'POST');
      assert.equal(received?.target, '/hooks/caf%C3%A9?timeout=1500ms');
      assert.equal(received?.headers.host, new URL(provider.url('/')).host);
      assert.equal(received?.headers['content-type'], 'application/json');
      assert.equal(received?.headers['content-length'], String(Buffer.byteLength(received?.body ?? '')));
      assert.deepEqual(JSON.parse(received?.body ?? ''), {
        apiVersion: ADMISSION_V1,
        kind: 'AdmissionReview',
        request: { ...REQUEST, uid: received?.uid },
      });
    });
  });

  describe('framing', function () {
    it('a chunked answer arriving in small packets split inside the size lines, the data and the CRLFs', async function () {
      provider.handle(async (request, socket) => {
        const body = allowedBody(request.uid);
        const half = Math.floor(body.length / 2);
        const wire =
          'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n' +
          `${half.toString(16)};ext=1\r\n${body.slice(0, half)}\r\n` +
          `${(body.length - half).toString(16)}\r\n${body.slice(half)}\r\n0\r\nX-Trailer: t\r\n\r\n`;
        const head = wire.indexOf('\r\n\r\n') + 4;
        await writeSplit(
          socket,
          splitAt(wire, [head + 1, head + 3, head + 9, head + 20, wire.length - 20, wire.length - 3, wire.length - 1]),
        );
      });
      const { client, seen } = clientFor();

      assert.deepEqual(await call(client), ALLOWED);
      assert.deepEqual(await call(client), ALLOWED, 'the connection is reusable after the chunked answer');
      assert.deepEqual(seen(), ['c1#1', 'c1#2']);
    });

    it('a head split across packets, inside a field name and inside the blank line', async function () {
      provider.handle(async (request, socket) => {
        const wire = allowedAnswer(request.uid, ['X-Long-Header-Name: value']);
        const blank = wire.indexOf('\r\n\r\n');
        await writeSplit(socket, splitAt(wire, [4, 20, wire.indexOf('Long') + 2, blank + 1, blank + 3]));
      });
      const { client, seen } = clientFor();

      assert.deepEqual(await call(client), ALLOWED);
      assert.deepEqual(seen(), ['c1#1']);
    });

    it('an interim 100 Continue is skipped', async function () {
      provider.handle(
        (request, socket) => void socket.write(`HTTP/1.1 100 Continue\r\n\r\n${allowedAnswer(request.uid)}`),
      );
      const { client } = clientFor();

      assert.deepEqual(await call(client), ALLOWED);
    });

    it('a body delimited by the end of the connection is read to the close, and the next call dials again', async function () {
      provider.handle((request, socket) => {
        socket.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n${allowedBody(request.uid)}`);
      });
      const { client, seen } = clientFor();

      assert.deepEqual(await call(client), ALLOWED);
      assert.deepEqual(await call(client), ALLOWED);
      assert.deepEqual(seen(), ['c1#1', 'c2#1']);
    });

    it('Connection: close in the answer: the client closes that socket and dials again', async function () {
      provider.handle((request, socket) => void socket.write(allowedAnswer(request.uid, ['Connection: close'])));
      const { client, seen } = clientFor();
      const closedBefore = provider.closed;

      assert.deepEqual(await call(client), ALLOWED);
      await provider.until('the client closes the first socket', () => provider.closed === closedBefore + 1);
      assert.deepEqual(await call(client), ALLOWED);
      assert.deepEqual(seen(), ['c1#1', 'c2#1']);
    });

    it('a malformed status line → connection, naming the line', async function () {
      provider.handle((_request, socket) => void socket.write('HTPT/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
      const { client } = clientFor();

      const err = await callFailure(call(client));

      assert.equal(err.reason, 'connection');
      assert.equal(err.message, `calling ${provider.url('/admit')} failed: invalid status line "HTPT/1.1 200 OK"`);
    });

    it('an HTTP 500 with a small body → http_status, and the connection stays in use', async function () {
      let n = 0;
      provider.handle((request, socket) => {
        const body = 'internal error';
        socket.write(
          ++n === 1
            ? `HTTP/1.1 500 Internal Server Error\r\nContent-Length: ${body.length}\r\n\r\n${body}`
            : allowedAnswer(request.uid),
        );
      });
      const { client, seen } = clientFor();

      const err = await callFailure(call(client));
      assert.equal(err.reason, 'http_status');
      assert.equal(err.message, `${provider.url('/admit')} answered HTTP 500`);
      assert.deepEqual(await call(client), ALLOWED);
      assert.deepEqual(seen(), ['c1#1', 'c1#2']);
    });

    it('a chunked body over maxResponseBytes → invalid_response, and the client closes the connection', async function () {
      provider.handle(async (_request, socket) => {
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
        for (let i = 0; i < 200 && !socket.destroyed; i++) await writeSplit(socket, [`64\r\n${'a'.repeat(100)}\r\n`]);
        if (!socket.destroyed) socket.end('0\r\n\r\n');
      });
      const { client } = clientFor({ maxResponseBytes: 1000 });
      const closedBefore = provider.closed;

      const err = await callFailure(call(client));

      assert.equal(err.reason, 'invalid_response');
      assert.equal(err.message, `response from ${provider.url('/admit')} exceeds 1000 bytes`);
      await provider.until('the provider sees the connection closed', () => provider.closed === closedBefore + 1);
    });
  });

  describe('keep-alive and dead connections', function () {
    it('sequential calls share one TLS connection', async function () {
      const { client, seen } = clientFor();

      for (let i = 0; i < 3; i++) assert.deepEqual(await call(client), ALLOWED);

      assert.deepEqual(seen(), ['c1#1', 'c1#2', 'c1#3']);
    });

    it('the provider closes an idle connection: the next call goes out on a new one', async function () {
      provider.handle((request, socket) => void socket.end(allowedAnswer(request.uid)));
      const { client, seen } = clientFor();
      const closedBefore = provider.closed;

      assert.deepEqual(await call(client), ALLOWED);
      await provider.until('the idle connection is closed', () => provider.closed === closedBefore + 1);
      assert.deepEqual(await call(client), ALLOWED);

      assert.deepEqual(seen(), ['c1#1', 'c2#1']);
    });

    it('a reused connection that dies before any answer byte: the call is retried once on a fresh connection', async function () {
      provider.handle((request, socket) => {
        // The second request on the first connection: the provider drops it unanswered (an idle close racing it).
        if (request.onConnection === 2) socket.destroy();
        else socket.write(allowedAnswer(request.uid));
      });
      const { client, seen } = clientFor();

      assert.deepEqual(await call(client), ALLOWED);
      assert.deepEqual(await call(client), ALLOWED);

      assert.deepEqual(seen(), ['c1#1', 'c1#2', 'c2#1']);
      assert.equal(provider.requests.at(-1)?.uid, provider.requests.at(-2)?.uid, 'the retry resends the same review');
    });

    it('a fresh connection that dies before any answer byte: no retry → connection', async function () {
      provider.handle((_request, socket) => void socket.destroy());
      const { client, seen } = clientFor();

      const err = await callFailure(call(client));

      assert.equal(err.reason, 'connection');
      assert.match(
        err.message,
        new RegExp(`^cannot reach ${escape(provider.url('/admit'))}: (ECONNRESET|ERR_CONNECTION_CLOSED): `),
      );
      assert.deepEqual(seen(), ['c1#1']);
    });

    it('a reused connection reset in the middle of the answer: no retry → connection', async function () {
      provider.handle(async (request, socket) => {
        if (request.onConnection === 1) return void socket.write(allowedAnswer(request.uid));
        await writeSplit(socket, ['HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{"apiVersion":']);
        socket.destroy();
      });
      const { client, seen } = clientFor();

      assert.deepEqual(await call(client), ALLOWED);
      const err = await callFailure(call(client));

      assert.equal(err.reason, 'connection');
      assert.match(
        err.message,
        new RegExp(`^cannot reach ${escape(provider.url('/admit'))}: (ECONNRESET|ERR_CONNECTION_CLOSED): `),
      );
      assert.deepEqual(seen(), ['c1#1', 'c1#2']);
    });
  });

  describe('connection bound and queue', function () {
    it('with maxConnections 1 and a queue of 1, a third concurrent call fails at once; the others share the connection', async function () {
      const held: (() => void)[] = [];
      provider.handle((request, socket) => void held.push(() => socket.write(allowedAnswer(request.uid))));
      const { client, seen } = clientFor({ maxConnections: 1, maxQueuedCalls: 1 });

      const first = call(client);
      const second = call(client);
      const third = await callFailure(call(client));
      assert.equal(third.reason, 'connection');
      assert.equal(
        third.message,
        `cannot reach ${provider.url('/admit')}: ERR_POOL_FULL: 1 call(s) already wait for a connection`,
      );
      await provider.until('the first call arrives', () => held.length === 1);
      held.shift()!();
      assert.deepEqual(await first, ALLOWED);
      await provider.until('the queued call arrives', () => held.length === 1);
      held.shift()!();
      assert.deepEqual(await second, ALLOWED);

      assert.deepEqual(seen(), ['c1#1', 'c1#2']);
    });

    it('a queued call whose signal aborts → timeout, and it never reaches the provider', async function () {
      const held: (() => void)[] = [];
      provider.handle((request, socket) => void held.push(() => socket.write(allowedAnswer(request.uid))));
      const { client, seen } = clientFor({ maxConnections: 1 });
      const first = call(client);
      const controller = new AbortController();
      const queued = callFailure(call(client, controller.signal));
      await provider.until('the first call arrives', () => held.length === 1);

      controller.abort(new DOMException('step deadline exceeded', 'TimeoutError'));
      const err = await queued;
      held.shift()!();

      assert.equal(err.reason, 'timeout');
      assert.deepEqual(await first, ALLOWED);
      assert.deepEqual(seen(), ['c1#1']);
    });
  });

  describe('TLS', function () {
    it('sends SNI for a host name and none for an IP address', async function () {
      const byName = createProviderClient({
        url: provider.url('/admit', 'localhost'),
        ca: provider.caPem,
        apiVersion: ADMISSION_V1,
      });
      clients.push(byName);
      const byIp = clientFor().client;
      const from = provider.servernames.length;

      assert.deepEqual(await call(byName), ALLOWED);
      assert.deepEqual(await call(byIp), ALLOWED);

      assert.deepEqual(provider.servernames.slice(from), ['localhost', false]);
    });

    it('mTLS: presents the client certificate; without one the provider refuses the handshake', async function () {
      const mtls = await startRawProvider(answerAllowed, { clientCa: provider.caPem });
      try {
        const withCert = createProviderClient({
          url: mtls.url('/admit'),
          ca: mtls.caPem,
          apiVersion: ADMISSION_V1,
          clientCert: issueClientCertificate('admission-gateway-client'),
        });
        const without = createProviderClient({ url: mtls.url('/admit'), ca: mtls.caPem, apiVersion: ADMISSION_V1 });
        clients.push(withCert, without);

        assert.deepEqual(await call(withCert), ALLOWED);
        const err = await callFailure(call(without));

        assert.deepEqual(mtls.clientNames, ['admission-gateway-client']);
        assert.ok(err.reason === 'tls' || err.reason === 'connection', `reason ${err.reason}: ${err.message}`);
        assert.equal(mtls.requests.length, 1, 'the call without a certificate never reached the provider');
      } finally {
        await mtls.close();
      }
    });
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
