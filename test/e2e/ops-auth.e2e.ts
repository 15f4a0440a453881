/**
 * The ops port guarded by the real apiserver (server.opsAuth kube, the default in cluster mode): HTTPS with the
 * serving certificate, every caller's bearer token authenticated by a TokenReview and the path authorized by a
 * SubjectAccessReview. Who may read what comes from the shipped ClusterRoles of manifests/ops-access-rbac.yaml
 * (created here under suite names, so an install test applying the manifests never meets them): a
 * ServiceAccount bound to the metrics reader, as Prometheus would be, and a static-token user bound to the trace
 * reader. Every other e2e gateway runs with opsAuth none (gateway.ts).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import {
  AuthorizationV1Api,
  RbacAuthorizationV1Api,
  type RbacV1Subject,
  type V1ClusterRole,
} from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../helpers/cli.js';
import { TEST_USERS, core, eventually, kubeConfig, randomSuffix } from './cluster.js';
import { startE2EGateway, type E2EGateway } from './gateway.js';
import { pausePod } from './objects.js';

const SUITE = 'ops-auth';
const POD_RULE = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };

interface Answer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

function json(answer: Answer): unknown {
  return JSON.parse(answer.body) as unknown;
}

/** The ops port's 403 to `user`. */
function forbidden(user: string): { status: number; body: unknown } {
  const error = `forbidden: user "${user}" may not get this path (RBAC nonResourceURLs; README "Metrics reference")`;
  return { status: 403, body: { error } };
}

const rbac = (): RbacAuthorizationV1Api => kubeConfig().makeApiClient(RbacAuthorizationV1Api);

/** The shipped ClusterRole `name` from manifests/ops-access-rbac.yaml. */
async function shippedRole(name: string): Promise<V1ClusterRole> {
  const text = await readFile(path.join(REPO_ROOT, 'manifests', 'ops-access-rbac.yaml'), 'utf8');
  const role = parseAllDocuments(text)
    .map((doc) => doc.toJS() as V1ClusterRole)
    .find((object) => object.kind === 'ClusterRole' && object.metadata?.name === name);
  if (!role) throw new Error(`manifests/ops-access-rbac.yaml has no ClusterRole ${name}`);
  return role;
}

/** The shipped role's rules under `as`, bound to `subject`. */
async function bindShippedRole(shipped: string, as: string, subject: RbacV1Subject): Promise<void> {
  const role = await shippedRole(shipped);
  await rbac().createClusterRole({ body: { metadata: { name: as }, rules: role.rules ?? [] } });
  await rbac().createClusterRoleBinding({
    body: {
      metadata: { name: as },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: as },
      subjects: [subject],
    },
  });
}

async function unbind(name: string): Promise<void> {
  await rbac()
    .deleteClusterRoleBinding({ name })
    .catch(() => undefined);
  await rbac()
    .deleteClusterRole({ name })
    .catch(() => undefined);
}

/**
 * Waits until the apiserver itself lets `user` get `url`, so the gateway's first question about it is not
 * answered from an RBAC cache that has not seen the binding yet (a refusal would be kept for a while).
 */
async function untilAllowed(user: string, groups: readonly string[], url: string): Promise<void> {
  const api = kubeConfig().makeApiClient(AuthorizationV1Api);
  await eventually(`the apiserver to let ${user} get ${url}`, async () => {
    const review = await api.createSubjectAccessReview({
      body: { spec: { user, groups: [...groups], nonResourceAttributes: { path: url, verb: 'get' } } },
    });
    if (!review.status?.allowed) throw new Error(`not allowed yet: ${review.status?.reason ?? ''}`);
    return true;
  });
}

describe('ops port authenticated and authorized by the apiserver (server.opsAuth kube)', function () {
  let gw: E2EGateway | undefined;
  let ca: Buffer;
  let namespace = '';
  let serviceAccountUser = '';
  let serviceAccountToken = '';
  const metricsRole = `${SUITE}-metrics-reader-${randomSuffix()}`;
  const traceRole = `${SUITE}-trace-reader-${randomSuffix()}`;

  function get(url: string, token?: string): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = https.get(
        `${gw!.gateway.opsUrl}${url}`,
        { ca, agent: false, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }),
          );
        },
      );
      req.on('error', reject);
    });
  }

  before(async function () {
    gw = await startE2EGateway({
      suite: SUITE,
      chain: '- plugin: default-labels\n  settings: { labels: { checked-by: gateway } }\n',
      server: { opsAuth: 'kube' },
      clusterMode: {},
      mutating: [{ name: 'mutate', route: 'mutate', rules: [POD_RULE] }],
    });
    ca = await readFile(path.join(gw.dir, 'ca.crt'));
    namespace = await gw.namespace();
    // Prometheus' account: a ServiceAccount with a token from the TokenRequest API, bound to the metrics reader.
    await core().createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'prometheus' } } });
    const request = await core().createNamespacedServiceAccountToken({
      name: 'prometheus',
      namespace,
      body: { spec: { audiences: [], expirationSeconds: 600 } },
    });
    serviceAccountToken = request.status?.token ?? '';
    assert.ok(serviceAccountToken, 'the TokenRequest API gave no token');
    serviceAccountUser = `system:serviceaccount:${namespace}:prometheus`;
    await bindShippedRole('admission-gateway-metrics-reader', metricsRole, {
      kind: 'ServiceAccount',
      name: 'prometheus',
      namespace,
    });
    await bindShippedRole('admission-gateway-trace-reader', traceRole, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'User',
      name: TEST_USERS.operator.name,
    });
    await untilAllowed(
      serviceAccountUser,
      ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
      '/metrics',
    );
    await untilAllowed(TEST_USERS.operator.name, TEST_USERS.operator.groups, '/chain');
    await untilAllowed(TEST_USERS.operator.name, TEST_USERS.operator.groups, '/explain/x');
  });

  after(async function () {
    await unbind(metricsRole);
    await unbind(traceRole);
    await gw?.close();
  });

  it('serves HTTPS with the serving certificate, and refuses a request without a token with 401', async function () {
    assert.match(gw!.gateway.opsUrl, /^https:\/\/127\.0\.0\.1:\d+$/);
    for (const url of ['/metrics', '/explain']) {
      const answer = await get(url);
      assert.deepEqual(
        { url, status: answer.status, authenticate: answer.headers['www-authenticate'], body: json(answer) },
        {
          url,
          status: 401,
          authenticate: 'Bearer realm="admission-gateway"',
          body: { error: 'unauthorized: send Authorization: Bearer <token> with a token the cluster authenticates' },
        },
      );
    }
  });

  it('refuses a token the apiserver does not authenticate with 401', async function () {
    const answer = await get('/metrics', `made-up-${randomSuffix()}`);
    assert.deepEqual(
      { status: answer.status, body: json(answer) },
      { status: 401, body: { error: 'unauthorized: the cluster does not authenticate this token' } },
    );
  });

  it('serves /metrics to the ServiceAccount bound to the metrics reader role, and refuses it the traces', async function () {
    const metrics = await get('/metrics', serviceAccountToken);
    assert.equal(metrics.status, 200, metrics.body);
    assert.match(metrics.body, /^# HELP admission_gateway_requests_total /m);
    const explain = await get('/explain', serviceAccountToken);
    assert.deepEqual({ status: explain.status, body: json(explain) }, forbidden(serviceAccountUser));
  });

  it('serves the traces and the chain to the user bound to the trace reader role, and refuses it /metrics', async function () {
    // A review to trace: default-labels labels a Pod created in the suite's namespace.
    await core().createNamespacedPod({ namespace, body: pausePod(`traced-${randomSuffix()}`), dryRun: 'All' });
    const token = TEST_USERS.operator.token;
    const chain = await get('/chain', token);
    assert.equal(chain.status, 200, chain.body);
    assert.ok(
      (JSON.parse(chain.body) as { mutate: { name: string }[] }).mutate.some((s) => s.name === 'default-labels'),
      chain.body,
    );
    const explain = await get('/explain', token);
    assert.equal(explain.status, 200, explain.body);
    assert.ok(Array.isArray((JSON.parse(explain.body) as { reviews: unknown }).reviews), explain.body);
    const metrics = await get('/metrics', token);
    assert.deepEqual({ status: metrics.status, body: json(metrics) }, forbidden(TEST_USERS.operator.name));
  });

  it('counts every decision, and asks the apiserver once per token and path while the answer is kept', async function () {
    const text = (await get('/metrics', serviceAccountToken)).body;
    const value = (name: string, labels: string): number => {
      const line = text.split('\n').find((l) => l.startsWith(`admission_gateway_${name}{${labels}} `));
      return line ? Number(line.split(' ').at(-1)) : 0;
    };
    // 401: two without a token, one made up; 403: the account's /explain, the operator's /metrics;
    // allowed: the account's two scrapes (this one counted before it is served), the operator's /chain and /explain.
    assert.deepEqual(
      {
        unauthenticated: value('ops_auth_decisions_total', 'decision="unauthenticated"'),
        forbidden: value('ops_auth_decisions_total', 'decision="forbidden"'),
        allowed: value('ops_auth_decisions_total', 'decision="allowed"'),
        unavailable: value('ops_auth_decisions_total', 'decision="unavailable"'),
      },
      { unauthenticated: 3, forbidden: 2, allowed: 4, unavailable: 0 },
    );
    // Tokens asked: the made-up one, the account's, the operator's; the account's second scrape is answered from the
    // kept grant. Paths asked: account /metrics and /explain, operator /chain, /explain and /metrics.
    assert.deepEqual(
      {
        tokensAsked: value('ops_auth_lookups_total', 'review="token",result="asked"'),
        accessAsked: value('ops_auth_lookups_total', 'review="access",result="asked"'),
        failed:
          value('ops_auth_lookups_total', 'review="token",result="failed"') +
          value('ops_auth_lookups_total', 'review="access",result="failed"'),
      },
      { tokensAsked: 3, accessAsked: 5, failed: 0 },
    );
  });
});
