/**
 * Remote providers as chain steps, through the real gateway (startGateway from gateway.yaml) and real
 * HTTPS fake providers: failurePolicy for every misbehaviour, step outcome metrics, the object a provider
 * sees in the mutate phase and how its patch is merged, the request budget, and discovery.
 */
import { HOOK_API_V1ALPHA1 } from '../../server/protocol/versions.js';
import assert from 'node:assert/strict';
import type { AdmissionResponse } from '../../server/admission/types.js';
import { MAX_RESPONSE_BYTES } from '../../server/providers/provider-client.js';
import { edited, podCreate, requestOf } from '../fixtures/reviews/index.js';
import {
  DENY_MESSAGE,
  PROVIDER_PATCH,
  WARN_ANSWER,
  WRONG_UID,
  closedPortUrl,
  startFakeProvider,
  type DiscoveryOptions,
  type FakeProvider,
} from '../helpers/fake-provider.js';
import { startHarness, type Harness } from '../helpers/gateway-harness.js';
import { eventually } from '../helpers/wait.js';
import { decodePatch } from '../helpers/patch.js';

const REQUEST = requestOf(podCreate());
const UID = REQUEST.uid;
const CALLS = 'admission_gateway_step_calls_total';
const FAIL_OPEN = 'admission_gateway_fail_open_total';
const REQUESTS = 'admission_gateway_requests_total';

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

interface Misbehaviour {
  readonly name: string;
  readonly phase: 'mutate' | 'validate';
  /** The provider URL (and the fake that serves it, when it is not the shared one). */
  readonly target: () => Promise<{ url: string; caBundle: string; fake?: FakeProvider }>;
  readonly timeoutSeconds?: number;
  readonly reason: string;
  readonly outcome: 'error' | 'timeout';
  /** The failure message, exactly, or a pattern for messages that carry an OS / TLS library text. */
  readonly detail: (url: string, fake: FakeProvider | undefined) => string | RegExp;
}

describe('providers as chain steps (real gateway, real HTTPS providers)', function () {
  let fake: FakeProvider;
  let gw: Harness | undefined;
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
    await gw?.close();
    gw = undefined;
    await Promise.all(extraFakes.splice(0).map((f) => f.close()));
  });

  async function start(yaml: string, discovery?: { initialBackoffMs: number; maxBackoffMs: number }) {
    gw = await startHarness({ yaml, ...(discovery ? { discovery } : {}) });
    return gw;
  }

  const shared = (path: string) => () => Promise.resolve({ url: fake.url(path), caBundle: fake.caBundle });

  const MISBEHAVIOURS: readonly Misbehaviour[] = [
    {
      name: 'HTTP 500',
      phase: 'validate',
      target: shared('/500'),
      reason: 'http_status',
      outcome: 'error',
      detail: (url) => `${url} answered HTTP 500`,
    },
    {
      name: 'a body that is not JSON',
      phase: 'validate',
      target: shared('/garbage'),
      reason: 'invalid_response',
      outcome: 'error',
      detail: (url) => `${url}: response body is not JSON (starts with "<html>this is not JSON</html>")`,
    },
    {
      name: 'a wrong response.uid',
      phase: 'validate',
      target: shared('/wrong-uid'),
      reason: 'invalid_response',
      outcome: 'error',
      detail: (url, f) => `${url}: expected response.uid="${f?.calls[0]?.uid ?? '?'}", got "${WRONG_UID}"`,
    },
    {
      name: 'a redirect',
      phase: 'validate',
      target: shared('/redirect'),
      reason: 'http_status',
      outcome: 'error',
      detail: (url) => `${url} answered HTTP 302 (redirect to /allow not followed)`,
    },
    {
      name: 'a body over the 20 MiB cap',
      phase: 'validate',
      target: shared('/oversized'),
      reason: 'invalid_response',
      outcome: 'error',
      detail: (url) => `response from ${url} exceeds ${MAX_RESPONSE_BYTES} bytes`,
    },
    {
      name: 'a patch from a validating call',
      phase: 'validate',
      target: shared('/patch'),
      reason: 'invalid_response',
      outcome: 'error',
      detail: (url) => `${url}: validating webhook may not return response.patch`,
    },
    {
      name: 'a patch without patchType',
      phase: 'mutate',
      target: shared('/patch-without-type'),
      reason: 'invalid_response',
      outcome: 'error',
      detail: (url) => `${url}: webhook returned response.patch but not response.patchType`,
    },
    {
      name: 'an untrusted certificate',
      phase: 'validate',
      target: async () => {
        const untrusted = await startFakeProvider({ untrusted: true });
        extraFakes.push(untrusted);
        return { url: untrusted.url('/allow'), caBundle: untrusted.caBundle, fake: untrusted };
      },
      reason: 'tls',
      outcome: 'error',
      detail: (url) => new RegExp(`^TLS with ${escape(url)} failed: UNABLE_TO_VERIFY_LEAF_SIGNATURE: \\S`),
    },
    {
      name: 'connection refused',
      phase: 'validate',
      target: async () => ({ url: await closedPortUrl('/allow'), caBundle: fake.caBundle }),
      reason: 'connection',
      outcome: 'error',
      detail: (url) => new RegExp(`^cannot reach ${escape(url)}: ECONNREFUSED: \\S`),
    },
    {
      name: 'no answer within timeoutSeconds',
      phase: 'validate',
      target: shared('/hang'),
      timeoutSeconds: 0.3,
      reason: 'timeout',
      outcome: 'timeout',
      detail: () => 'did not answer within 300 ms',
    },
  ];

  for (const m of MISBEHAVIOURS) {
    for (const policy of ['Fail', 'Ignore'] as const) {
      it(`${m.name} → reason ${m.reason}, outcome ${m.outcome}, failurePolicy ${policy}`, async function () {
        this.timeout(20_000);
        const target = await m.target();
        const served = target.fake ?? (target.url.startsWith(fake.origin) ? fake : undefined);
        const g = await start(`
chain:
  - provider: scanner
    url: ${target.url}
    caBundle: ${target.caBundle}
    phases: [${m.phase}]
    failurePolicy: ${policy}
    timeoutSeconds: ${m.timeoutSeconds ?? 5}
`);

        const { response } = await g.review(`/${m.phase}`, podCreate());

        const expected = m.detail(target.url, served);
        const detail = failureDetail(response, policy);
        if (typeof expected === 'string') assert.equal(detail, expected);
        else assert.match(detail, expected);
        const reason = m.reason;
        assert.deepEqual(
          response,
          policy === 'Fail'
            ? {
                uid: UID,
                allowed: false,
                status: {
                  code: 500,
                  reason: 'InternalError',
                  message: `provider "scanner" failed (${reason}): ${detail}`,
                },
              }
            : {
                uid: UID,
                allowed: true,
                warnings: [`scanner: failed open (${reason}): ${detail}`],
                auditAnnotations: { 'scanner.failed-open': `${reason}: ${detail}` },
              },
        );
        assert.equal(await g.metric(CALLS, { step: 'scanner', phase: m.phase, outcome: m.outcome }), 1);
        assert.equal(await g.metric(FAIL_OPEN, { step: 'scanner' }), policy === 'Ignore' ? 1 : 0);
        assert.equal(
          await g.metric(REQUESTS, { phase: m.phase, operation: 'CREATE', allowed: String(policy === 'Ignore') }),
          1,
        );
        if (m.reason === 'tls' || m.reason === 'connection') {
          assert.equal(served?.calls.length ?? 0, 0, 'no request reached a provider');
        } else {
          assert.equal(served?.calls.length, 1, 'exactly one call reached the provider');
        }
        if (m.outcome === 'timeout') {
          await fake.until(
            'the provider sees the timed-out request closed',
            () => fake.calls[0]?.clientClosed === true,
          );
        }
      });
    }
  }

  describe('well-behaved providers', function () {
    it('mutate: the provider gets the object as mutated by earlier steps, and its patch joins the final one', async function () {
      const g = await start(`
chain:
  - plugin: default-labels
    settings: { labels: { managed-by: admission-gateway } }
  - provider: scanner
    url: ${fake.url('/patch')}
    caBundle: ${fake.caBundle}
    phases: [mutate]
    timeoutSeconds: 2
    settings: { team: payments }
`);

      const { response } = await g.review('/mutate', podCreate());

      assert.deepEqual(decodePatch(response), [
        { op: 'add', path: '/metadata/labels/managed-by', value: 'admission-gateway' },
        ...PROVIDER_PATCH,
      ]);
      const { patch: _patch, ...rest } = response;
      assert.deepEqual(rest, { uid: UID, allowed: true, patchType: 'JSONPatch' });
      assert.equal(fake.calls.length, 1);
      const [call] = fake.calls;
      assert.deepEqual(call?.object, edited(REQUEST.object, { 'metadata.labels.managed-by': 'admission-gateway' }));
      assert.notEqual(call?.uid, UID, 'a fresh uid per call');
      assert.equal(call?.timeout, '2000ms');
      assert.deepEqual(call?.settings, { team: 'payments' });
      assert.deepEqual(call?.review, {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { ...REQUEST, uid: call?.uid, object: call?.object },
      });
      assert.equal(await g.metric(CALLS, { step: 'default-labels', phase: 'mutate', outcome: 'patched' }), 1);
      assert.equal(await g.metric(CALLS, { step: 'scanner', phase: 'mutate', outcome: 'patched' }), 1);
    });

    it('mutate: a later plugin sees the provider patch (the working copy carries it)', async function () {
      const g = await start(`
chain:
  - provider: scanner
    url: ${fake.url('/patch')}
    caBundle: ${fake.caBundle}
    phases: [mutate]
  - plugin: default-labels
    settings: { labels: { provider: overwritten }, overwrite: false }
`);

      const { response } = await g.review('/mutate', podCreate());

      // default-labels does not overwrite a label that is already set — by the provider, here.
      assert.deepEqual(decodePatch(response), [...PROVIDER_PATCH]);
      assert.equal(await g.metric(CALLS, { step: 'default-labels', phase: 'mutate', outcome: 'allowed' }), 1);
    });

    it('validate: a provider deny is a denial with the provider message and code', async function () {
      const g = await start(`
chain:
  - provider: scanner
    url: ${fake.url('/deny')}
    caBundle: ${fake.caBundle}
    phases: [validate]
`);

      const { response } = await g.review('/validate', podCreate());

      assert.deepEqual(response, {
        uid: UID,
        allowed: false,
        status: { code: 403, reason: 'Forbidden', message: `scanner: ${DENY_MESSAGE}` },
      });
      assert.equal(await g.metric(CALLS, { step: 'scanner', phase: 'validate', outcome: 'denied' }), 1);
      assert.equal(await g.metric(FAIL_OPEN, { step: 'scanner' }), 0);
    });

    it('validate: provider warnings and audit annotations are prefixed with the step', async function () {
      const g = await start(`
chain:
  - provider: scanner
    url: ${fake.url('/warn')}
    caBundle: ${fake.caBundle}
    phases: [validate]
`);

      const { response } = await g.review('/validate', podCreate());

      assert.deepEqual(response, {
        uid: UID,
        allowed: true,
        warnings: WARN_ANSWER.warnings.map((w) => `scanner: ${w}`),
        auditAnnotations: { 'scanner.scanned': 'true', 'scanner.scanner-version': '1.2.3' },
      });
    });

    it('a v1beta1-only provider works with admissionReviewVersions [v1beta1]', async function () {
      const g = await start(`
chain:
  - provider: legacy
    url: ${fake.url('/v1beta1-only')}
    caBundle: ${fake.caBundle}
    phases: [validate]
    admissionReviewVersions: [v1beta1]
`);

      const { response } = await g.review('/validate', podCreate());

      assert.deepEqual(response, { uid: UID, allowed: true });
      assert.deepEqual(
        fake.calls.map((c) => c.apiVersion),
        ['admission.k8s.io/v1beta1'],
      );
    });

    it('the breaker state of each provider step is listed in /chain', async function () {
      const g = await start(`
chain:
  - provider: scanner
    url: ${fake.url('/allow')}
    caBundle: ${fake.caBundle}
    phases: [mutate, validate]
`);
      await g.review('/validate', podCreate());

      const chain = (await g.ops('/chain')).body as {
        order: string;
        mutate: Array<{ name: string; breaker: unknown }>;
        validate: Array<{ name: string; breaker: unknown }>;
        providers: unknown[];
      };

      assert.equal(chain.order, 'mutate=[scanner] validate=[scanner]');
      // One breaker per provider, shared by its steps.
      const breaker = { state: 'closed', fires: 1, failures: 0, rejects: 0, successes: 1 };
      assert.deepEqual(chain.mutate[0]?.breaker, breaker);
      assert.deepEqual(chain.validate[0]?.breaker, breaker);
      assert.deepEqual(chain.providers, [
        {
          name: 'scanner',
          ready: true,
          handlers: [],
          breaker: 'closed',
          versions: [
            { step: 'scanner', phase: 'mutate', version: 'v1' },
            { step: 'scanner', phase: 'validate', version: 'v1' },
          ],
        },
      ]);
    });
  });

  describe('the request budget', function () {
    const chain = (first: string, second: string) => `
server: { deadlineMarginMs: 250 }
chain:
  - provider: first
    url: ${fake.url(first)}
    caBundle: ${fake.caBundle}
    phases: [mutate]
    failurePolicy: Ignore
    timeoutSeconds: 5
  - provider: second
    url: ${fake.url(second)}
    caBundle: ${fake.caBundle}
    phases: [mutate]
    failurePolicy: Ignore
    timeoutSeconds: 5
`;

    it('two hanging providers under ?timeout=1s: both fail open in time, and together they were granted at most 750 ms', async function () {
      const g = await start(chain('/hang', '/hang'));

      const { response } = await g.review('/mutate?timeout=1s', podCreate());

      assert.equal(response.allowed, true);
      assert.equal(response.status, undefined, 'never an InternalError');
      assert.deepEqual(Object.keys(response.auditAnnotations ?? {}).sort(), [
        'first.failed-open',
        'second.failed-open',
      ]);
      for (const value of Object.values(response.auditAnnotations ?? {})) assert.match(value, /^timeout: /);
      assert.equal(response.warnings?.length, 2);
      assert.equal(await g.metric(CALLS, { step: 'first', phase: 'mutate', outcome: 'timeout' }), 1);
      assert.equal(await g.metric(CALLS, { step: 'second', phase: 'mutate', outcome: 'timeout' }), 1);
      // The first took what was left of the budget; the second got the rest (nothing, or a few ms).
      const granted = fake.calls.map((c) => c.timeoutMs ?? Number.NaN);
      assert.ok(granted.length >= 1 && granted.length <= 2, `calls: ${granted.join(', ')}`);
      assert.ok(granted[0]! > 0 && granted[0]! <= 750, `first granted ${granted[0]} ms`);
      assert.ok(granted.reduce((a, b) => a + b, 0) <= 750, `granted ${granted.join(' + ')} ms, over the 750 ms budget`);
    });

    it('the second provider is granted only what the first left of the budget', async function () {
      const g = await start(chain('/slow-200', '/hang'));

      const { response } = await g.review('/mutate?timeout=1s', podCreate());

      assert.equal(response.allowed, true);
      assert.equal(response.status, undefined);
      assert.deepEqual(Object.keys(response.auditAnnotations ?? {}), ['second.failed-open']);
      assert.deepEqual(
        fake.calls.map((c) => c.path),
        ['/slow-200', '/hang'],
      );
      const [first, second] = fake.calls.map((c) => c.timeoutMs ?? Number.NaN);
      assert.ok(first! > 0 && first! <= 750, `first granted ${first} ms`);
      // The first answered after at least 200 ms of the 750 ms budget.
      assert.ok(second! > 0 && second! <= 550, `second granted ${second} ms`);
      assert.equal(response.auditAnnotations?.['second.failed-open'], `timeout: did not answer within ${second} ms`);
      assert.equal(await g.metric(CALLS, { step: 'first', phase: 'mutate', outcome: 'allowed' }), 1);
      assert.equal(await g.metric(CALLS, { step: 'second', phase: 'mutate', outcome: 'timeout' }), 1);
    });
  });

  describe('discovery', function () {
    const DOCUMENT = {
      handlers: [
        { name: 'deny', phase: 'validate' },
        { name: 'patch', phase: 'mutate', failurePolicy: 'Ignore', timeoutSeconds: 3 },
      ],
    };

    /** A gateway whose one entry is the provider `scanner` at <fake>/hooks with discovery, retried within ms. */
    const discovering = async (discovery: DiscoveryOptions, entry: { timeoutSeconds?: number } = {}) => {
      const provider = await startFakeProvider({ discovery });
      extraFakes.push(provider);
      const timeout = entry.timeoutSeconds === undefined ? '' : `    timeoutSeconds: ${entry.timeoutSeconds}\n`;
      const g = await start(
        `
chain:
  - provider: scanner
    url: ${provider.url('/hooks')}
    caBundle: ${provider.caBundle}
    discovery: true
${timeout}`,
        { initialBackoffMs: 10, maxBackoffMs: 20 },
      );
      return { provider, g };
    };

    /** The discovery error /chain shows, once discovery has failed. */
    const discoveryError = async (g: Harness): Promise<string | undefined> => {
      const lastError = async () =>
        ((await g.ops('/chain')).body as { providers: Array<{ lastError?: string }> }).providers[0]?.lastError;
      await eventually('discovery has failed', async () => (await lastError()) !== undefined);
      return lastError();
    };

    it('retries a failing discovery, stays ready, fails reviews per failurePolicy until discovered, then runs the handlers', async function () {
      const provider = await startFakeProvider({
        discovery: { document: DOCUMENT, failFirst: 2, holdAfterFailures: true },
      });
      extraFakes.push(provider);
      const url = provider.url('/hooks');
      const g = await start(
        `
chain:
  - provider: scanner
    url: ${url}
    caBundle: ${provider.caBundle}
    discovery: true
    failurePolicy: Fail
`,
        { initialBackoffMs: 10, maxBackoffMs: 20 },
      );

      // Two failures, then the third attempt is held by the provider until released.
      await provider.until('the third discovery request', () => provider.discoveryCalls().length === 3);
      const ready = await g.health('/readyz');
      assert.deepEqual([ready.status, ready.text], [200, 'ok']);
      const before = (await g.ops('/chain')).body as { order: string; providers: unknown[] };
      assert.equal(before.order, 'mutate=[scanner] validate=[scanner]');
      assert.deepEqual(before.providers, [
        {
          name: 'scanner',
          ready: false,
          discovered: false,
          handlers: [],
          breaker: 'closed',
          versions: [],
          lastError: `${url} answered HTTP 503`,
        },
      ]);
      const early = await g.review('/validate', podCreate());
      assert.deepEqual(early.response, {
        uid: UID,
        allowed: false,
        status: {
          code: 500,
          reason: 'InternalError',
          message: `provider "scanner" failed (http_status): provider "scanner" is not discovered yet: ${url} answered HTTP 503`,
        },
      });
      assert.deepEqual(provider.reviews(), [], 'no review reached an undiscovered provider');

      provider.releaseDiscovery();
      await eventually(
        'the discovered handlers are in the chain',
        async () =>
          ((await g.ops('/chain')).body as { order: string }).order ===
          'mutate=[patch.scanner] validate=[deny.scanner]',
      );

      const after = (await g.ops('/chain')).body as {
        providers: unknown[];
        mutate: Array<Record<string, unknown>>;
        validate: Array<Record<string, unknown>>;
      };
      assert.deepEqual(after.providers, [
        {
          name: 'scanner',
          ready: true,
          discovered: true,
          handlers: [
            { name: 'deny', phase: 'validate', path: '/hooks/deny', apiVersion: HOOK_API_V1ALPHA1 },
            {
              name: 'patch',
              phase: 'mutate',
              path: '/hooks/patch',
              apiVersion: HOOK_API_V1ALPHA1,
              timeoutSeconds: 3,
              failurePolicy: 'Ignore',
            },
          ],
          breaker: 'closed',
          versions: [
            { step: 'deny.scanner', phase: 'validate', version: 'v1' },
            { step: 'patch.scanner', phase: 'mutate', version: 'v1' },
          ],
        },
      ]);
      assert.deepEqual(
        [after.mutate[0]?.url, after.mutate[0]?.failurePolicy, after.mutate[0]?.timeoutSeconds],
        [provider.url('/hooks/patch'), 'Ignore', 3],
      );
      assert.deepEqual(
        [after.validate[0]?.url, after.validate[0]?.failurePolicy, after.validate[0]?.timeoutSeconds],
        [provider.url('/hooks/deny'), 'Fail', 10],
      );

      const denied = await g.review('/validate', podCreate());
      assert.deepEqual(denied.response, {
        uid: UID,
        allowed: false,
        status: { code: 403, reason: 'Forbidden', message: `deny.scanner: ${DENY_MESSAGE}` },
      });
      const patched = await g.review('/mutate', podCreate());
      assert.deepEqual(decodePatch(patched.response), [...PROVIDER_PATCH]);
      assert.deepEqual(
        provider.reviews().map((c) => [c.method, c.path]),
        [
          ['POST', '/hooks/deny'],
          ['POST', '/hooks/patch'],
        ],
      );
      // deny: the entry's default 10 s, capped by the 9750 ms budget; patch: the handler's own 3 s.
      const [denyGrant, patchGrant] = provider.reviews().map((c) => c.timeoutMs ?? Number.NaN);
      assert.ok(denyGrant! > 3000 && denyGrant! <= 9750, `deny.scanner granted ${denyGrant} ms`);
      assert.equal(patchGrant, 3000);
      assert.equal(provider.discoveryCalls().length, 3, 'no discovery after the success (refresh is minutes away)');
      assert.equal(await g.metric(CALLS, { step: 'deny.scanner', phase: 'validate', outcome: 'denied' }), 1);
      assert.equal(await g.metric(CALLS, { step: 'patch.scanner', phase: 'mutate', outcome: 'patched' }), 1);
    });

    it('an undiscovered provider with failurePolicy Ignore fails open, saying it is not discovered yet', async function () {
      const provider = await startFakeProvider({
        discovery: { document: DOCUMENT, failFirst: 1, holdAfterFailures: true },
      });
      extraFakes.push(provider);
      const url = provider.url('/hooks');
      const g = await start(
        `
chain:
  - provider: scanner
    url: ${url}
    caBundle: ${provider.caBundle}
    discovery: true
    failurePolicy: Ignore
    phases: [validate]
`,
        { initialBackoffMs: 10, maxBackoffMs: 20 },
      );
      await provider.until('the second discovery request', () => provider.discoveryCalls().length === 2);

      const { response } = await g.review('/validate', podCreate());

      const detail = `provider "scanner" is not discovered yet: ${url} answered HTTP 503`;
      assert.deepEqual(response, {
        uid: UID,
        allowed: true,
        warnings: [`scanner: failed open (http_status): ${detail}`],
        auditAnnotations: { 'scanner.failed-open': `http_status: ${detail}` },
      });
      assert.equal(await g.metric(FAIL_OPEN, { step: 'scanner' }), 1);
      assert.equal(await g.metric(CALLS, { step: 'scanner', phase: 'validate', outcome: 'error' }), 1);
    });

    it('calls each discovered handler in the first AdmissionReview version it speaks, and reports a deprecated one: one warning, the gauge, /chain', async function () {
      const { provider, g } = await discovering({
        document: {
          apiVersion: 'admissiongateway.io/v1alpha1',
          kind: 'DiscoveryResponse',
          handlers: [
            { name: 'patch', phase: 'mutate', apiVersion: 'admissiongateway.io/v1alpha1' },
            { name: 'v1beta1-only', phase: 'validate', admissionReviewVersions: ['v1beta1'] },
          ],
        },
      });
      await eventually(
        'the discovered handlers are in the chain',
        async () =>
          ((await g.ops('/chain')).body as { order: string }).order ===
          'mutate=[patch.scanner] validate=[v1beta1-only.scanner]',
      );

      const patched = await g.review('/mutate', podCreate());
      const validated = await g.review('/validate', podCreate());
      await g.review('/validate', podCreate());

      assert.deepEqual(decodePatch(patched.response), [...PROVIDER_PATCH]);
      assert.deepEqual(validated.response, { uid: UID, allowed: true });
      assert.deepEqual(
        provider.reviews().map((c) => [c.path, c.apiVersion]),
        [
          ['/hooks/patch', 'admission.k8s.io/v1'],
          ['/hooks/v1beta1-only', 'admission.k8s.io/v1beta1'],
          ['/hooks/v1beta1-only', 'admission.k8s.io/v1beta1'],
        ],
      );
      const chain = (await g.ops('/chain')).body as {
        mutate: Array<Record<string, unknown>>;
        validate: Array<Record<string, unknown>>;
        providers: Array<Record<string, unknown>>;
      };
      assert.deepEqual(
        [chain.mutate[0]?.admissionReviewVersion, chain.validate[0]?.admissionReviewVersion],
        ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'],
      );
      assert.deepEqual(chain.providers[0]?.versions, [
        { step: 'patch.scanner', phase: 'mutate', version: 'v1' },
        { step: 'v1beta1-only.scanner', phase: 'validate', version: 'v1beta1' },
      ]);
      assert.equal(
        await g.metric('admission_gateway_provider_deprecated_version', {
          provider: 'scanner',
          version: 'admission.k8s.io/v1beta1',
        }),
        1,
      );
      const warnings = g.logs.filter((l) => l.msg === 'provider is called in a deprecated AdmissionReview version');
      assert.deepEqual(
        warnings.map((l) => [l.level, l.provider, l.version, l.steps, l.notice]),
        [
          [
            'warn',
            'scanner',
            'admission.k8s.io/v1beta1',
            ['v1beta1-only.scanner (validate)'],
            'admission.k8s.io/v1beta1 is deprecated since admission-gateway 0.1.0 and spoken until at least 0.4.0: ' +
              'serve admission.k8s.io/v1 and list v1 first in admissionReviewVersions',
          ],
        ],
      );
    });

    it('refuses a discovery document of a hook API version the gateway does not speak, naming it', async function () {
      const { g } = await discovering({
        document: { apiVersion: 'admissiongateway.io/v2', handlers: [{ name: 'patch', phase: 'mutate' }] },
      });
      assert.equal(
        await discoveryError(g),
        'discovery of "scanner": apiVersion: unsupported hook API version (this gateway speaks admissiongateway.io/v1alpha1), got "admissiongateway.io/v2"',
      );
    });

    it('discovers with a timeoutSeconds that is not a whole number of milliseconds (1.005 s)', async function () {
      const { g } = await discovering({ document: DOCUMENT }, { timeoutSeconds: 1.005 });

      await eventually('discovery has succeeded or failed', async () => {
        const body = (await g.ops('/chain')).body as { providers: Array<{ ready: boolean; lastError?: string }> };
        return body.providers[0]?.ready === true || body.providers[0]?.lastError !== undefined;
      });

      const body = (await g.ops('/chain')).body as { order: string; providers: Array<Record<string, unknown>> };
      assert.equal(body.providers[0]?.lastError, undefined);
      assert.equal(body.order, 'mutate=[patch.scanner] validate=[deny.scanner]');
    });

    it('closing the gateway aborts a discovery request in flight instead of waiting for its timeout', async function () {
      const { provider, g } = await discovering(
        { document: DOCUMENT, holdAfterFailures: true },
        { timeoutSeconds: 10 },
      );
      await provider.until('the discovery request is held', () => provider.discoveryCalls().length === 1);

      const closing = g.close();
      gw = undefined;

      await provider.until(
        'the gateway closes the held discovery request (not after its 10 s timeout)',
        () => provider.discoveryCalls()[0]?.clientClosed === true,
        3000,
      );
      await closing;
      assert.equal(provider.discoveryCalls().length, 1, 'no discovery retried after close');
    });

    it('an invalid discovery document is reported with its field path in /chain providers[].lastError', async function () {
      const { g } = await discovering({
        document: {
          handlers: [
            { name: 'check', phase: 'validate' },
            { name: 'audit', phase: 'audit' },
          ],
        },
      });
      await discoveryError(g);

      const body = (await g.ops('/chain')).body as { order: string; providers: unknown[] };
      assert.deepEqual(body.providers, [
        {
          name: 'scanner',
          ready: false,
          discovered: false,
          handlers: [],
          breaker: 'closed',
          versions: [],
          lastError: 'discovery of "scanner": handlers[1].phase: expected one of mutate, validate, got "audit"',
        },
      ]);
      assert.equal(body.order, 'mutate=[scanner] validate=[scanner]');
      assert.equal((await g.health('/readyz')).status, 200);
    });
  });
});

/** The failure text inside a Fail answer's message or an Ignore answer's annotation. */
function failureDetail(response: AdmissionResponse, policy: 'Fail' | 'Ignore'): string {
  if (policy === 'Fail') {
    const m = /^provider "scanner" failed \([a-z_]+\): (.*)$/s.exec(response.status?.message ?? '');
    return m?.[1] ?? `(no failure in ${JSON.stringify(response)})`;
  }
  const m = /^[a-z_]+: (.*)$/s.exec(response.auditAnnotations?.['scanner.failed-open'] ?? '');
  return m?.[1] ?? `(no failure in ${JSON.stringify(response)})`;
}
