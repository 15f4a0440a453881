/**
 * Self-registration against an apiserver that misbehaves on cue (a stand-in over real HTTPS): the provider
 * serves reviews while the apiserver holds or refuses its registration, retries 503, 429, 403 and refused
 * connections with growing backoff, logs what RBAC is missing, gives up on a refusal retrying cannot fix, and
 * sends exactly the server-side applies docs/provider-protocol.md describes. What the real apiserver stores
 * for them is test/e2e/provider-sdk.e2e.ts.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { Agent, request } from 'undici';
import { caBundle, generateCertificates } from '../../certs/generate.js';
import defaultLabels from '../../plugins/default-labels.js';
import requireLabels from '../../plugins/require-labels.js';
import {
  DEFAULTS_FIELD_MANAGER,
  REGISTRATION_FIELD_MANAGER,
  RegistrationOptionsError,
  serveProvider,
  type ProvidedPlugin,
  type ProviderServer,
  type RegistrationOptions,
} from '../../server/provider-sdk/index.js';
import { podCreate } from '../fixtures/reviews/index.js';
import { startStandInApiserver, status, type StandInApiserver } from '../helpers/stand-in-apiserver.js';
import { eventually } from '../helpers/wait.js';

const NAME = 'labels';
const PROVIDERS = '/apis/admissiongateway.io/v1alpha1/admissionproviders';
const APPLY = 'application/apply-patch+yaml';
const bundle = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
const LABELS = { labels: { 'cost-center': 'shared' } };

/** What the apiserver stores for an apply: the object with its metadata (managedFields when given). */
function stored(body: unknown, managedFields?: unknown[]) {
  const object = body as { metadata: Record<string, unknown> };
  return {
    ...object,
    metadata: { ...object.metadata, uid: 'uid-1', resourceVersion: '7', ...(managedFields ? { managedFields } : {}) },
  };
}

describe('provider self-registration (a stand-in apiserver)', function () {
  let api: StandInApiserver;
  let provider: ProviderServer | undefined;
  let logs: Record<string, unknown>[];
  const agent = new Agent({ connect: { ca: bundle.caCert } });

  beforeEach(async function () {
    api = await startStandInApiserver();
    logs = [];
  });
  afterEach(async function () {
    await provider?.close();
    provider = undefined;
    await api.close();
  });
  after(async () => agent.close());

  const log = () =>
    pino(
      { level: 'debug' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          logs.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
          done();
        },
      }),
    );

  const serve = async (
    register: Partial<RegistrationOptions>,
    plugins: readonly ProvidedPlugin[] = [{ plugin: defaultLabels, settings: LABELS }],
  ) => {
    provider = await serveProvider({
      plugins,
      tls: { cert: bundle.cert, key: bundle.key },
      host: '127.0.0.1',
      port: 0,
      log: log(),
      register: {
        kubeConfig: api.kubeConfig(),
        name: NAME,
        url: 'https://127.0.0.1:9443',
        ca: bundle.caCert,
        retry: { initialMs: 10, maxMs: 40 },
        ...register,
      },
    });
    return provider;
  };

  const get = async (path: string) => {
    const res = await request(`${provider!.url}${path}`, { dispatcher: agent });
    return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
  };

  /** The object the provider applies under its own field manager. */
  const owned = (extra: Record<string, unknown> = {}) => ({
    apiVersion: 'admissiongateway.io/v1alpha1',
    kind: 'AdmissionProvider',
    metadata: { name: NAME },
    spec: {
      url: 'https://127.0.0.1:9443',
      caBundle: caBundle(bundle.caCert),
      discovery: true,
      phases: ['mutate'],
      ...extra,
    },
  });

  it('serves while the apiserver holds the registration, retries 503 and 429 with doubling backoff, then is registered', async function () {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    api.answerWith(async (req, i) => {
      if (i === 0) {
        await held;
        return status(503, 'ServiceUnavailable', 'etcd is not ready');
      }
      if (i === 1) return status(429, 'TooManyRequests', 'slow down');
      return { status: 201, body: stored(req.body) };
    });
    await serve({});
    await api.until('the first apply arrives', () => api.requests.length === 1);

    const review = await request(`${provider!.url}/default-labels?timeout=10s`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(podCreate()),
    });
    const answer = (await review.body.json()) as { response: { allowed: boolean; patch?: string } };
    assert.equal(review.statusCode, 200);
    assert.equal(answer.response.allowed, true);
    assert.ok(answer.response.patch, 'the plugin’s patch, while the registration is still held');
    assert.deepEqual(await get('/registration'), {
      status: 503,
      body: { state: 'registering', name: NAME, attempts: 1 },
    });

    release();
    const state = await provider!.registration!.settled;
    assert.deepEqual(state, {
      state: 'registered',
      name: NAME,
      attempts: 3,
      uid: 'uid-1',
      resourceVersion: '7',
      created: true,
    });
    assert.deepEqual(await get('/registration'), { status: 200, body: state });
    const apply = {
      method: 'PATCH',
      path: `${PROVIDERS}/${NAME}`,
      query: { fieldManager: REGISTRATION_FIELD_MANAGER, force: 'true' },
      contentType: APPLY,
      body: owned(),
    };
    assert.deepEqual(api.requests, [apply, apply, apply]);
    assert.deepEqual(
      logs.filter((l) => l.provider === NAME).map((l) => [l.level, l.msg, l.reason, l.status, l.retryInMs]),
      [
        [40, 'provider registration failed; retrying', 'ServerError', 503, 10],
        [40, 'provider registration failed; retrying', 'TooManyRequests', 429, 20],
        [30, 'provider registered', undefined, undefined, undefined],
      ],
    );
    assert.equal(
      logs.find((l) => l.reason === 'ServerError')?.message,
      `apply AdmissionProvider "${NAME}" (field manager ${REGISTRATION_FIELD_MANAGER}): HTTP 503: etcd is not ready`,
    );
  });

  it('logs the RBAC the account lacks on 403, retrying up to the cap, and registers once it is granted', async function () {
    api.answerWith((req, i) =>
      i < 4
        ? status(
            403,
            'Forbidden',
            `admissionproviders.admissiongateway.io "${NAME}" is forbidden: User "system:serviceaccount:tools:labels" cannot patch resource "admissionproviders"`,
          )
        : { status: 200, body: stored(req.body) },
    );
    await serve({});
    const state = await provider!.registration!.settled;
    assert.equal(state.state, 'registered');
    assert.equal(state.attempts, 5);
    const refusals = logs.filter((l) => l.reason === 'Forbidden');
    assert.deepEqual(
      refusals.map((l) => [l.level, l.msg, l.retryInMs]),
      [
        [50, 'provider registration failed; retrying', 10],
        [50, 'provider registration failed; retrying', 20],
        [50, 'provider registration failed; retrying', 40],
        [50, 'provider registration failed; retrying', 40],
      ],
    );
    assert.equal(
      refusals[0]!.hint,
      `the provider's account needs get, create and patch on admissionproviders.admissiongateway.io named "${NAME}" (manifests/examples/provider/rbac.yaml)`,
    );
    assert.equal(state.state === 'registered' && state.created, false, 'a 200: it existed already');
  });

  it('gives up on a registration the apiserver finds invalid (422), and keeps serving', async function () {
    api.answerWith(() =>
      status(422, 'Invalid', 'AdmissionProvider.admissiongateway.io "labels" is invalid: spec.url: Invalid value'),
    );
    await serve({});
    const state = await provider!.registration!.settled;
    assert.deepEqual(state, {
      state: 'failed',
      name: NAME,
      attempts: 1,
      lastError: {
        reason: 'Invalid',
        status: 422,
        message: `apply AdmissionProvider "${NAME}" (field manager ${REGISTRATION_FIELD_MANAGER}): HTTP 422: AdmissionProvider.admissiongateway.io "labels" is invalid: spec.url: Invalid value`,
      },
    });
    assert.equal(api.requests.length, 1);
    // Anyone who reaches the port may ask: the apiserver's words (names, accounts, fields) stay in the log.
    assert.deepEqual(await get('/registration'), {
      status: 503,
      body: { state: 'failed', name: NAME, attempts: 1, lastError: { reason: 'Invalid', status: 422 } },
    });
    assert.equal((await get('/discovery')).status, 200);
    assert.deepEqual(
      logs.filter((l) => l.provider === NAME).map((l) => [l.level, l.msg]),
      [[50, 'provider registration refused; not retried']],
    );
  });

  it('retries while the apiserver cannot be reached, and stops retrying when the provider closes', async function () {
    const kubeConfig = api.kubeConfig();
    await api.close(); // nothing listens there any more
    await serve({ kubeConfig });
    const registration = provider!.registration!;
    await eventually('two attempts were made', () => registration.state().attempts >= 2);
    const state = registration.state();
    assert.equal(state.state, 'registering');
    assert.equal(state.state === 'registering' && state.lastError?.reason, 'Unreachable');
    assert.match(
      (state.state === 'registering' && state.lastError?.message) || '',
      /^apply AdmissionProvider "labels" \(field manager admission-gateway-provider\): request to https:\/\/127\.0\.0\.1:\d+\/apis\/admissiongateway\.io\/v1alpha1\/admissionproviders\/labels\?fieldManager=admission-gateway-provider&force=true failed, reason: connect ECONNREFUSED/,
    );
    await provider!.close();
    provider = undefined;
    const stopped = await registration.settled;
    assert.equal(stopped.state, 'stopped');
    api = await startStandInApiserver(); // for afterEach
  });

  it('bounds each request in time: an apiserver that never answers is a failure, retried', async function () {
    let release!: () => void;
    const never = new Promise<void>((resolve) => (release = resolve));
    api.answerWith(async (req, i) => {
      if (i === 0) {
        await never;
        return status(500, 'InternalError', 'released at the end of the test');
      }
      return { status: 200, body: stored(req.body) };
    });
    await serve({ requestTimeoutMs: 300 });
    const state = await provider!.registration!.settled;
    release();
    assert.equal(state.state, 'registered');
    assert.deepEqual(
      logs.filter((l) => l.reason === 'Unreachable').map((l) => String(l.message).replace(/^.*: /, '')),
      ['no answer within 300 ms'],
    );
  });

  it('creates with the defaults, hands them to the defaults field manager, then applies only its own fields, owned by a ClusterRoleBinding', async function () {
    const applies: string[] = [];
    api.answerWith((req) => {
      if (req.method === 'GET' && req.path.endsWith('/clusterrolebindings/labels-provider')) {
        return { status: 200, body: { metadata: { name: 'labels-provider', uid: 'binding-uid' } } };
      }
      if (req.method === 'GET')
        return status(404, 'NotFound', `admissionproviders.admissiongateway.io "${NAME}" not found`);
      applies.push(req.query.fieldManager!);
      const managed = [
        {
          manager: REGISTRATION_FIELD_MANAGER,
          operation: 'Apply',
          fieldsV1: { 'f:spec': { 'f:url': {}, 'f:order': {}, 'f:failurePolicy': {}, 'f:discovery': {} } },
        },
      ];
      return { status: applies.length === 1 ? 201 : 200, body: stored(req.body, applies.length === 1 ? managed : []) };
    });
    await serve({ ownerClusterRoleBinding: 'labels-provider', defaults: { order: 50, failurePolicy: 'Ignore' } }, [
      { plugin: defaultLabels, settings: LABELS },
      { plugin: requireLabels, settings: { labels: ['team'] } },
    ]);
    const state = await provider!.registration!.settled;
    assert.equal(state.state === 'registered' && state.created, true);
    const owner = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      name: 'labels-provider',
      uid: 'binding-uid',
    };
    const mine = owned({ phases: ['mutate', 'validate'] });
    const withOwner = { ...mine, metadata: { name: NAME, ownerReferences: [owner] } };
    assert.deepEqual(
      api.requests.map((r) => [r.method, r.path, r.query, r.body]),
      [
        ['GET', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/labels-provider', {}, undefined],
        ['GET', `${PROVIDERS}/${NAME}`, {}, undefined],
        [
          'PATCH',
          `${PROVIDERS}/${NAME}`,
          { fieldManager: REGISTRATION_FIELD_MANAGER, force: 'false' },
          { ...withOwner, spec: { ...withOwner.spec, order: 50, failurePolicy: 'Ignore' } },
        ],
        [
          'PATCH',
          `${PROVIDERS}/${NAME}`,
          { fieldManager: DEFAULTS_FIELD_MANAGER, force: 'false' },
          { ...mine, spec: { order: 50, failurePolicy: 'Ignore' } },
        ],
        ['PATCH', `${PROVIDERS}/${NAME}`, { fieldManager: REGISTRATION_FIELD_MANAGER, force: 'true' }, withOwner],
      ],
    );
  });

  it('refuses a registration it could never make before listening, naming the option', async function () {
    const attempts: [Partial<RegistrationOptions>, string][] = [
      [
        { url: 'https://127.0.0.1:9443/hooks' },
        'register.url: expected https://HOST[:PORT] without a path (the SDK serves at the root), got "https://127.0.0.1:9443/hooks"',
      ],
      [{ url: 'http://127.0.0.1:9443' }, 'register: spec.url: expected an https:// URL, got "http://127.0.0.1:9443"'],
      [{ service: { namespace: 'tools', name: 'labels' } }, 'register: expected exactly one of url and service'],
      [
        { name: 'labels.tools' },
        'register: metadata.name "labels.tools" must be a DNS-1123 label of at most 63 characters',
      ],
      [{ ca: 'not a certificate' }, 'register: spec.caBundle: expected base64 of PEM certificates'],
      [{ defaults: { timeoutSeconds: 31 } }, 'register: spec.timeoutSeconds: expected an integer from 1 to 30, got 31'],
    ];
    for (const [options, message] of attempts) {
      await assert.rejects(serve(options), (err: unknown) => {
        assert.ok(err instanceof RegistrationOptionsError, String(err));
        assert.equal(err.message, message);
        return true;
      });
    }
    assert.equal(api.requests.length, 0);
  });
});
