import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { Agent } from 'undici';
import { generateCertificates, writeCertificates } from '../../certs/generate.js';
import type { AdmissionReview } from '../../server/admission/types.js';
import type { Reviewer } from '../../server/dispatch/reviewer.js';
import { ByteBudget } from '../../server/http/byte-budget.js';
import { createWebhookApp } from '../../server/http/webhook-app.js';
import { createLogger } from '../../server/base/log.js';
import { createMetrics } from '../../server/metrics/metrics.js';
import type { KubeObject } from '../../server/plugin-api/index.js';
import { podCreate, podDelete, requestOf, setAt } from '../fixtures/reviews/index.js';
import {
  chunked,
  reviewOf,
  sendRequest,
  startHarness,
  type Harness,
  type HttpAnswer,
} from '../helpers/gateway-harness.js';
import { decodePatch, patchedObject } from '../helpers/patch.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { createTestPlugins, type TestPlugins } from '../helpers/test-plugins.js';
import { peerFingerprint } from '../helpers/peer-fingerprint.js';
import { eventually } from '../helpers/wait.js';

const SHIPPED_CONFIG = new URL('../../gateway.yaml', import.meta.url);
const POD_UID = '0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21';
const DELETE_UID = 'a3f1c2d4-5e6b-4a7c-9d8e-1f2a3b4c5d6e';

/** The fixture Pod as the shipped chain leaves it: the admitted label, and defaults for `log-shipper`. */
function podAfterShippedChain(): KubeObject {
  const object = requestOf(podCreate()).object!;
  object.metadata!.labels!['admissiongateway.io/admitted'] = 'true';
  setAt(object, 'spec.containers[1].resources', {
    requests: { cpu: '100m', memory: '128Mi' },
    limits: { memory: '512Mi' },
  });
  return object;
}

/** A custom resource (group example.com) that no shipped plugin knows. */
function widgetCreate(): AdmissionReview {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
      kind: { group: 'example.com', version: 'v1', kind: 'Widget' },
      resource: { group: 'example.com', version: 'v1', resource: 'widgets' },
      name: 'sprocket',
      namespace: 'team-a',
      operation: 'CREATE',
      userInfo: { username: 'alice@example.com' },
      object: {
        apiVersion: 'example.com/v1',
        kind: 'Widget',
        metadata: { name: 'sprocket', namespace: 'team-a' },
        spec: { size: 3 },
      },
      oldObject: null,
      dryRun: false,
    },
  };
}

describe('webhook server over HTTPS', function () {
  let harness: Harness | undefined;
  let test: TestPlugins;

  async function start(yaml: string, extra: Partial<Parameters<typeof startHarness>[0]> = {}): Promise<Harness> {
    harness = await startHarness({ yaml, plugins: test.plugins, ...extra });
    return harness;
  }

  beforeEach(function () {
    test = createTestPlugins();
  });

  afterEach(async function () {
    test.gate.release();
    await harness?.close();
    harness = undefined;
  });

  describe('given the shipped gateway.yaml chain', function () {
    let h: Harness;
    beforeEach(async function () {
      h = await start(await readFile(SHIPPED_CONFIG, 'utf8'));
    });

    it('answers a Pod CREATE on /mutate with the uid, apiVersion and kind echoed and one JSONPatch', async function () {
      const answer = await h.post('/mutate', podCreate());

      assert.equal(answer.status, 200);
      assert.match(String(answer.headers['content-type']), /^application\/json/);
      const review = reviewOf(answer);
      const { patch, ...rest } = review.response;
      assert.deepEqual(
        { ...review, response: rest },
        {
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: { uid: POD_UID, allowed: true, patchType: 'JSONPatch' },
        },
      );
      assert.equal(typeof patch, 'string');
      assert.deepEqual(decodePatch(review.response), [
        { op: 'add', path: '/metadata/labels/admissiongateway.io~1admitted', value: 'true' },
        { op: 'add', path: '/spec/containers/1/resources/requests', value: { cpu: '100m', memory: '128Mi' } },
        { op: 'add', path: '/spec/containers/1/resources/limits', value: { memory: '512Mi' } },
      ]);
    });

    it('returns a patch that, applied to the fixture, adds the configured label and resource defaults', async function () {
      const review = reviewOf(await h.post('/mutate', podCreate()));

      const patched = patchedObject(requestOf(podCreate()).object!, review.response);

      assert.deepEqual(patched, podAfterShippedChain());
    });

    it('counts the review and each step outcome exactly once', async function () {
      await h.post('/mutate', podCreate());

      assert.equal(
        await h.metric('admission_gateway_requests_total', { phase: 'mutate', operation: 'CREATE', allowed: 'true' }),
        1,
      );
      assert.equal(await h.metric('admission_gateway_request_duration_seconds_count', { phase: 'mutate' }), 1);
      const outcomes = {
        'default-labels': await h.metric('admission_gateway_step_calls_total', {
          step: 'default-labels',
          phase: 'mutate',
          outcome: 'patched',
        }),
        'resource-defaults': await h.metric('admission_gateway_step_calls_total', {
          step: 'resource-defaults',
          phase: 'mutate',
          outcome: 'patched',
        }),
        'image-policy': await h.metric('admission_gateway_step_calls_total', {
          step: 'image-policy',
          phase: 'mutate',
          outcome: 'allowed',
        }),
      };
      // The shipped image-policy configures no mirrors, so it has no mutate step to count.
      assert.deepEqual(outcomes, { 'default-labels': 1, 'resource-defaults': 1, 'image-policy': 0 });
      assert.equal(await h.metric('admission_gateway_inflight_requests'), 0);
    });

    it('answers the validate phase with the warn-mode findings as warnings and allows', async function () {
      const review = reviewOf(await h.post('/validate', podCreate()));

      assert.deepEqual(review, {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        response: {
          uid: POD_UID,
          allowed: true,
          warnings: [
            'pod-security: spec.containers[1]: must run as non-root: set securityContext.runAsNonRoot: true or a non-zero runAsUser (mode warn: not enforced)',
          ],
        },
      });
    });

    it('answers a v1beta1 review with a v1beta1 AdmissionReview carrying the same patch', async function () {
      const review = podCreate();
      review.apiVersion = 'admission.k8s.io/v1beta1';

      const answer = reviewOf(await h.post('/mutate', review));

      assert.equal(answer.apiVersion, 'admission.k8s.io/v1beta1');
      assert.equal(answer.kind, 'AdmissionReview');
      assert.equal(answer.response.uid, POD_UID);
      assert.deepEqual(patchedObject(requestOf(podCreate()).object!, answer.response), podAfterShippedChain());
    });

    it('answers a DELETE with a bare allow: no patch and no patchType', async function () {
      const review = reviewOf(await h.post('/mutate', podDelete()));

      assert.deepEqual(review, {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        response: { uid: DELETE_UID, allowed: true },
      });
    });

    it('leaves an instance of a custom resource alone: its mutating steps only match namespaced workloads and pod specs', async function () {
      const review = reviewOf(await h.post('/mutate', widgetCreate()));

      assert.deepEqual(review.response, { uid: '7c9e6679-7425-40de-944b-e07fc1f90ae7', allowed: true });
      for (const step of ['default-labels', 'resource-defaults']) {
        assert.equal(
          await h.metric('admission_gateway_step_calls_total', { step, phase: 'mutate', outcome: 'skipped' }),
          1,
          step,
        );
      }
    });
  });

  describe("given default-labels with the plugin's own match", function () {
    it('labels an instance of a custom resource (group example.com) through its `*` rule', async function () {
      const h = await start(
        "chain:\n  - plugin: default-labels\n    settings: { labels: { admissiongateway.io/admitted: 'true' } }\n",
      );

      const review = reviewOf(await h.post('/mutate', widgetCreate()));

      assert.equal(review.response.allowed, true);
      assert.deepEqual(decodePatch(review.response), [
        { op: 'add', path: '/metadata/labels', value: { 'admissiongateway.io/admitted': 'true' } },
      ]);
    });
  });

  describe('given a DELETE request', function () {
    let provider: FakeProvider | undefined;

    afterEach(async function () {
      await provider?.close();
      provider = undefined;
    });

    /** An in-process mutating plugin, then a real HTTPS provider that answers every call with a patch. */
    async function chain(policy: 'Fail' | 'Ignore'): Promise<string> {
      provider = await startFakeProvider();
      return `
chain:
  - plugin: add-label
    settings: { tag: labeller, labels: { touched: 'yes' } }
  - provider: patcher
    url: ${provider.url('/patch')}
    caBundle: ${provider.caBundle}
    phases: [mutate]
    failurePolicy: ${policy}
`;
    }

    it('never calls an in-process mutating plugin, and reports it skipped', async function () {
      const h = await start(await chain('Ignore'));

      await h.post('/mutate', podDelete());

      assert.deepEqual(test.calls.sequence(), []);
      assert.equal(
        await h.metric('admission_gateway_step_calls_total', {
          step: 'add-label',
          phase: 'mutate',
          outcome: 'skipped',
        }),
        1,
      );
    });

    it('treats a patch from a remote provider as that step failing (Fail: code 500, no patch)', async function () {
      const h = await start(await chain('Fail'));

      const review = reviewOf(await h.post('/mutate', podDelete()));

      assert.deepEqual(review.response, {
        uid: DELETE_UID,
        allowed: false,
        status: {
          code: 500,
          reason: 'InternalError',
          message:
            'provider "patcher" failed (invalid_patch): returned a patch, but a DELETE request\'s object cannot be modified',
        },
      });
      assert.deepEqual(
        provider!.calls.map((c) => [c.path, c.operation]),
        [['/patch', 'DELETE']],
      );
      assert.notEqual(provider!.calls[0]?.uid, DELETE_UID, 'a provider gets a fresh uid per call');
    });

    it('treats a patch from a remote provider as that step failing (Ignore: allowed, failed open, no patch)', async function () {
      const h = await start(await chain('Ignore'));

      const review = reviewOf(await h.post('/mutate', podDelete()));

      assert.deepEqual(review.response, {
        uid: DELETE_UID,
        allowed: true,
        warnings: [
          "patcher: failed open (invalid_patch): returned a patch, but a DELETE request's object cannot be modified",
        ],
        auditAnnotations: {
          'patcher.failed-open': "invalid_patch: returned a patch, but a DELETE request's object cannot be modified",
        },
      });
      assert.equal(await h.metric('admission_gateway_fail_open_total', { step: 'patcher' }), 1);
    });

    it('applies the same provider patch on CREATE, so the refusal on DELETE is about the operation', async function () {
      const h = await start(await chain('Fail'));

      const review = reviewOf(await h.post('/mutate', podCreate()));

      assert.equal(review.response.allowed, true);
      assert.deepEqual(decodePatch(review.response), [
        { op: 'add', path: '/metadata/labels/touched', value: 'yes' },
        { op: 'add', path: '/metadata/labels/provider', value: 'patched' },
      ]);
    });
  });

  describe('given a dry-run request', function () {
    const yaml = `
chain:
  - plugin: records-calls
    name: has-side-effects
    sideEffects: Some
    settings: { tag: has-side-effects }
  - plugin: records-calls
    name: no-side-effects
    settings: { tag: no-side-effects }
`;

    it('skips a step with sideEffects: Some and counts it skipped', async function () {
      const h = await start(yaml);
      const review = podCreate();
      requestOf(review).dryRun = true;

      const answer = reviewOf(await h.post('/mutate', review));

      assert.deepEqual(answer.response, { uid: POD_UID, allowed: true });
      assert.deepEqual(test.calls.sequence(), ['no-side-effects:call']);
      assert.equal(
        await h.metric('admission_gateway_step_calls_total', {
          step: 'has-side-effects',
          phase: 'mutate',
          outcome: 'skipped',
        }),
        1,
      );
    });

    it('runs the same step when the request is not a dry run', async function () {
      const h = await start(yaml);

      await h.post('/mutate', podCreate());

      assert.deepEqual(test.calls.sequence(), ['has-side-effects:call', 'no-side-effects:call']);
      assert.equal(
        await h.metric('admission_gateway_step_calls_total', {
          step: 'has-side-effects',
          phase: 'mutate',
          outcome: 'skipped',
        }),
        0,
      );
    });
  });

  describe('given bad input', function () {
    const yaml = `
server:
  maxRequestBytes: 4096
chain:
  - plugin: add-label
    settings: { labels: { checked: 'yes' } }
`;
    /** About 10 KiB: a valid review padded with an annotation. */
    function oversized(): string {
      const review = podCreate();
      requestOf(review).object!.metadata!.annotations = { padding: 'x'.repeat(10 * 1024) };
      return JSON.stringify(review);
    }

    function errorReview(code: number, reason: string, message: string, uid = '') {
      return {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        response: { uid, allowed: false, status: { code, reason, message } },
      };
    }

    async function assertStillServing(h: Harness): Promise<void> {
      const ready = await h.health('/readyz');
      assert.deepEqual({ status: ready.status, text: ready.text }, { status: 200, text: 'ok' });
      const next = reviewOf(await h.post('/mutate', podCreate()));
      assert.equal(next.response.allowed, true);
      assert.deepEqual(decodePatch(next.response), [{ op: 'add', path: '/metadata/labels/checked', value: 'yes' }]);
    }

    const cases: ReadonlyArray<{
      name: string;
      send: (h: Harness) => Promise<HttpAnswer>;
      status: number;
      body: unknown;
      invalidCode?: string;
    }> = [
      {
        name: 'answers 415 in protocol to a text/plain body',
        send: (h) => h.post('/mutate', JSON.stringify(podCreate()), { 'content-type': 'text/plain' }),
        status: 415,
        body: errorReview(415, 'UnsupportedMediaType', 'contentType=text/plain, expected application/json'),
        invalidCode: '415',
      },
      {
        name: 'answers 400 in protocol to malformed JSON',
        send: (h) => h.post('/mutate', '{"apiVersion": "admission.k8s.io/v1", "kind": '),
        status: 400,
        body: errorReview(
          400,
          'BadRequest',
          `request body is not valid JSON: ${jsonError('{"apiVersion": "admission.k8s.io/v1", "kind": ')}`,
        ),
        invalidCode: '400',
      },
      {
        name: 'answers 400 in protocol to a review without request.uid',
        send: (h) => {
          const review = podCreate();
          delete (requestOf(review) as { uid?: string }).uid;
          return h.post('/mutate', review);
        },
        status: 400,
        body: errorReview(400, 'BadRequest', 'request.uid is missing or empty'),
        invalidCode: '400',
      },
      {
        name: 'answers 413 in protocol to a 10 KiB body declared with Content-Length',
        send: (h) => h.post('/mutate', oversized()),
        status: 413,
        body: errorReview(
          413,
          'RequestEntityTooLarge',
          'request body exceeds the 4096 byte limit (server.maxRequestBytes)',
        ),
        invalidCode: '413',
      },
      {
        name: 'answers 413 in protocol to a 10 KiB chunked body',
        send: (h) => h.post('/mutate', chunked(oversized())),
        status: 413,
        body: errorReview(
          413,
          'RequestEntityTooLarge',
          'request body exceeds the 4096 byte limit (server.maxRequestBytes)',
        ),
        invalidCode: '413',
      },
      {
        name: 'answers 405 with Allow: POST to a GET on /mutate',
        send: (h) => h.send('GET', '/mutate'),
        status: 405,
        body: { error: 'GET /mutate: expected POST with an AdmissionReview' },
      },
      {
        name: 'answers 405 with Allow: POST to a PUT on /validate/ignore',
        send: (h) => h.send('PUT', '/validate/ignore'),
        status: 405,
        body: { error: 'PUT /validate/ignore: expected POST with an AdmissionReview' },
      },
      {
        name: 'answers 404 naming the routes to an unknown path',
        send: (h) => h.post('/mutating', podCreate()),
        status: 404,
        body: {
          error:
            'no webhook at /mutating; routes: /mutate, /mutate/fail, /mutate/ignore, /validate, /validate/fail, /validate/ignore, /authorize',
        },
      },
    ];

    for (const c of cases) {
      it(`${c.name}, and keeps serving`, async function () {
        const h = await start(yaml);

        const answer = await c.send(h);

        assert.deepEqual({ status: answer.status, body: answer.body }, { status: c.status, body: c.body });
        if (c.status === 405) assert.equal(answer.headers.allow, 'POST');
        if (c.invalidCode) {
          assert.equal(await h.metric('admission_gateway_invalid_requests_total', { code: c.invalidCode }), 1);
        }
        assert.deepEqual(test.calls.sequence(), [], 'the chain never ran');
        await assertStillServing(h);
      });
    }

    it('echoes the uid and the v1beta1 apiVersion when the review can be read but is invalid', async function () {
      const h = await start(yaml);
      const review = podCreate();
      review.apiVersion = 'admission.k8s.io/v1beta1';
      (requestOf(review) as { operation: string }).operation = 'PATCH';

      const answer = await h.post('/mutate', review);

      assert.equal(answer.status, 400);
      assert.deepEqual(answer.body, {
        apiVersion: 'admission.k8s.io/v1beta1',
        kind: 'AdmissionReview',
        response: {
          uid: POD_UID,
          allowed: false,
          status: {
            code: 400,
            reason: 'BadRequest',
            message: 'request.operation="PATCH", expected CREATE, UPDATE, DELETE or CONNECT',
          },
        },
      });
    });
  });

  describe('given an internal error in the reviewer', function () {
    let server: https.Server | undefined;
    let agent: Agent | undefined;

    afterEach(async function () {
      await agent?.close();
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      server = undefined;
      agent = undefined;
    });

    it('answers HTTP 500 with an AdmissionReview carrying the uid, and keeps serving', async function () {
      const bundle = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
      const metrics = createMetrics(new Registry(), { defaultMetrics: false });
      let calls = 0;
      // In-process composition: the real webhook app with a reviewer that fails on its first review.
      const reviewer: Reviewer = {
        review(request) {
          calls += 1;
          if (calls === 1) return Promise.reject(new Error('reviewer exploded'));
          return Promise.resolve({
            decision: { allowed: true },
            response: { uid: request.uid, allowed: true },
            reports: [],
          });
        },
      };
      const app = createWebhookApp({
        reviewer,
        metrics,
        log: createLogger('silent'),
        maxRequestBytes: 1 << 20,
        bodyTiming: { bodyTimeoutSeconds: 10, minBodyBytesPerSecond: 65536 },
        budget: new ByteBudget(4 << 20),
      });
      const handle = app.callback();
      const webhook = https.createServer({ cert: bundle.cert, key: bundle.key }, (req, res) => void handle(req, res));
      server = webhook;
      await new Promise<void>((resolve) => webhook.listen(0, '127.0.0.1', resolve));
      const url = `https://127.0.0.1:${(webhook.address() as AddressInfo).port}/mutate`;
      const client = new Agent({ connect: { ca: bundle.caCert } });
      agent = client;

      const failed = await sendRequest(client, url, 'POST', podCreate());
      const next = await sendRequest(client, url, 'POST', podCreate());

      assert.deepEqual(
        { status: failed.status, body: failed.body },
        {
          status: 500,
          body: {
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: {
              uid: POD_UID,
              allowed: false,
              status: { code: 500, reason: 'InternalError', message: 'internal error: reviewer exploded' },
            },
          },
        },
      );
      assert.deepEqual(
        { status: next.status, body: next.body },
        {
          status: 200,
          body: {
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: { uid: POD_UID, allowed: true },
          },
        },
      );
      const invalid = await metrics.invalidRequests.get();
      assert.deepEqual(
        invalid.values.map((v) => ({ labels: v.labels, value: v.value })),
        [{ labels: { code: '500' }, value: 1 }],
      );
      assert.equal((await metrics.inflight.get()).values[0]?.value, 0);
    });
  });

  describe('certificate reload', function () {
    it('serves a replaced certificate from a new CA on new connections, without a restart', async function () {
      const h = await start(`chain: [{ plugin: add-label, settings: { labels: { checked: 'yes' } } }]`);
      const before = h.gateway.tls().fingerprint256;
      assert.equal(await peerFingerprint(h.gateway.webhookUrl, h.ca), before);

      const next = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
      await writeCertificates(h.dir, next);
      await eventually('the gateway serves the new certificate', () => h.gateway.tls().fingerprint256 !== before);

      const expected = new X509Certificate(next.cert).fingerprint256;
      assert.equal(h.gateway.tls().fingerprint256, expected);
      assert.equal(await peerFingerprint(h.gateway.webhookUrl, next.caCert), expected);
      await assert.rejects(peerFingerprint(h.gateway.webhookUrl, h.ca), /self[- ]signed|unable to verify|certificate/i);
      const agent = new Agent({ connect: { ca: next.caCert } });
      try {
        const answer = reviewOf(await sendRequest(agent, `${h.gateway.webhookUrl}/mutate`, 'POST', podCreate()));
        assert.deepEqual(decodePatch(answer.response), [{ op: 'add', path: '/metadata/labels/checked', value: 'yes' }]);
      } finally {
        await agent.close();
      }
    });
  });

  describe('graceful close', function () {
    it('lets a slow in-flight review finish with a 200 answer while refusing new connections', async function () {
      const h = await start(`
chain:
  - plugin: slow-async
    name: slow
    settings: { tag: slow, awaitRelease: true, labels: { finished: 'yes' } }
`);
      const port = Number(new URL(h.gateway.webhookUrl).port);
      const inflight = h.post('/mutate', podCreate());
      await test.calls.waitFor((r) => r.tag === 'slow' && r.event === 'call');

      const inflightGauge = await h.metric('admission_gateway_inflight_requests');
      const closed = h.gateway.close();
      const refused = await connectError(port);
      const readiness = await h.health('/readyz');
      test.gate.release();
      const answer = await inflight;
      await closed;

      assert.equal(inflightGauge, 1);
      assert.equal(refused, 'ECONNREFUSED');
      assert.deepEqual(
        { status: readiness.status, text: readiness.text },
        { status: 503, text: 'not ready: shutdown (shutting down)' },
      );
      assert.equal(answer.status, 200);
      const review = reviewOf(answer);
      assert.equal(review.response.allowed, true);
      assert.deepEqual(decodePatch(review.response), [{ op: 'add', path: '/metadata/labels/finished', value: 'yes' }]);
      assert.deepEqual(test.calls.sequence(), ['slow:call', 'slow:end']);
    });
  });
});

function jsonError(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected invalid JSON');
}

/** The error code of a plain TCP connection attempt, or 'connected'. */
function connectError(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}
