/**
 * The ops port under server.opsAuth kube, as Prometheus and an attacker on the pod network meet it: HTTPS with
 * the serving certificate, and every request's bearer token authenticated (TokenReview) and the caller
 * authorized on the path (SubjectAccessReview) by an apiserver — here a stand-in speaking real HTTPS and the real
 * JSON of both reviews, through the gateway's client-node reviewer. What the real apiserver does with the same
 * requests is the lead's e2e test.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { generateCertificates, writeCertificates } from '../../certs/generate.js';
import { createLogger } from '../../server/base/log.js';
import { parseConfigText } from '../../server/config/load.js';
import type { TokenUser } from '../../server/http/ops-access.js';
import { createKubeAccessReviewer } from '../../server/kube/access-reviewer.js';
import { createClusterMode } from '../../server/kube/cluster-mode.js';
import { REPO_ROOT, runCliCaptured } from '../helpers/cli.js';
import { sendRequest, startHarness, type Harness, type HttpAnswer } from '../helpers/gateway-harness.js';
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { peerFingerprint } from '../helpers/peer-fingerprint.js';
import { podCreate } from '../fixtures/reviews/index.js';
import {
  startStandInApiserver,
  status,
  type RecordedRequest,
  type StandInAnswer,
  type StandInApiserver,
} from '../helpers/stand-in-apiserver.js';
import { eventually } from '../helpers/wait.js';

const TOKEN_REVIEWS = '/apis/authentication.k8s.io/v1/tokenreviews';
const ACCESS_REVIEWS = '/apis/authorization.k8s.io/v1/subjectaccessreviews';

/** Prometheus' ServiceAccount, bound to the metrics reader role. */
const PROMETHEUS: TokenUser = {
  username: 'system:serviceaccount:monitoring:prometheus-k8s',
  uid: '5b0c6a53-6b55-4a7c-9d0f-3d7d2f0c1a11',
  groups: ['system:serviceaccounts', 'system:serviceaccounts:monitoring', 'system:authenticated'],
  extra: { 'authentication.kubernetes.io/pod-name': ['prometheus-k8s-0'] },
};
/** Another workload's ServiceAccount: authenticated, allowed nothing on the ops port. */
const WORKLOAD: TokenUser = {
  username: 'system:serviceaccount:shop:default',
  uid: '0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9',
  groups: ['system:serviceaccounts', 'system:serviceaccounts:shop', 'system:authenticated'],
};

/** What the stand-in knows: which token is whose, and who may get which path. */
interface Cluster {
  readonly users: Map<string, TokenUser>;
  readonly grants: Map<string, readonly string[]>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The apiserver's answers to both reviews, as kube-apiserver writes them (201 Created, the review with its status). */
function reviewAnswers(cluster: Cluster): (request: RecordedRequest) => StandInAnswer {
  return (request) => {
    const body = isRecord(request.body) ? request.body : {};
    const spec = isRecord(body.spec) ? body.spec : {};
    if (request.method === 'POST' && request.path === TOKEN_REVIEWS) {
      const user = cluster.users.get(String(spec.token));
      return {
        status: 201,
        body: {
          kind: 'TokenReview',
          apiVersion: 'authentication.k8s.io/v1',
          metadata: { creationTimestamp: null },
          spec,
          status: user
            ? { authenticated: true, user, audiences: ['https://kubernetes.default.svc.cluster.local'] }
            : { user: {}, error: '[invalid bearer token, service account token has been invalidated]' },
        },
      };
    }
    if (request.method === 'POST' && request.path === ACCESS_REVIEWS) {
      const attributes = isRecord(spec.nonResourceAttributes) ? spec.nonResourceAttributes : {};
      const allowed =
        attributes.verb === 'get' && (cluster.grants.get(String(spec.user)) ?? []).includes(String(attributes.path));
      return {
        status: 201,
        body: {
          kind: 'SubjectAccessReview',
          apiVersion: 'authorization.k8s.io/v1',
          metadata: { creationTimestamp: null },
          spec,
          status: allowed
            ? { allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding "admission-gateway-metrics-reader"' }
            : { allowed: false },
        },
      };
    }
    return status(404, 'NotFound', 'the server could not find the requested resource');
  };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** The reviews the stand-in was asked since `from`: `token <token>` or `access <user> <verb> <path>`. */
function questions(standIn: StandInApiserver, from: number): string[] {
  const reviews = standIn.requests.slice(from).filter((r) => r.path === TOKEN_REVIEWS || r.path === ACCESS_REVIEWS);
  return reviews.map((r) => {
    const spec = (r.body as { spec: Record<string, unknown> }).spec;
    if (r.path === TOKEN_REVIEWS) return `token ${String(spec.token)}`;
    const attributes = spec.nonResourceAttributes as { path: string; verb: string };
    return `access ${String(spec.user)} ${attributes.verb} ${attributes.path}`;
  });
}

const CHAIN = 'chain: [{ plugin: default-labels, settings: { labels: { team: platform } } }]';

describe('ops port with server.opsAuth kube: callers the apiserver authenticates and authorizes', function () {
  this.timeout(30_000);
  let standIn: StandInApiserver;
  let cluster: Cluster;
  let harness: Harness | undefined;
  /** The caches' clock (milliseconds): the tests move it. */
  let clock: number;
  /** Requests the stand-in had before the test. */
  let earlier: number;

  async function start(limits: Record<string, number> = {}, apiserver = standIn): Promise<Harness> {
    harness = await startHarness({
      yaml: CHAIN,
      opsAccess: { reviewer: createKubeAccessReviewer(apiserver.kubeConfig()), now: () => clock, limits },
    });
    return harness;
  }

  const asked = () => questions(standIn, earlier);

  before(async function () {
    standIn = await startStandInApiserver();
  });

  after(async function () {
    await standIn.close();
  });

  beforeEach(function () {
    clock = 1_000_000;
    cluster = {
      users: new Map([
        ['prometheus-token', PROMETHEUS],
        ['workload-token', WORKLOAD],
      ]),
      grants: new Map([[PROMETHEUS.username, ['/metrics']]]),
    };
    standIn.answerWith(reviewAnswers(cluster));
    earlier = standIn.requests.length;
  });

  afterEach(async function () {
    await harness?.close();
    harness = undefined;
  });

  it('refuses every request without a bearer token with 401, asking the apiserver nothing', async function () {
    const h = await start();

    const answers: Array<[string, number, unknown, unknown]> = [];
    for (const [path, headers] of [
      ['/metrics', {}],
      ['/chain', {}],
      ['/explain', {}],
      ['/explain/0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21', {}],
      ['/openapi/v3', {}],
      ['/no-such-path', {}],
      ['/metrics', { authorization: 'Basic cHJvbWV0aGV1czpzZWNyZXQ=' }],
      ['/metrics', { authorization: 'Bearer ' }],
    ] as const) {
      const answer = await h.ops(path, 'GET', headers);
      answers.push([path, answer.status, answer.headers['www-authenticate'], answer.body]);
    }

    const refusal = {
      error: 'unauthorized: send Authorization: Bearer <token> with a token the cluster authenticates',
    };
    assert.deepEqual(
      answers,
      answers.map(([path]) => [path, 401, 'Bearer realm="admission-gateway"', refusal]),
    );
    assert.deepEqual(asked(), []);
    assert.equal(await h.metric('admission_gateway_ops_auth_decisions_total', { decision: 'unauthenticated' }), 8);
  });

  it('refuses a token the apiserver does not authenticate with 401 after one TokenReview, and asks no more for a while', async function () {
    const h = await start();

    const first = await h.ops('/metrics', 'GET', bearer('stolen-or-made-up'));
    const again = await h.ops('/metrics', 'GET', bearer('stolen-or-made-up'));

    for (const answer of [first, again]) {
      assert.deepEqual(
        { status: answer.status, challenge: answer.headers['www-authenticate'], body: answer.body },
        {
          status: 401,
          challenge: 'Bearer realm="admission-gateway", error="invalid_token"',
          body: { error: 'unauthorized: the cluster does not authenticate this token' },
        },
      );
    }
    assert.deepEqual(asked(), ['token stolen-or-made-up']);
    assert.deepEqual(standIn.requests.slice(earlier)[0]!.body, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token: 'stolen-or-made-up' },
    });
  });

  it('refuses an authenticated caller RBAC does not allow with 403, after a SubjectAccessReview of the path', async function () {
    const h = await start();

    const answer = await h.ops('/metrics', 'GET', bearer('workload-token'));

    assert.deepEqual(
      { status: answer.status, body: answer.body },
      {
        status: 403,
        body: {
          error:
            'forbidden: user "system:serviceaccount:shop:default" may not get this path (RBAC nonResourceURLs; README "Metrics reference")',
        },
      },
    );
    assert.deepEqual(asked(), ['token workload-token', 'access system:serviceaccount:shop:default get /metrics']);
    // The user exactly as the TokenReview named it, and the path and verb as a non-resource URL.
    assert.deepEqual(standIn.requests.slice(earlier)[1]!.body, {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: WORKLOAD.username,
        uid: WORKLOAD.uid,
        groups: WORKLOAD.groups,
        nonResourceAttributes: { path: '/metrics', verb: 'get' },
      },
    });
    assert.equal(await h.metric('admission_gateway_ops_auth_decisions_total', { decision: 'forbidden' }), 1);
  });

  it('serves an allowed caller its path over HTTPS with the serving certificate, and only that path', async function () {
    const h = await start();
    await h.review('/mutate', podCreate());

    const metrics = await h.ops('/metrics', 'GET', bearer('prometheus-token'));
    const chain = await h.ops('/chain', 'GET', bearer('prometheus-token'));

    assert.match(h.gateway.opsUrl, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(await peerFingerprint(h.gateway.opsUrl, h.ca), h.gateway.tls().fingerprint256);
    assert.equal(metrics.status, 200);
    assert.match(String(metrics.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    assert.match(
      metrics.text,
      /^admission_gateway_requests_total\{phase="mutate",operation="CREATE",allowed="true"\} 1$/m,
    );
    assert.equal(chain.status, 403, 'the metrics reader may not read /chain');
    assert.deepEqual(asked(), [
      'token prometheus-token',
      `access ${PROMETHEUS.username} get /metrics`,
      `access ${PROMETHEUS.username} get /chain`,
    ]);
    assert.deepEqual((standIn.requests.slice(earlier)[1]!.body as { spec: object }).spec, {
      user: PROMETHEUS.username,
      uid: PROMETHEUS.uid,
      groups: PROMETHEUS.groups,
      extra: PROMETHEUS.extra,
      nonResourceAttributes: { path: '/metrics', verb: 'get' },
    });
  });

  it('asks about the path only (no query), with the verb get for GET and HEAD', async function () {
    cluster.grants.set(PROMETHEUS.username, ['/metrics', '/explain', '/explain/*']);
    const h = await start();

    const list = await h.ops('/explain?denied=true&limit=5', 'GET', bearer('prometheus-token'));
    const one = await h.ops(
      '/explain/0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21?format=text',
      'GET',
      bearer('prometheus-token'),
    );
    const head = await h.ops('/metrics', 'HEAD', bearer('prometheus-token'));

    assert.deepEqual([list.status, one.status, head.status], [200, 403, 200]);
    assert.deepEqual(asked(), [
      'token prometheus-token',
      `access ${PROMETHEUS.username} get /explain`,
      `access ${PROMETHEUS.username} get /explain/0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21`,
      `access ${PROMETHEUS.username} get /metrics`,
    ]);
  });

  it('answers a second scrape from its cache, and asks again once the answers expire (token after 2 min, access after 5)', async function () {
    const h = await start();
    const scrape = async (): Promise<number> => (await h.ops('/metrics', 'GET', bearer('prometheus-token'))).status;

    const statuses = [await scrape(), await scrape()];
    const afterTwo = asked();
    clock += 120_000;
    statuses.push(await scrape());
    const atTokenTtl = asked();
    clock += 1;
    statuses.push(await scrape());
    const pastTokenTtl = asked();
    clock += 180_000;
    statuses.push(await scrape());

    assert.deepEqual(statuses, [200, 200, 200, 200, 200]);
    const first = ['token prometheus-token', `access ${PROMETHEUS.username} get /metrics`];
    assert.deepEqual(afterTwo, first, 'the second scrape asks nothing');
    assert.deepEqual(atTokenTtl, first, 'still kept at exactly its lifetime');
    assert.deepEqual(pastTokenTtl, [...first, 'token prometheus-token'], 'the token again, the decision still kept');
    assert.deepEqual(asked(), [...pastTokenTtl, ...first], 'both again past the decision lifetime');
    const lookups = async (review: string, result: string) =>
      h.metric('admission_gateway_ops_auth_lookups_total', { review, result });
    assert.deepEqual(
      [await lookups('token', 'asked'), await lookups('token', 'cached'), await lookups('access', 'asked')],
      [3, 2, 2],
    );
    assert.equal(await h.metric('admission_gateway_ops_auth_decisions_total', { decision: 'allowed' }), 5);
  });

  it('keeps at most maxEntries answers, and a flood of refused tokens never pushes out a granted one', async function () {
    for (const n of [1, 2, 3]) {
      const user = { ...PROMETHEUS, username: `system:serviceaccount:monitoring:scraper-${n}` };
      cluster.users.set(`token-${n}`, user);
      cluster.grants.set(user.username, ['/metrics']);
    }
    const h = await start({ maxEntries: 2 });
    const scrape = async (n: number): Promise<number> => (await h.ops('/metrics', 'GET', bearer(`token-${n}`))).status;

    const statuses = [await scrape(1), await scrape(2), await scrape(3)];
    const mark = standIn.requests.length;
    statuses.push(await scrape(1)); // pushed out by 3: asked again, which pushes out 2
    const again = questions(standIn, mark);
    const flood = standIn.requests.length;
    for (let i = 0; i < 6; i++) statuses.push((await h.ops('/metrics', 'GET', bearer(`made-up-${i}`))).status);
    const floodQuestions = questions(standIn, flood).length;
    const kept = standIn.requests.length;
    statuses.push(await scrape(3), await scrape(1));

    assert.deepEqual(statuses, [200, 200, 200, 200, 401, 401, 401, 401, 401, 401, 200, 200]);
    assert.deepEqual(again, ['token token-1', 'access system:serviceaccount:monitoring:scraper-1 get /metrics']);
    assert.equal(floodQuestions, 6);
    assert.deepEqual(questions(standIn, kept), [], 'the two granted tokens and decisions are still kept');
  });

  it('shares one question among concurrent requests, and answers 503 past maxCallsInFlight without asking', async function () {
    let release: (() => void) | undefined;
    const answer = reviewAnswers(cluster);
    standIn.answerWith(async (request) => {
      if (String((request.body as { spec: { token?: string } }).spec.token) === 'prometheus-token' && !release) {
        await new Promise<void>((resolve) => (release = resolve));
      }
      return answer(request);
    });
    const h = await start({ maxCallsInFlight: 1 });

    const held = [1, 2, 3].map(() => h.ops('/metrics', 'GET', bearer('prometheus-token')));
    // The answerer runs (and holds) right after the stand-in records the request.
    await standIn.until('the TokenReview arrives', () => standIn.requests.length > earlier);
    const busy = await h.ops('/metrics', 'GET', bearer('workload-token'));
    release!();
    const scrapes = await Promise.all(held);

    assert.deepEqual(
      { status: busy.status, retryAfter: busy.headers['retry-after'], body: busy.body },
      {
        status: 503,
        retryAfter: '5',
        body: { error: 'cannot check access now: the apiserver did not answer; try again' },
      },
    );
    assert.deepEqual(
      scrapes.map((s) => s.status),
      [200, 200, 200],
    );
    assert.deepEqual(asked(), ['token prometheus-token', `access ${PROMETHEUS.username} get /metrics`]);
    assert.equal(await h.metric('admission_gateway_ops_auth_lookups_total', { review: 'token', result: 'failed' }), 1);
  });

  describe('when the apiserver cannot be asked: 503, never the route', function () {
    const unavailable = (answer: HttpAnswer) => ({
      status: answer.status,
      retryAfter: answer.headers['retry-after'],
      body: answer.body,
    });
    const refused = {
      status: 503,
      retryAfter: '5',
      body: { error: 'cannot check access now: the apiserver did not answer; try again' },
    };

    it('answers 503 while the apiserver is down, and serves once it is back (a failure is not kept)', async function () {
      const down = await startStandInApiserver();
      down.answerWith(reviewAnswers(cluster));
      const h = await start({}, down);
      await down.close();

      const whileDown = await h.ops('/metrics', 'GET', bearer('prometheus-token'));
      const again = await h.ops('/metrics', 'GET', bearer('prometheus-token'));
      // The same address answering again: requests to it are answered by the shared stand-in from here on.
      harness = undefined;
      await h.close();

      assert.deepEqual(unavailable(whileDown), refused);
      assert.deepEqual(unavailable(again), refused);
      assert.equal(await h.metric('admission_gateway_ops_auth_decisions_total', { decision: 'unavailable' }), 2);
      const warnings = h.logs.filter((l) => l.msg === 'ops access check failed: the apiserver did not answer; 503');
      assert.equal(warnings.length, 1, 'logged once, not once per request');
      assert.match(String(warnings[0]!.err), /^TokenReview: /);
    });

    it('answers 503 when the apiserver refuses the review itself (500, or 403: the gateway may not create TokenReviews), then serves', async function () {
      const h = await start();
      const answers: HttpAnswer[] = [];
      for (const failure of [
        status(500, 'InternalError', 'etcdserver: request timed out'),
        status(
          403,
          'Forbidden',
          'tokenreviews.authentication.k8s.io is forbidden: User "system:serviceaccount:admission-gateway:admission-gateway" cannot create resource "tokenreviews"',
        ),
      ]) {
        standIn.answerWith(() => failure);
        answers.push(await h.ops('/metrics', 'GET', bearer('prometheus-token')));
      }
      // Authenticated, then the SubjectAccessReview fails.
      const answer = reviewAnswers(cluster);
      standIn.answerWith((request) =>
        request.path === ACCESS_REVIEWS ? status(429, 'TooManyRequests', 'too many requests') : answer(request),
      );
      answers.push(await h.ops('/metrics', 'GET', bearer('prometheus-token')));
      standIn.answerWith(answer);
      const back = await h.ops('/metrics', 'GET', bearer('prometheus-token'));

      assert.deepEqual(answers.map(unavailable), [refused, refused, refused]);
      assert.equal(back.status, 200);
      assert.match(back.text, /^# TYPE admission_gateway_requests_total counter$/m);
      assert.ok(
        !answers.some((a) => a.text.includes('etcdserver') || a.text.includes('forbidden')),
        'the apiserver’s error text is not shown to the caller',
      );
    });

    it('answers 503 when the apiserver does not answer within callTimeoutMs', async function () {
      let release: (() => void) | undefined;
      const answer = reviewAnswers(cluster);
      standIn.answerWith(async (request) => {
        await new Promise<void>((resolve) => (release = resolve));
        return answer(request);
      });
      const h = await start({ callTimeoutMs: 200 });

      const late = await h.ops('/metrics', 'GET', bearer('prometheus-token'));
      release?.();

      assert.deepEqual(unavailable(late), refused);
      const warning = h.logs.find((l) => l.msg === 'ops access check failed: the apiserver did not answer; 503');
      assert.equal(warning?.err, 'TokenReview: no answer within 200 ms');
    });
  });

  it('serves a renewed serving certificate on the ops port too, without a restart', async function () {
    const h = await start();
    const previous = h.gateway.tls().fingerprint256;
    assert.equal(await peerFingerprint(h.gateway.opsUrl, h.ca), previous);

    const next = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
    await writeCertificates(h.dir, next);
    await eventually('the gateway serves the new certificate', () => h.gateway.tls().fingerprint256 !== previous);

    const expected = new X509Certificate(next.cert).fingerprint256;
    assert.equal(await peerFingerprint(h.gateway.opsUrl, next.caCert), expected);
    await assert.rejects(peerFingerprint(h.gateway.opsUrl, h.ca), /self[- ]signed|unable to verify|certificate/i);
  });
});

describe('server.opsAuth by mode', function () {
  this.timeout(60_000);
  let dir: string;
  let standIn: StandInApiserver | undefined;
  let gateway: GatewayProcess | undefined;

  beforeEach(async function () {
    dir = await mkdtemp(join(tmpdir(), 'gateway-ops-auth-'));
  });

  afterEach(async function () {
    gateway?.kill();
    gateway = undefined;
    await standIn?.close();
    standIn = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  it('serve in cluster mode guards the ops port by default: HTTPS, 401 without a token, the metrics for an allowed one', async function () {
    standIn = await startStandInApiserver();
    const apiserver = standIn;
    const cluster: Cluster = {
      users: new Map([['prometheus-token', PROMETHEUS]]),
      grants: new Map([[PROMETHEUS.username, ['/metrics']]]),
    };
    const reviews = reviewAnswers(cluster);
    // The namespace watch of cluster mode is refused (it retries with backoff); only the reviews are answered.
    apiserver.answerWith((request) =>
      request.path === TOKEN_REVIEWS || request.path === ACCESS_REVIEWS
        ? reviews(request)
        : status(500, 'InternalError', 'not served by this stand-in'),
    );
    await writeFile(join(dir, 'kubeconfig'), apiserver.kubeConfig().exportConfig());
    await writeCertificates(
      join(dir, 'certs'),
      generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] }),
    );
    const config = join(dir, 'gateway.yaml');
    await writeFile(
      config,
      [
        'server: { tls: { certFile: certs/tls.crt, keyFile: certs/tls.key } }',
        'kube: { enabled: true, watchProviders: false, kubeconfig: kubeconfig }',
        'chain: [{ plugin: default-labels, settings: { labels: { team: platform } } }]',
      ].join('\n'),
    );
    gateway = await spawnGateway({
      command: process.execPath,
      args: [
        ...['--import', 'tsx', join(REPO_ROOT, 'server', 'main.ts'), 'serve', '--config', config],
        ...['--port', '0', '--ops-port', '0', '--health-port', '0'],
      ],
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH, HOME: dir },
    });
    const client = new Agent({ connect: { ca: await readFile(join(dir, 'certs', 'ca.crt')) } });
    try {
      const anonymous = await sendRequest(client, `${gateway.ops}/metrics`, 'GET');
      const prometheus = await sendRequest(
        client,
        `${gateway.ops}/metrics`,
        'GET',
        undefined,
        bearer('prometheus-token'),
      );

      assert.match(gateway.ops, /^https:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(anonymous.status, 401);
      assert.equal(prometheus.status, 200);
      assert.match(prometheus.text, /^# TYPE admission_gateway_ops_auth_decisions_total counter$/m);
      assert.deepEqual(questions(apiserver, 0), [
        'token prometheus-token',
        `access ${PROMETHEUS.username} get /metrics`,
      ]);
    } finally {
      await client.close();
    }
  });

  it('cluster mode leaves the ops port to anyone who reaches it with server.opsAuth none', async function () {
    standIn = await startStandInApiserver();
    const log = createLogger('silent');
    const prepared = async (yaml: string) =>
      createClusterMode(standIn!.kubeConfig(), parseConfigText(yaml, join(dir, 'gateway.yaml'), dir), log).prepare();

    assert.ok((await prepared('{}')).opsAccess, 'guarded by default');
    assert.ok((await prepared('server: { opsAuth: kube }')).opsAccess);
    assert.equal((await prepared('server: { opsAuth: none }')).opsAccess, undefined);
  });

  it('serve refuses server.opsAuth kube without a cluster, exit 2 naming the field', async function () {
    const config = join(dir, 'gateway.yaml');
    // log.level warn: the line saying which config was loaded stays out of the test's output.
    await writeFile(config, 'server:\n  opsAuth: kube\nkube:\n  enabled: auto\nlog:\n  level: warn\n');

    const run = await runCliCaptured(['serve', '--config', config, '--port', '0', '--ops-port', '0'], {
      env: { PATH: process.env.PATH, HOME: dir },
    });

    assert.deepEqual(run, {
      code: 2,
      stdout: '',
      stderr: `admission-gateway: ${config}:2:3: server.opsAuth: needs cluster mode, but no kubeconfig or in-cluster service account was found\n`,
    });
  });
});
