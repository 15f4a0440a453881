/**
 * Callers of the webhook port authenticated by client certificate: a gateway with `server.tls.clientCAFile`
 * refuses every TLS client without a certificate that CA signed, and kube-apiserver presents one — to the
 * admission webhooks through the AdmissionConfiguration `admission-gateway manifests --admission-config` renders
 * (`--admission-control-config-file`), to `/authorize` through the authorization kubeconfig rendered with
 * `--authorization-client-certificate`. The apiserver is restarted with both for this file and restored after.
 * The gateway serves on the authz port, so its address is known before it starts.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { generateCertificates } from '../../certs/generate.js';
import { RESTRICTED_LABEL } from '../../plugins/access-guard.js';
import { plugins as shippedPlugins } from '../../plugins/index.js';
import { podCreate } from '../fixtures/reviews/index.js';
import { REPO_ROOT, runCliCaptured } from '../helpers/cli.js';
import {
  AUTHZ_PORT,
  AUTHZ_TLS,
  TEST_USERS,
  WEBHOOK_CLIENT_TLS,
  core,
  deleteNamespace,
  eventually,
  grant,
  kubeConfigAs,
  randomSuffix,
  restartApiserver,
  revokeGrant,
} from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';
import { apiRequest } from './http.js';
import { pausePod } from './objects.js';
import { testPlugins } from './plugins.js';

const SUITE = 'client-certs';
const POD_RULE = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };
const GATEWAY_URL = `https://127.0.0.1:${AUTHZ_PORT}`;
const CHAIN = `
- plugin: default-labels
  settings: { labels: { checked-by: gateway } }
- plugin: access-guard
`;

/** What a TLS client meets posting a review straight to the gateway: the HTTP status, or the error. */
function post(options: { cert?: string; key?: string }): Promise<string> {
  return new Promise((resolve) => {
    const body = JSON.stringify(podCreate());
    const req = https.request(
      `${GATEWAY_URL}/mutate?timeout=5s`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        ...options,
        // The authz certificate's CA: the gateway is trusted, the question is whether it trusts the client.
        ca: AUTHZ_CA,
        agent: false,
      },
      (res) => {
        res.resume();
        resolve(`HTTP ${res.statusCode}`);
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve(`refused: ${err.code ?? err.message}`));
    req.end(body);
  });
}

let AUTHZ_CA = '';

describe('callers of the webhook port authenticated by client certificate (kube-apiserver presents one)', function () {
  this.timeout(180_000);
  const role = `e2e-client-certs-${randomSuffix()}`;
  let dir = '';
  let gw: E2EGateway | undefined;
  let restarted = false;
  let restricted = '';

  before(async function () {
    AUTHZ_CA = await readFile(AUTHZ_TLS.caFile, 'utf8');
    dir = await mkdtemp(path.join(tmpdir(), 'client-certs-'));
    // The gateway's own settings, for the command: its certificate, the client CA it trusts, its chain.
    const config = path.join(dir, 'gateway.yaml');
    await writeFile(
      config,
      stringify({
        server: {
          tls: {
            certFile: AUTHZ_TLS.certFile,
            keyFile: AUTHZ_TLS.keyFile,
            clientCAFile: WEBHOOK_CLIENT_TLS.caFile,
            generate: false,
          },
        },
        kube: { enabled: false },
        chain: [{ plugin: 'access-guard' }],
      }),
    );
    const { code, stderr } = await runCliCaptured(
      [
        'manifests',
        '--config',
        config,
        '--url',
        GATEWAY_URL,
        '--ca',
        AUTHZ_TLS.caFile,
        '--admission-config',
        path.join(dir, 'admission-config.yaml'),
        '--admission-client-certificate',
        WEBHOOK_CLIENT_TLS.certFile,
        '--admission-client-key',
        WEBHOOK_CLIENT_TLS.keyFile,
        // The apiserver runs on this machine: the "control plane" folder is the one written here.
        '--admission-control-plane-dir',
        dir,
        '--authorization-kubeconfig',
        path.join(dir, 'authorization-webhook.kubeconfig'),
        '--authorization-webhook-config-file',
        path.join(dir, 'authorization-webhook.kubeconfig'),
        '--authorization-client-certificate',
        WEBHOOK_CLIENT_TLS.certFile,
        '--authorization-client-key',
        WEBHOOK_CLIENT_TLS.keyFile,
      ],
      { cwd: REPO_ROOT, plugins: [...shippedPlugins, ...testPlugins] },
    );
    assert.equal(code, 0, stderr);
    restarted = true;
    await restartApiserver({
      admissionConfig: path.join(dir, 'admission-config.yaml'),
      authorizationKubeconfig: path.join(dir, 'authorization-webhook.kubeconfig'),
    });
    // The helper's registration probe goes through the apiserver: it passes only if the apiserver's calls do.
    gw = await startE2EGateway({
      suite: SUITE,
      chain: CHAIN,
      authorizationWebhook: true,
      clientCAFile: WEBHOOK_CLIENT_TLS.caFile,
      clusterMode: { backoff: { initialMs: 200, maxMs: 1000 } },
      mutating: [{ name: 'mutate', route: 'mutate', rules: [POD_RULE] }],
    });
    restricted = await gw.namespace();
    await core().patchNamespace({
      name: restricted,
      body: [{ op: 'add', path: `/metadata/labels/${RESTRICTED_LABEL.replace('/', '~1')}`, value: 'true' }],
    });
    await grant(role, [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }], ['e2e:readers'], [restricted]);
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    if (restarted) await restartApiserver();
    if (restricted) {
      await revokeGrant(role, [restricted]);
      await deleteNamespace(restricted);
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('lets the apiserver’s admission webhook calls in: a Pod is mutated by the gateway', async function () {
    const name = `web-${randomSuffix()}`;
    await core().createNamespacedPod({ namespace: restricted, body: pausePod(name) });
    const stored = await core().readNamespacedPod({ name, namespace: restricted });
    assert.equal(stored.metadata?.labels?.['checked-by'], 'gateway');
  });

  it('lets the apiserver’s authorization calls in: the guard refuses the reader with its reason', async function () {
    // The guard only refuses once its namespace informer has the label; a refused call would be no opinion,
    // and RBAC would then let the reader list.
    await eventually('the guard to refuse the reader', async () => {
      const answer = await apiRequest(
        kubeConfigAs(TEST_USERS.reader),
        'GET',
        `/api/v1/namespaces/${restricted}/secrets`,
      );
      return answer.status === 403 && answer.text.includes('access-guard: namespace') ? true : undefined;
    });
  });

  it('refuses a caller without a client certificate, and one with a certificate of another CA', async function () {
    const stranger = generateCertificates({ dnsNames: ['kube-apiserver'], ipAddresses: ['127.0.0.1'] });
    const results = [await post({}), await post({ cert: stranger.cert, key: stranger.key })];
    for (const result of results) assert.match(result, /^refused: /, results.join(', '));
    // The same request with the apiserver's certificate is answered.
    const apiserver = {
      cert: await readFile(WEBHOOK_CLIENT_TLS.certFile, 'utf8'),
      key: await readFile(WEBHOOK_CLIENT_TLS.keyFile, 'utf8'),
    };
    assert.equal(await post(apiserver), 'HTTP 200');
  });
});
