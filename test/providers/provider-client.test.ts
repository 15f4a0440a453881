/**
 * The provider client against a real HTTPS fake provider: every behaviour maps to one exact outcome —
 * a ProviderAnswer, or a ProviderCallError with its reason and a message naming the URL.
 */
import assert from 'node:assert/strict';
import { ADMISSION_V1, ADMISSION_V1BETA1, type AdmissionApiVersion } from '../../server/admission/types.js';
import type { KubeObject } from '../../server/plugin-api/types.js';
import { chooseReviewVersion, reviewApiVersion } from '../../server/protocol/versions.js';
import {
  MAX_RESPONSE_BYTES,
  SETTINGS_HEADER,
  createProviderClient,
  type ProviderClient,
  type ProviderTarget,
} from '../../server/providers/provider-client.js';
import type { ProviderAnswer } from '../../server/providers/provider-response.js';
import { podCreate, requestOf } from '../fixtures/reviews/index.js';
import {
  DENY_MESSAGE,
  OVERSIZED_BYTES,
  PROVIDER_PATCH,
  WARN_ANSWER,
  WRONG_UID,
  closedPortUrl,
  startFakeProvider,
  type FakeProvider,
} from '../helpers/fake-provider.js';
import { callFailure } from './call-failure.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const REQUEST = requestOf(podCreate());
/** The object as an earlier step left it: what the provider must receive instead of request.object. */
const MUTATED: KubeObject = {
  ...structuredClone(REQUEST.object!),
  metadata: { name: 'web', namespace: 'team-a', labels: { app: 'web', team: 'payments', 'managed-by': 'gw' } },
};
const ALLOWED: ProviderAnswer = { decision: { allowed: true }, warnings: [], auditAnnotations: {} };

describe('provider client (real HTTPS fake provider)', function () {
  let fake: FakeProvider;
  const clients: ProviderClient[] = [];
  const extraFakes: FakeProvider[] = [];

  before(async function () {
    fake = await startFakeProvider();
  });

  after(async function () {
    await fake.close();
  });

  beforeEach(function () {
    fake.reset();
  });

  afterEach(async function () {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await Promise.all(extraFakes.splice(0).map((f) => f.close()));
  });

  function clientFor(url: string, target: Partial<ProviderTarget> = {}, ca = fake.caPem): ProviderClient {
    const client = createProviderClient({ url, ca, apiVersion: ADMISSION_V1, ...target });
    clients.push(client);
    return client;
  }

  function call(
    client: ProviderClient,
    options: { mutating?: boolean; timeoutMs?: number; signal?: AbortSignal; object?: KubeObject } = {},
  ): Promise<ProviderAnswer> {
    return client.call({
      request: REQUEST,
      object: options.object ?? MUTATED,
      mutating: options.mutating ?? true,
      timeoutMs: options.timeoutMs ?? 2000,
      signal: options.signal ?? new AbortController().signal,
    });
  }

  describe('well-formed answers', function () {
    it('allow: an allowed answer, and the fake got a v1 AdmissionReview with a fresh uid, the granted timeout and the object so far', async function () {
      const url = fake.url('/allow');

      const answer = await call(clientFor(url), { timeoutMs: 1234 });

      assert.deepEqual(answer, ALLOWED);
      assert.equal(fake.calls.length, 1);
      const [received] = fake.calls;
      assert.equal(received?.method, 'POST');
      assert.equal(received?.path, '/allow');
      assert.deepEqual(received?.query, { timeout: '1234ms' });
      assert.equal(received?.timeoutMs, 1234);
      assert.equal(received?.headers['content-type'], 'application/json');
      assert.equal(received?.headers[SETTINGS_HEADER], undefined, 'no settings, no settings header');
      assert.match(received?.uid ?? '', UUID);
      assert.notEqual(received?.uid, REQUEST.uid);
      assert.deepEqual(received?.review, {
        apiVersion: ADMISSION_V1,
        kind: 'AdmissionReview',
        request: { ...REQUEST, uid: received?.uid, object: MUTATED },
      });
    });

    it('sends a fresh uid on every call', async function () {
      const client = clientFor(fake.url('/allow'));

      await call(client);
      await call(client);
      await call(client);

      const uids = fake.calls.map((c) => c.uid);
      assert.equal(new Set(uids).size, 3, `uids repeat: ${uids.join(', ')}`);
      assert.ok(!uids.includes(REQUEST.uid));
    });

    it('sends ?timeout= as the whole milliseconds granted', async function () {
      const client = clientFor(fake.url('/allow'));

      await call(client, { timeoutMs: 750.9 });
      await call(client, { timeoutMs: 1999.2 });

      assert.deepEqual(
        fake.calls.map((c) => c.timeout),
        ['750ms', '1999ms'],
      );
    });

    it('sends the entry settings as a JSON header, non-ASCII escaped', async function () {
      const settings = { team: 'payments', note: 'café ✓' };

      await call(clientFor(fake.url('/allow'), { settings }));

      assert.deepEqual(fake.calls[0]?.settings, settings);
      assert.equal(fake.calls[0]?.headers[SETTINGS_HEADER], '{"team":"payments","note":"caf\\u00e9 \\u2713"}');
    });

    it('deny: a decision with the provider message and code', async function () {
      const answer = await call(clientFor(fake.url('/deny')));

      assert.deepEqual(answer, { ...ALLOWED, decision: { allowed: false, message: DENY_MESSAGE, code: 403 } });
    });

    it('patch: the decoded JSON patch operations', async function () {
      const answer = await call(clientFor(fake.url('/patch')));

      assert.deepEqual(answer, { ...ALLOWED, decision: { allowed: true, patch: PROVIDER_PATCH } });
    });

    it('warn: warnings and audit annotations', async function () {
      const answer = await call(clientFor(fake.url('/warn')));

      assert.deepEqual(answer, {
        ...ALLOWED,
        warnings: [...WARN_ANSWER.warnings],
        auditAnnotations: { ...WARN_ANSWER.auditAnnotations },
      });
    });

    it('v1beta1-only with admissionReviewVersions [v1beta1]: sends and accepts v1beta1', async function () {
      const url = fake.url('/v1beta1-only');
      const apiVersion: AdmissionApiVersion = reviewApiVersion(chooseReviewVersion(['v1beta1']));
      assert.equal(apiVersion, ADMISSION_V1BETA1);

      const answer = await call(clientFor(url, { apiVersion }));

      assert.deepEqual(answer, ALLOWED);
      assert.equal(fake.calls[0]?.apiVersion, ADMISSION_V1BETA1);
    });

    it('v1beta1-only with the default [v1, v1beta1]: v1 is preferred, so the provider refuses it (http_status)', async function () {
      const url = fake.url('/v1beta1-only');

      const err = await callFailure(
        call(clientFor(url, { apiVersion: reviewApiVersion(chooseReviewVersion(['v1', 'v1beta1'])) })),
      );

      assert.equal(err.reason, 'http_status');
      assert.equal(err.message, `${url} answered HTTP 400`);
    });

    it('patch without patchType is accepted from a v1beta1 provider (as the apiserver does)', async function () {
      const answer = await call(clientFor(fake.url('/patch-without-type'), { apiVersion: ADMISSION_V1BETA1 }));

      assert.deepEqual(answer, { ...ALLOWED, decision: { allowed: true, patch: PROVIDER_PATCH } });
    });

    it('reuses one keep-alive TLS connection for sequential calls', async function () {
      const client = clientFor(fake.url('/allow'));
      const before = fake.connections;

      await call(client);
      // Reviews reach the client from separate I/O callbacks. Within the very same macrotask undici's Pool
      // still counts the first connection busy (its drain runs on a later turn) and dials a second one.
      await new Promise<void>((resolve) => setImmediate(resolve));
      await call(client);

      assert.equal(fake.connections - before, 1, 'two calls, one TLS handshake');
      assert.equal(fake.calls[0]?.connection, fake.calls[1]?.connection);
    });

    it('getJson: GETs <url>/<path> and parses it', async function () {
      const document = { handlers: [{ name: 'check', phase: 'validate' }] };
      fake.setDiscovery({ document });

      const body = await clientFor(fake.url('/hooks')).getJson('discovery', 1000);

      assert.deepEqual(body, document);
      assert.deepEqual(
        fake.calls.map((c) => [c.method, c.path]),
        [['GET', '/hooks/discovery']],
      );
    });
  });

  describe('failures', function () {
    it('500 → http_status', async function () {
      const url = fake.url('/500');

      const err = await callFailure(call(clientFor(url)));

      assert.equal(err.reason, 'http_status');
      assert.equal(err.message, `${url} answered HTTP 500`);
    });

    it('garbage → invalid_response', async function () {
      const url = fake.url('/garbage');

      const err = await callFailure(call(clientFor(url)));

      assert.equal(err.reason, 'invalid_response');
      assert.equal(err.message, `${url}: response body is not JSON (starts with "<html>this is not JSON</html>")`);
    });

    it('wrong uid → invalid_response naming the uid that was sent', async function () {
      const url = fake.url('/wrong-uid');

      const err = await callFailure(call(clientFor(url)));

      const sent = fake.calls[0]?.uid ?? '';
      assert.match(sent, UUID);
      assert.equal(err.reason, 'invalid_response');
      assert.equal(err.message, `${url}: expected response.uid="${sent}", got "${WRONG_UID}"`);
    });

    it('redirect → http_status, and the redirect is not followed', async function () {
      const url = fake.url('/redirect');

      const err = await callFailure(call(clientFor(url)));

      assert.equal(err.reason, 'http_status');
      assert.equal(err.message, `${url} answered HTTP 302 (redirect to /allow not followed)`);
      assert.deepEqual(
        fake.calls.map((c) => c.path),
        ['/redirect'],
      );
    });

    it('a body over the 20 MiB cap (chunked) → invalid_response, and the client stops reading', async function () {
      this.timeout(20_000);
      const url = fake.url('/oversized');
      assert.ok(OVERSIZED_BYTES > MAX_RESPONSE_BYTES);

      const err = await callFailure(call(clientFor(url)));

      assert.equal(err.reason, 'invalid_response');
      assert.equal(err.message, `response from ${url} exceeds ${MAX_RESPONSE_BYTES} bytes`);
      await fake.until('the fake sees the client go away', () => fake.calls[0]?.clientClosed === true);
    });

    it('a Content-Length over the cap → invalid_response before reading the body', async function () {
      const url = fake.url('/oversized-declared');

      const err = await callFailure(call(clientFor(url)));

      assert.equal(err.reason, 'invalid_response');
      assert.equal(err.message, `response from ${url} declares ${OVERSIZED_BYTES} bytes, over ${MAX_RESPONSE_BYTES}`);
      await fake.until('the fake sees the client go away', () => fake.calls[0]?.clientClosed === true);
    });

    it('honours an injected maxResponseBytes', async function () {
      const url = fake.url('/oversized-2000');

      const err = await callFailure(call(clientFor(url, { maxResponseBytes: 1000 })));

      assert.equal(err.reason, 'invalid_response');
      assert.equal(err.message, `response from ${url} exceeds 1000 bytes`);
    });

    it('an untrusted certificate (signed by another CA) → tls, and no request reaches the provider', async function () {
      const untrusted = await startFakeProvider({ untrusted: true });
      extraFakes.push(untrusted);
      const url = untrusted.url('/allow');

      const err = await callFailure(call(clientFor(url, {}, untrusted.caPem)));

      assert.equal(err.reason, 'tls');
      assert.match(err.message, new RegExp(`^TLS with ${escape(url)} failed: UNABLE_TO_VERIFY_LEAF_SIGNATURE: `));
      assert.equal(untrusted.calls.length, 0);
    });

    it('a certificate without the dialled IP among its SANs → tls', async function () {
      this.timeout(10_000);
      const mismatch = await startFakeProvider({ sans: { dnsNames: ['provider.example'], ipAddresses: [] } });
      extraFakes.push(mismatch);
      const url = mismatch.url('/allow');

      const err = await callFailure(call(clientFor(url, {}, mismatch.caPem)));

      assert.equal(err.reason, 'tls');
      assert.match(err.message, new RegExp(`^TLS with ${escape(url)} failed: ERR_TLS_CERT_ALTNAME_INVALID: `));
      assert.equal(mismatch.calls.length, 0);
    });

    it('connection refused → connection', async function () {
      const url = await closedPortUrl('/allow');

      const err = await callFailure(call(clientFor(url)));

      assert.equal(err.reason, 'connection');
      assert.match(err.message, new RegExp(`^cannot reach ${escape(url)}: ECONNREFUSED: `));
    });

    it('hang with a signal that never aborts → timeout from the backstop timer, and the fake sees the connection closed', async function () {
      const url = fake.url('/hang');

      const err = await callFailure(call(clientFor(url), { timeoutMs: 150 }));

      assert.equal(err.reason, 'timeout');
      assert.equal(err.message, `no answer from ${url} in time`);
      await fake.until('the fake sees the hanging request closed', () => fake.calls[0]?.clientClosed === true);
    });

    it('gives the provider its whole granted time, even while other calls are in flight', async function () {
      // undici's own headers timeout runs on a shared ~500 ms ticker: while another call keeps that ticker
      // running, a timer can fire up to ~500 ms before its delay. Three calls answered 98 ms before a
      // 998 ms grant, each at another phase of the ticker, would (almost surely) have met one early firing.
      this.timeout(10_000);
      const inFlight = new AbortController();
      const hanging = callFailure(call(clientFor(fake.url('/hang')), { timeoutMs: 8000, signal: inFlight.signal }));
      await fake.until('the other call is in flight', () => fake.calls.length === 1);
      const client = clientFor(fake.url('/slow-900'));

      try {
        for (let i = 0; i < 3; i++) assert.deepEqual(await call(client, { timeoutMs: 998 }), ALLOWED);
      } finally {
        inFlight.abort();
        await hanging;
      }

      assert.deepEqual(
        fake.calls.map((c) => [c.path, c.timeout]),
        [
          ['/hang', '8000ms'],
          ['/slow-900', '998ms'],
          ['/slow-900', '998ms'],
          ['/slow-900', '998ms'],
        ],
      );
    });

    it('hang until the step signal aborts → timeout, and the fake sees the connection closed', async function () {
      const url = fake.url('/hang');
      const controller = new AbortController();
      const pending = callFailure(call(clientFor(url), { timeoutMs: 10_000, signal: controller.signal }));

      await fake.until('the request reaches the fake', () => fake.calls.length === 1);
      controller.abort(new DOMException('step deadline exceeded', 'TimeoutError'));
      const err = await pending;

      assert.equal(err.reason, 'timeout');
      assert.equal(err.message, `no answer from ${url} in time`);
      await fake.until('the fake sees the hanging request closed', () => fake.calls[0]?.clientClosed === true);
    });

    it('a patch from a validating call → invalid_response', async function () {
      const url = fake.url('/patch');

      const err = await callFailure(call(clientFor(url), { mutating: false }));

      assert.equal(err.reason, 'invalid_response');
      assert.equal(err.message, `${url}: validating webhook may not return response.patch`);
    });

    it('a patch without patchType from a v1 provider → invalid_response', async function () {
      const url = fake.url('/patch-without-type');

      const err = await callFailure(call(clientFor(url)));

      assert.equal(err.reason, 'invalid_response');
      assert.equal(err.message, `${url}: webhook returned response.patch but not response.patchType`);
    });

    it('an unknown path (404) → http_status', async function () {
      const url = fake.url('/nothing-here');

      const err = await callFailure(call(clientFor(url)));

      assert.equal(err.reason, 'http_status');
      assert.equal(err.message, `${url} answered HTTP 404`);
    });
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
