/**
 * The provider client on the wire, against a raw TLS server that writes exact bytes: interim and malformed
 * answers, keep-alive reuse and the retry rule, servers closing or resetting connections, the response cap
 * and the head bound, the connection bound and queue, SNI and mTLS. Every case asserts what the caller gets
 * (the answer or the ProviderCallError) and what the server saw (requests per connection).
 */
import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { ADMISSION_V1 } from '../../server/admission/types.js';
import {
  createProviderClient,
  type ProviderClient,
  type ProviderTarget,
} from '../../server/providers/provider-client.js';
import { MAX_RESPONSE_HEAD_BYTES } from '../../server/providers/provider-transport.js';
import type { ProviderAnswer } from '../../server/providers/provider-response.js';
import { podCreate, requestOf } from '../fixtures/reviews/index.js';
import {
  allowedAnswer,
  issueClientCertificate,
  startRawProvider,
  writeSplit,
  type RawHandler,
  type RawProvider,
} from './raw-provider.js';
import { eventually } from '../helpers/wait.js';
import { callFailure } from './call-failure.js';

const REQUEST = requestOf(podCreate());
const ALLOWED: ProviderAnswer = { decision: { allowed: true }, warnings: [], auditAnnotations: {} };

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

  /**
   * The next call, as the next review would make it: from another I/O callback. undici frees a connection
   * for its next request only on the event-loop turn after an answer; a call made in the same turn as the
   * answer would be given a second connection.
   */
  async function callLater(client: ProviderClient, signal?: AbortSignal): Promise<ProviderAnswer> {
    await nextTurn();
    return call(client, signal);
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

  describe('answers', function () {
    it('an interim 103 Early Hints is skipped', async function () {
      provider.handle(
        (request, socket) =>
          void socket.write(`HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n${allowedAnswer(request.uid)}`),
      );
      const { client } = clientFor();

      assert.deepEqual(await call(client), ALLOWED);
    });

    it('an unasked-for 100 Continue → connection (undici refuses it as a bad response)', async function () {
      provider.handle(
        (request, socket) => void socket.write(`HTTP/1.1 100 Continue\r\n\r\n${allowedAnswer(request.uid)}`),
      );
      const { client } = clientFor();

      const err = await callFailure(call(client));

      assert.equal(err.reason, 'connection');
      assert.equal(err.message, `cannot reach ${provider.url('/admit')}: UND_ERR_SOCKET: bad response`);
    });

    it('a malformed status line → connection, saying the answer is not HTTP/1.1', async function () {
      provider.handle((_request, socket) => void socket.write('HTPT/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
      const { client } = clientFor();

      const err = await callFailure(call(client));

      assert.equal(err.reason, 'connection');
      assert.match(
        err.message,
        new RegExp(`^calling ${escape(provider.url('/admit'))} failed: Response does not match the HTTP/1.1 protocol`),
      );
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
      assert.deepEqual(await callLater(client), ALLOWED);
      assert.deepEqual(seen(), ['c1#1', 'c1#2']);
    });

    it('an HTTP 500 with a large body → http_status at its head, and the client closes the connection', async function () {
      provider.handle(async (_request, socket) => {
        socket.write('HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n');
        const chunk = `4000\r\n${'e'.repeat(0x4000)}\r\n`;
        for (let i = 0; i < 64 && !socket.destroyed; i++) await writeSplit(socket, [chunk]);
        if (!socket.destroyed) socket.end('0\r\n\r\n');
      });
      const { client } = clientFor();
      const closedBefore = provider.closed;

      const err = await callFailure(call(client));

      assert.equal(err.reason, 'http_status');
      assert.equal(err.message, `${provider.url('/admit')} answered HTTP 500`);
      await provider.until('the client closes the connection', () => provider.closed === closedBefore + 1);
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

  describe('a hostile response head', function () {
    it('a head that never ends, one byte per TLS record → invalid_response at the bound; other calls are answered meanwhile', async function () {
      this.timeout(60_000);
      let written = 0;
      provider.handle(async (request, socket) => {
        if (request.connection !== hostileConnection) return void socket.write(allowedAnswer(request.uid));
        socket.write('HTTP/1.1 200 OK\r\nX-Endless: ');
        // One byte per write is one TLS record; the pause lets each arrive as a read of its own.
        while (!socket.destroyed) {
          await new Promise<void>((resolve) => socket.write('a', () => resolve()));
          written++;
          await nextTurn();
        }
      });
      const { client, seen } = clientFor();
      const hostileConnection = provider.connections + 1;
      const closedBefore = provider.closed;

      const hostile = callFailure(
        client.call({
          request: REQUEST,
          object: REQUEST.object,
          mutating: true,
          timeoutMs: 60_000,
          signal: new AbortController().signal,
        }),
      );
      await eventually('the provider has trickled a thousand bytes', () => written >= 1000);
      assert.deepEqual(await call(client), ALLOWED, 'a call on another connection, while the head trickles in');
      const err = await hostile;

      assert.equal(err.reason, 'invalid_response');
      assert.equal(
        err.message,
        `response head from ${provider.url('/admit')} has over ${MAX_RESPONSE_HEAD_BYTES} bytes of header fields`,
      );
      await provider.until('the provider sees the client close the connection', () => provider.closed > closedBefore);
      assert.ok(written >= MAX_RESPONSE_HEAD_BYTES - 'X-Endless'.length, `refused after ${written} bytes`);
      assert.deepEqual(seen(), ['c1#1', 'c2#1']);
    });
  });

  describe('keep-alive and dead connections', function () {
    /** The next call's failure, and the failure of its connection: reset, or closed by the provider. */
    const closedUnder = (url: string) => new RegExp(`^cannot reach ${escape(url)}: (ECONNRESET|UND_ERR_SOCKET): `);

    it('sequential calls share one TLS connection', async function () {
      const { client, seen } = clientFor();

      for (let i = 0; i < 3; i++) assert.deepEqual(await callLater(client), ALLOWED);

      assert.deepEqual(seen(), ['c1#1', 'c1#2', 'c1#3']);
    });

    it('the provider closes an idle connection: the next call goes out on a new one', async function () {
      provider.handle((request, socket) => void socket.end(allowedAnswer(request.uid)));
      const { client, seen } = clientFor();
      const closedBefore = provider.closed;

      assert.deepEqual(await call(client), ALLOWED);
      await provider.until('the idle connection is closed', () => provider.closed === closedBefore + 1);
      assert.deepEqual(await callLater(client), ALLOWED);

      assert.deepEqual(seen(), ['c1#1', 'c2#1']);
    });

    it('a reused connection that dies before any answer byte: the call is retried once on a fresh connection', async function () {
      provider.handle((request, socket) => {
        // The second request on the first connection: the provider drops it unanswered (an idle close racing it).
        if (request.connection === first && request.onConnection === 2) socket.destroy();
        else socket.write(allowedAnswer(request.uid));
      });
      const { client, seen } = clientFor();
      const first = provider.connections + 1;

      assert.deepEqual(await call(client), ALLOWED);
      assert.deepEqual(await callLater(client), ALLOWED);

      assert.deepEqual(seen(), ['c1#1', 'c1#2', 'c2#1']);
      assert.equal(provider.requests.at(-1)?.uid, provider.requests.at(-2)?.uid, 'the retry resends the same review');
    });

    it('the retry fails on its fresh connection too: no second retry → connection', async function () {
      provider.handle((request, socket) => {
        if (request.connection === first && request.onConnection === 1) socket.write(allowedAnswer(request.uid));
        else socket.destroy();
      });
      const { client, seen } = clientFor();
      const first = provider.connections + 1;

      assert.deepEqual(await call(client), ALLOWED);
      const err = await callFailure(callLater(client));

      assert.equal(err.reason, 'connection');
      assert.match(err.message, closedUnder(provider.url('/admit')));
      assert.deepEqual(seen(), ['c1#1', 'c1#2', 'c2#1']);
    });

    it('a fresh connection that dies before any answer byte: no retry → connection', async function () {
      provider.handle((_request, socket) => void socket.destroy());
      const { client, seen } = clientFor();

      const err = await callFailure(call(client));

      assert.equal(err.reason, 'connection');
      assert.match(err.message, closedUnder(provider.url('/admit')));
      assert.deepEqual(seen(), ['c1#1']);
    });

    const partialAnswers = [
      ['closed after the first bytes of the head', 'HTTP/1.1 2'],
      ['reset in the middle of the answer', 'HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{"apiVersion":'],
    ] as const;
    for (const [what, partial] of partialAnswers) {
      it(`a reused connection ${what}: no retry → connection`, async function () {
        provider.handle(async (request, socket) => {
          if (request.onConnection === 1) return void socket.write(allowedAnswer(request.uid));
          await writeSplit(socket, [partial]);
          socket.destroy();
        });
        const { client, seen } = clientFor();

        assert.deepEqual(await call(client), ALLOWED);
        const err = await callFailure(callLater(client));

        assert.equal(err.reason, 'connection');
        assert.match(err.message, closedUnder(provider.url('/admit')));
        assert.deepEqual(seen(), ['c1#1', 'c1#2']);
      });
    }

    it('a call on a reused connection whose signal aborts before the answer: timeout, no retry', async function () {
      provider.handle((request, socket) => {
        if (request.onConnection === 1) socket.write(allowedAnswer(request.uid));
      });
      const { client, seen } = clientFor();
      const closedBefore = provider.closed;

      assert.deepEqual(await call(client), ALLOWED);
      const controller = new AbortController();
      const pending = callFailure(callLater(client, controller.signal));
      await provider.until('the second call arrives', () => seen().length === 2);
      controller.abort(new DOMException('step deadline exceeded', 'TimeoutError'));
      const err = await pending;

      assert.equal(err.reason, 'timeout');
      await provider.until('the client closes the connection', () => provider.closed === closedBefore + 1);
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

    it('a queued call whose signal aborts → timeout at once; it never reaches the provider, nor costs the connection', async function () {
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
      const next = callLater(client);
      await provider.until('the next call arrives', () => held.length === 1);
      held.shift()!();
      assert.deepEqual(await next, ALLOWED);
      assert.deepEqual(seen(), ['c1#1', 'c1#2']);
    });
    it('close(): the call in flight and the one waiting are answered, a new one is refused, then the connection closes', async function () {
      const held: (() => void)[] = [];
      provider.handle((request, socket) => void held.push(() => socket.write(allowedAnswer(request.uid))));
      const { client, seen } = clientFor({ maxConnections: 1 });
      const closedBefore = provider.closed;
      const first = call(client);
      const second = call(client);
      await provider.until('the first call arrives', () => held.length === 1);

      const closing = client.close();
      const refused = await callFailure(call(client));
      held.shift()!();
      await provider.until('the waiting call arrives', () => held.length === 1);
      held.shift()!();

      assert.deepEqual(await first, ALLOWED);
      assert.deepEqual(await second, ALLOWED);
      await closing;
      assert.equal(refused.reason, 'connection');
      assert.equal(refused.message, `cannot reach ${provider.url('/admit')}: ERR_POOL_CLOSED: the client is closed`);
      await provider.until('the connection is closed', () => provider.closed === closedBefore + 1);
      assert.deepEqual(seen(), ['c1#1', 'c1#2']);
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
