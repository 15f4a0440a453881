/**
 * The OpenAPI document of the provider protocol against the real thing: `admission-gateway openapi` prints valid
 * OpenAPI 3.1, the same document a running gateway serves at ops /openapi/v3; the requests a running gateway
 * really sends its providers (AdmissionReview v1 and v1beta1, the authorize phase's SubjectAccessReview, with
 * their ?timeout= and settings header) validate against it, and so do the answers and the discovery document of
 * a provider served by the SDK; what the gateway refuses, the document refuses too.
 */
import assert from 'node:assert/strict';
import pino from 'pino';
import { Agent } from 'undici';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { caBundle, generateCertificates } from '../../certs/generate.js';
import defaultLabels from '../../plugins/default-labels.js';
import requireLabels from '../../plugins/require-labels.js';
import type { OpenApiDocument } from '../../server/protocol/openapi.js';
import { serveProvider, type ProviderServer } from '../../server/provider-sdk/serve-provider.js';
import { podCreate, podDelete } from '../fixtures/reviews/index.js';
import { runCliCaptured } from '../helpers/cli.js';
import { startFakeProvider, type FakeProvider, type ProviderCallRecord } from '../helpers/fake-provider.js';
import { sendRequest, startHarness, type Harness } from '../helpers/gateway-harness.js';
import { documentSchemas, type DocumentSchemas } from '../helpers/openapi-schemas.js';
import { eventually } from '../helpers/wait.js';

const SETTINGS = { team: 'payments', owner: 'Zoë Ørsted' };
const LEGACY_SETTINGS = { tier: 'gold' };

/** A SubjectAccessReview as kube-apiserver's webhook authorizer sends it to the gateway. */
const accessReview = (spec: Record<string, unknown>) => ({
  apiVersion: 'authorization.k8s.io/v1',
  kind: 'SubjectAccessReview',
  spec: { user: 'alice', groups: ['system:authenticated'], uid: 'u-1', ...spec },
});

async function printedDocument(): Promise<OpenApiDocument> {
  const run = await runCliCaptured(['openapi']);
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout) as OpenApiDocument;
}

/** The schemas of the review operation: its body, each parameter, its answer. */
function reviewOperation(schemas: DocumentSchemas, document: OpenApiDocument) {
  const operation = ['paths', '/{handler}', 'post'] as const;
  const parameters = (document.paths['/{handler}'] as { post: { parameters: Array<{ name: string }> } }).post
    .parameters;
  const parameter = (name: string) => {
    const index = parameters.findIndex((p) => p.name.toLowerCase() === name.toLowerCase());
    assert.ok(index >= 0, `the document has no parameter ${name}`);
    return [...operation, 'parameters', String(index)];
  };
  return {
    body: schemas.at(...operation, 'requestBody', 'content', 'application/json', 'schema'),
    answer: schemas.at(...operation, 'responses', '200', 'content', 'application/json', 'schema'),
    timeout: schemas.at(...parameter('timeout'), 'schema'),
    settings: schemas.at(...parameter('x-admission-gateway-settings'), 'content', 'application/json', 'schema'),
    settingsHeader: parameters[Number(parameter('x-admission-gateway-settings').at(-1))]!.name.toLowerCase(),
  };
}

/** The component a call's body is, and the one its answer is, by the body's kind and version. */
function componentsOf(call: ProviderCallRecord): { readonly request: string; readonly answer: string } {
  if (call.review?.kind === 'SubjectAccessReview') {
    return { request: 'SubjectAccessReviewRequest', answer: 'SubjectAccessReviewAnswer' };
  }
  const suffix = call.apiVersion === 'admission.k8s.io/v1beta1' ? 'V1beta1' : 'V1';
  return { request: `AdmissionReviewRequest${suffix}`, answer: `AdmissionReviewResponse${suffix}` };
}

/** POSTs what the gateway sent in `call` again, as it sent it, to `url` (a provider's handler). */
const replay = (agent: Agent, url: string, call: ProviderCallRecord) =>
  sendRequest(agent, `${url}?timeout=${call.timeout ?? ''}`, 'POST', JSON.stringify(call.review));

function assertValid(validate: ValidateFunction, value: unknown, schemas: DocumentSchemas, what: string): void {
  assert.ok(validate(value), `${what}:\n${schemas.errors(validate)}\n${JSON.stringify(value)}`);
}

describe('the OpenAPI document of the provider protocol, against a running gateway and providers', function () {
  this.timeout(30_000);
  let document: OpenApiDocument;
  let schemas: DocumentSchemas;
  let operation: ReturnType<typeof reviewOperation>;
  const harnesses: Harness[] = [];
  const fakes: FakeProvider[] = [];

  before(async () => {
    document = await printedDocument();
    schemas = documentSchemas(document);
    operation = reviewOperation(schemas, document);
  });
  after(async () => {
    for (const h of harnesses) await h.close();
    for (const f of fakes) await f.close();
  });

  const start = async (yaml: string) => {
    const h = await startHarness({ yaml, discovery: { initialBackoffMs: 10, maxBackoffMs: 20 } });
    harnesses.push(h);
    return h;
  };
  const fake = async (options?: Parameters<typeof startFakeProvider>[0]) => {
    const f = await startFakeProvider(options);
    fakes.push(f);
    return f;
  };

  describe('admission-gateway openapi and ops /openapi/v3', () => {
    it('prints valid OpenAPI 3.1, the document a running gateway serves at /openapi/v3', async () => {
      const validator = new Validator();
      const result = await validator.validate(structuredClone({ ...document }));
      assert.ok(result.valid, JSON.stringify(result.errors));
      assert.equal(validator.version, '3.1');

      const h = await start('chain: []');
      const served = await h.ops('/openapi/v3');
      assert.equal(served.status, 200);
      assert.match(String(served.headers['content-type']), /^application\/json/);
      assert.deepEqual(served.body, document);
    });

    it('takes no argument, and has its own --help', async () => {
      const extra = await runCliCaptured(['openapi', 'v3']);
      assert.deepEqual([extra.code, extra.stdout], [2, '']);
      assert.match(extra.stderr, /openapi: unexpected argument "v3"/);
      const help = await runCliCaptured(['openapi', '--help']);
      assert.equal(help.code, 0);
      assert.match(help.stdout, /^usage: admission-gateway openapi\n/);
    });
  });

  describe('what the gateway sends', () => {
    let calls: ProviderCallRecord[];
    let reviews: ProviderCallRecord[];
    let provider: FakeProvider;

    before(async () => {
      provider = await fake();
      const entry = (name: string, path: string, more: string) => `  - provider: ${name}
    url: ${provider.url(path)}
    caBundle: ${provider.caBundle}
${more}`;
      const h = await start(`chain:
${entry('current', '/current/allow', `    phases: [mutate, validate]\n    settings: ${JSON.stringify(SETTINGS)}`)}
${entry('legacy', '/legacy/v1beta1-only', `    phases: [validate]\n    admissionReviewVersions: [v1beta1]\n    settings: ${JSON.stringify(LEGACY_SETTINGS)}`)}
${entry('plain', '/plain/allow', '    phases: [validate]')}
${entry('guard', '/guard/sar-none', '    phases: [authorize]\n    authorizeMatch: { verbs: [get], resources: [configmaps], nonResourceURLs: [/metrics] }')}
`);
      for (const route of ['/mutate', '/validate'])
        assert.equal((await h.review(route, podCreate())).response.allowed, true);
      assert.equal((await h.review('/validate', podDelete())).response.allowed, true);
      const resource = { namespace: 'team-a', verb: 'get', version: 'v1', resource: 'configmaps', name: 'settings' };
      for (const spec of [
        { resourceAttributes: resource },
        { nonResourceAttributes: { path: '/metrics', verb: 'get' } },
      ]) {
        const answer = await h.post('/authorize', accessReview(spec));
        assert.equal(answer.status, 200, answer.text);
      }
      calls = [...provider.reviews()];
      reviews = calls.filter((c) => c.review?.kind === 'AdmissionReview');
    });

    it('sent reviews in both versions and SubjectAccessReviews of both kinds, each a body the document describes', () => {
      assert.deepEqual(
        calls.map((c) => `${c.path} ${c.apiVersion ?? ''} ${c.operation}`),
        [
          '/current/allow admission.k8s.io/v1 CREATE',
          '/current/allow admission.k8s.io/v1 CREATE',
          '/legacy/v1beta1-only admission.k8s.io/v1beta1 CREATE',
          '/plain/allow admission.k8s.io/v1 CREATE',
          '/current/allow admission.k8s.io/v1 DELETE',
          '/legacy/v1beta1-only admission.k8s.io/v1beta1 DELETE',
          '/plain/allow admission.k8s.io/v1 DELETE',
          '/guard/sar-none authorization.k8s.io/v1 ',
          '/guard/sar-none authorization.k8s.io/v1 ',
        ],
      );
      for (const call of calls) assertValid(operation.body, call.review, schemas, `the body POSTed to ${call.path}`);
    });

    it('matched each body to the component of its own version, a DELETE with object null', () => {
      for (const call of calls) {
        const { request } = componentsOf(call);
        assertValid(schemas.component(request), call.review, schemas, `${call.path} as ${request}`);
      }
      assert.ok(reviews.some((c) => c.operation === 'DELETE' && c.object === null));
    });

    it('sent ?timeout= as the document says', () => {
      for (const call of calls) assertValid(operation.timeout, call.timeout, schemas, `?timeout= of ${call.path}`);
    });

    it('sent the settings header the document names, as ASCII JSON the document describes, only with settings', () => {
      const sent = (call: ProviderCallRecord) => call.headers[operation.settingsHeader];
      for (const call of calls) {
        const header = sent(call);
        const expected = call.path.startsWith('/current')
          ? SETTINGS
          : call.path.startsWith('/legacy')
            ? LEGACY_SETTINGS
            : undefined;
        if (expected === undefined) {
          assert.equal(header, undefined, `${call.path} got a settings header`);
          continue;
        }
        assert.equal(typeof header, 'string', `${call.path} got no settings header`);
        assert.match(String(header), /^[\x20-\x7e]*$/, 'one line of printable ASCII');
        const settings: unknown = JSON.parse(String(header));
        assertValid(operation.settings, settings, schemas, `the settings header of ${call.path}`);
        assert.deepEqual(settings, expected);
      }
    });

    it('took answers the document describes, in the version of each call', async () => {
      const agent = new Agent({ connect: { ca: provider.caPem } });
      try {
        for (const call of calls) {
          const answer = await replay(agent, provider.url(call.path), call);
          const { answer: name } = componentsOf(call);
          assertValid(operation.answer, answer.body, schemas, `the answer at ${call.path}`);
          assertValid(schemas.component(name), answer.body, schemas, `the answer at ${call.path} as ${name}`);
        }
      } finally {
        await agent.close();
      }
    });

    describe('a provider served by the SDK', () => {
      let sdk: ProviderServer;
      let agent: Agent;
      const bundle = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });

      before(async () => {
        sdk = await serveProvider({
          plugins: [
            { plugin: defaultLabels, settings: { labels: { 'cost-center': 'shared' } } },
            { plugin: requireLabels, settings: { labels: ['owner'] } },
          ],
          tls: { cert: bundle.cert, key: bundle.key },
          host: '127.0.0.1',
          port: 0,
          log: pino({ level: 'silent' }),
        });
        agent = new Agent({ connect: { ca: bundle.caCert } });
      });
      after(async () => {
        await agent.close();
        await sdk.close();
      });

      it('serves a discovery document the document describes, and the gateway takes it', async () => {
        const served = await sendRequest(agent, `${sdk.url}/discovery`, 'GET');
        assert.equal(served.status, 200);
        assertValid(schemas.component('DiscoveryDocument'), served.body, schemas, 'the discovery document');
        assertValid(
          schemas.at('paths', '/discovery', 'get', 'responses', '200', 'content', 'application/json', 'schema'),
          served.body,
          schemas,
          'the GET /discovery answer',
        );

        const h = await start(`chain:
  - provider: sdk
    url: ${sdk.url}
    caBundle: ${caBundle(bundle.caCert)}
    discovery: true
`);
        await eventually('the SDK provider is discovered', async () => {
          const chain = (await h.ops('/chain')).body as { providers: Array<{ discovered: boolean }> };
          return chain.providers[0]?.discovered === true;
        });
        const { order } = (await h.ops('/chain')).body as { order: string };
        assert.equal(order, 'mutate=[default-labels.sdk] validate=[require-labels.sdk]');
      });

      it('answers the reviews the gateway sent, in each version, as the document describes', async () => {
        // The mutate phase ran first: its one call goes to the mutating handler, the validate phase's to the other.
        const [mutateCall, ...validateCalls] = reviews.filter((c) => c.operation === 'CREATE');
        const targets = [
          ['/default-labels', mutateCall!] as const,
          ...validateCalls.map((call) => ['/require-labels', call] as const),
        ];
        const answered = [];
        for (const [handler, call] of targets) {
          const answer = await replay(agent, `${sdk.url}${handler}`, call);
          assert.equal(answer.status, 200, answer.text);
          const what = `the SDK's answer at ${handler} in ${call.apiVersion}`;
          assertValid(operation.answer, answer.body, schemas, what);
          assertValid(schemas.component(componentsOf(call).answer), answer.body, schemas, what);
          const { apiVersion, response } = answer.body as { apiVersion: string; response: Record<string, unknown> };
          answered.push(`${handler} ${apiVersion} ${String(response.allowed)} ${response.patch ? 'patch' : '-'}`);
        }
        // A patch and a refusal among them, so the answer schema saw both.
        assert.deepEqual(answered, [
          '/default-labels admission.k8s.io/v1 true patch',
          '/require-labels admission.k8s.io/v1 false -',
          '/require-labels admission.k8s.io/v1beta1 false -',
          '/require-labels admission.k8s.io/v1 false -',
        ]);
        const health = await sendRequest(agent, `${sdk.url}/healthz`, 'GET');
        assertValid(
          schemas.at('paths', '/healthz', 'get', 'responses', '200', 'content', 'text/plain', 'schema'),
          health.text,
          schemas,
          'GET /healthz',
        );
      });
    });

    it('refuses, as the gateway does, a review the gateway answers 400', async () => {
      const [sentV1] = reviews;
      assert.ok(sentV1?.review?.request);
      const h = await start('chain: []');
      const request = sentV1.review.request;
      const { uid: _uid, ...withoutUid } = request;
      const broken: Record<string, object> = {
        'no uid': { ...sentV1.review, request: withoutUid },
        'an unknown operation': { ...sentV1.review, request: { ...request, operation: 'PATCH' } },
        'a kind without its version': { ...sentV1.review, request: { ...request, kind: { group: '', kind: 'Pod' } } },
        'another apiVersion': { ...sentV1.review, apiVersion: 'admission.k8s.io/v2' },
      };
      for (const [what, review] of Object.entries(broken)) {
        const answer = await h.post('/validate', review);
        assert.equal(answer.status, 400, `the gateway took a review with ${what}`);
        assert.equal(operation.body(review), false, `the document took a review with ${what}`);
      }
    });
  });

  describe('what the gateway refuses from a provider', () => {
    it('refuses the answer and the discovery document the gateway refuses', async () => {
      const provider = await fake({
        discovery: { document: { handlers: [{ name: 'Scan', phase: 'validate' }] } },
      });
      const h = await start(`chain:
  - provider: sloppy
    url: ${provider.url('/sloppy/patch-without-type')}
    caBundle: ${provider.caBundle}
    phases: [mutate]
    failurePolicy: Ignore
  - provider: scanner
    url: ${provider.url('/hooks')}
    caBundle: ${provider.caBundle}
    discovery: true
`);
      const { response } = await h.review('/mutate', podCreate());
      assert.match(response.warnings?.[0] ?? '', /^sloppy: failed open \(invalid_response\)/);

      // The very answer the gateway refused: the fake's, to the request the gateway sent it.
      const [sent] = provider.reviews();
      const agent = new Agent({ connect: { ca: provider.caPem } });
      try {
        const answer = await sendRequest(agent, provider.url(sent!.path), 'POST', JSON.stringify(sent!.review));
        assert.equal(sent!.apiVersion, 'admission.k8s.io/v1');
        // The answer to a v1 review: the operation's answer schema also holds v1beta1's, which takes a v1 envelope.
        const v1Answer = schemas.component('AdmissionReviewResponseV1');
        assert.equal(v1Answer(answer.body), false, `the document took ${answer.text}`);
        assert.match(schemas.errors(v1Answer), /must have property patchType when property patch is present/);

        await eventually('discovery has failed', async () => {
          const chain = (await h.ops('/chain')).body as { providers: Array<{ name: string; lastError?: string }> };
          return chain.providers.some((p) => p.name === 'scanner' && p.lastError?.includes('handlers[0].name'));
        });
        const discovery = await sendRequest(agent, provider.url('/hooks/discovery'), 'GET');
        assert.equal(schemas.component('DiscoveryDocument')(discovery.body), false);
      } finally {
        await agent.close();
      }
    });
  });
});
