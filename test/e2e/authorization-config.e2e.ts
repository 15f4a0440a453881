/**
 * Structured authorization (Kubernetes 1.32+): kube-apiserver restarted with the AuthorizationConfiguration that
 * `admission-gateway manifests --authorization-config` renders for a gateway running access-guard, instead of
 * the suite's `--authorization-mode=Webhook,RBAC` flags. The gateway is asked only what its matchConditions let
 * through (a read of Secrets by someone it judges), RBAC decides the rest, and from 1.34 the SubjectAccessReview
 * carries a list's label selector, which access-guard's shareableLabel reads: a list narrowed to shareable
 * Secrets of a restricted namespace is left to RBAC. The suite's flags are restored afterwards.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { RESTRICTED_LABEL } from '../../plugins/access-guard.js';
import { plugins as shippedPlugins } from '../../plugins/index.js';
import { REPO_ROOT, runCliCaptured } from '../helpers/cli.js';
import {
  AUTHZ_PORT,
  AUTHZ_TLS,
  TEST_USERS,
  core,
  deleteNamespace,
  eventually,
  grant,
  kubeConfigAs,
  randomSuffix,
  requireKube,
  restartApiserver,
  revokeGrant,
  type TestUser,
} from './cluster.js';
import { anyFailed, metricValue, startE2EGateway, type E2EGateway } from './gateway.js';
import { apiRequest } from './http.js';
import { testPlugins } from './plugins.js';

const SUITE = 'authz-config';
const OPERATORS_GROUP = 'e2e:operators';
const READERS_GROUP = 'e2e:readers';
const SHAREABLE = 'e2e.admissiongateway.io/shareable';

const CHAIN = `
- plugin: access-guard
  settings:
    allowedGroups: ['${OPERATORS_GROUP}']
    shareableLabel: ${SHAREABLE}
`;

const request = (user: TestUser, apiPath: string) => apiRequest(kubeConfigAs(user), 'GET', apiPath);

/** The names a list answered, or its HTTP status and message when it was refused. */
async function listed(user: TestUser, apiPath: string): Promise<string[] | string> {
  const answer = await request(user, apiPath);
  const body = JSON.parse(answer.text) as { items?: { metadata: { name: string } }[]; message?: string };
  return answer.status === 200 ? body.items!.map((i) => i.metadata.name).sort() : `${answer.status}: ${body.message}`;
}

describe('the authorization webhook configured by --authorization-config (structured authorization)', function () {
  this.timeout(180_000);
  const role = `e2e-authz-config-${randomSuffix()}`;
  let gw: E2EGateway | undefined;
  let dir = '';
  let restricted = '';
  let configFile = '';
  let restarted = false;

  /** The gateway's authorize decisions so far, by decision. */
  const decisions = async () => {
    const text = await gw!.metrics();
    const value = (decision: string) =>
      metricValue(text, 'admission_gateway_authorize_requests_total', { decision }) ?? 0;
    return { denied: value('denied'), none: value('no_opinion'), excluded: value('excluded') };
  };

  before(async function () {
    requireKube(this, 32, 'kube-apiserver --authorization-config');
    gw = await startE2EGateway({
      suite: SUITE,
      chain: CHAIN,
      authorizationWebhook: true,
      clusterMode: { backoff: { initialMs: 200, maxMs: 1000 } },
      // No AdmissionProviders at run time: the rendered conditions may then name the steps' requests.
      kube: { watchProviders: false },
    });
    restricted = await gw.namespace();
    await core().patchNamespace({
      name: restricted,
      body: [{ op: 'add', path: `/metadata/labels/${RESTRICTED_LABEL.replace('/', '~1')}`, value: 'true' }],
    });
    for (const [name, labels] of [
      ['db-password', {}],
      ['public-ca', { [SHAREABLE]: 'true' }],
    ] as const) {
      await core().createNamespacedSecret({
        namespace: restricted,
        body: { metadata: { name, labels }, stringData: { value: 'not-a-secret' } },
      });
    }
    await core().createNamespacedConfigMap({ namespace: restricted, body: { metadata: { name: 'settings' } } });
    await grant(
      role,
      [{ apiGroups: [''], resources: ['secrets', 'configmaps'], verbs: ['get', 'list'] }],
      [READERS_GROUP],
      [restricted],
    );

    dir = await mkdtemp(path.join(tmpdir(), 'authz-config-'));
    configFile = path.join(dir, 'authorization-config.yaml');
    const kubeconfig = path.join(dir, 'authorization-webhook.kubeconfig');
    const { code, stderr } = await runCliCaptured(
      [
        'manifests',
        '--config',
        path.join(gw.dir, 'gateway.yaml'),
        '--ca',
        AUTHZ_TLS.caFile,
        '--authorization-kubeconfig',
        kubeconfig,
        '--authorization-url',
        `https://127.0.0.1:${AUTHZ_PORT}`,
        // The apiserver runs on this machine: the "control plane" paths are the files written here.
        '--authorization-webhook-config-file',
        kubeconfig,
        '--authorization-mode',
        'RBAC',
        '--authorization-config',
        configFile,
      ],
      { cwd: REPO_ROOT, plugins: [...shippedPlugins, ...testPlugins] },
    );
    assert.equal(code, 0, stderr);
    restarted = true;
    await restartApiserver({ authorizationConfig: configFile });
    // The namespace label reaches the gateway through its informer: the guard refuses once it has it.
    await eventually('the guard to refuse the reader the restricted namespace’s Secrets', async () =>
      (await request(TEST_USERS.reader, `/api/v1/namespaces/${restricted}/secrets`)).status === 403 ? true : undefined,
    );
  });

  after(async function () {
    if (restarted) await restartApiserver();
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    if (restricted) {
      await revokeGrant(role, [restricted]);
      await deleteNamespace(restricted);
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('was rendered as the gateway’s webhook before RBAC, NoOpinion, its conditions naming what access-guard matches', async function () {
    const config = parse(await readFile(configFile, 'utf8')) as {
      authorizers: { type: string; name: string; webhook?: { failurePolicy: string; matchConditions: unknown[] } }[];
    };
    assert.deepEqual(
      config.authorizers.map((a) => [a.type, a.name, a.webhook?.failurePolicy, a.webhook?.matchConditions.length]),
      [
        ['Webhook', 'admission-gateway', 'NoOpinion', 3],
        ['RBAC', 'rbac', undefined, undefined],
      ],
    );
  });

  it('refuses the reader a list of the restricted namespace’s Secrets with the guard’s reason', async function () {
    assert.equal(
      await listed(TEST_USERS.reader, `/api/v1/namespaces/${restricted}/secrets`),
      `403: secrets is forbidden: User "${TEST_USERS.reader.name}" cannot list resource "secrets" in API group "" in ` +
        `the namespace "${restricted}": access-guard: namespace ${restricted} is restricted (${RESTRICTED_LABEL}=true): ` +
        `only members of ${OPERATORS_GROUP} may read its Secrets`,
    );
  });

  it('is not asked about what no authorize step matches: the reader’s ConfigMap reads go straight to RBAC', async function () {
    const before = await decisions();
    assert.deepEqual(await listed(TEST_USERS.reader, `/api/v1/namespaces/${restricted}/configmaps`), ['settings']);
    const answer = await request(TEST_USERS.reader, `/api/v1/namespaces/${restricted}/configmaps/settings`);
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(await decisions(), before);
  });

  it('is not asked about the identities it never judges: a kube-system ServiceAccount goes straight to RBAC', async function () {
    const before = await decisions();
    const robot = { ...TEST_USERS.admin };
    const answer = await apiRequest(kubeConfigAs(robot), 'GET', `/api/v1/namespaces/${restricted}/secrets`, {
      'impersonate-user': 'system:serviceaccount:kube-system:e2e-robot',
    });
    // RBAC grants that account nothing: its own 403, with no reason of the gateway's.
    assert.equal(answer.status, 403, answer.text);
    assert.doesNotMatch(answer.text, /access-guard/);
    assert.deepEqual(await decisions(), before, 'the gateway was never asked (not even to exclude it)');
  });

  it('leaves to RBAC a list narrowed to shareable Secrets: the selector reaches access-guard (1.34+)', async function () {
    requireKube(this, 34, 'label selectors in SubjectAccessReviews');
    const selector = encodeURIComponent(`${SHAREABLE}=true`);
    assert.deepEqual(
      await listed(TEST_USERS.reader, `/api/v1/namespaces/${restricted}/secrets?labelSelector=${selector}`),
      ['public-ca'],
    );
    // Narrowed to something else, it is refused as before.
    const other = encodeURIComponent(`${SHAREABLE}!=false`);
    assert.match(
      String(await listed(TEST_USERS.reader, `/api/v1/namespaces/${restricted}/secrets?labelSelector=${other}`)),
      /^403: .*access-guard: namespace/,
    );
  });
});
