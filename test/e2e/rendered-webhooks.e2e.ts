/**
 * `admission-gateway manifests` against the real kube-apiserver: the URL-mode configurations it renders for
 * a test chain are created for real and route requests to an in-process gateway (mutation stored, a Fail
 * validating step refusing), and the Service-mode output for the installed chain passes a server-side
 * dry-run create.
 *
 * Isolation: the configurations are rendered with `--namespace-label e2e.admissiongateway.io/suite=rendered`
 * (a flag of the command, not a post-processing step), so they only select this file's namespaces; every
 * step matches namespaced resources only (a namespaceSelector never exempts cluster-scoped objects).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type {
  V1ConfigMap,
  V1MutatingWebhookConfiguration,
  V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { plugins as shippedPlugins } from '../../plugins/index.js';
import { runCliCaptured } from '../helpers/cli.js';
import { CoordinationV1Api } from '@kubernetes/client-node';
import {
  SUITE_LABEL,
  admissionRegistration,
  apiError,
  apps,
  core,
  eventually,
  kubeAtLeast,
  kubeConfig,
  kubeVersion,
  plain,
  randomSuffix,
  readStatus,
  requireKube,
  statusOf,
  warningTexts,
} from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';
import { PROBE_ANNOTATION_PREFIX, PROBE_LABEL, testPlugins } from './plugins.js';
import { pauseDeployment } from './objects.js';

const SUITE = 'rendered';
const NAME = `${SUITE}.e2e.admissiongateway.io`;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

// Only namespaced resources: the rendered webhooks select this file's namespaces by label, and a
// namespaceSelector never exempts cluster-scoped objects, which other files create on the same apiserver.
const CHAIN = `
- plugin: default-labels
  failurePolicy: Ignore
  settings: { labels: { rendered: 'yes' } }
  match: { rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [configmaps] }] }
- plugin: require-labels
  settings: { labels: [team] }
- plugin: pod-security
  mode: warn
  failurePolicy: Ignore
- plugin: default-labels
  name: lease-labels
  failurePolicy: Ignore
  settings: { labels: { rendered: 'yes' } }
  match: { rules: [{ operations: [CREATE], apiGroups: [coordination.k8s.io], apiVersions: [v1], resources: [leases] }] }
`;

interface RenderedList {
  items: (V1MutatingWebhookConfiguration | V1ValidatingWebhookConfiguration)[];
}

/** What `manifests` says on stderr when rendering for 1.20, which has no namespace name label to exclude by. */
function labelNote(excluded: readonly string[]): string {
  if (kubeAtLeast(21)) return '';
  return (
    `admission-gateway: Kubernetes 1.${kubeVersion()[1]} does not label namespaces with their name: before ` +
    `applying, kubectl label namespace ${excluded.join(' ')} admissiongateway.io/exclude=true\n`
  );
}

/** Runs `admission-gateway manifests <args> -o json` in this process; stderr must be `expectedStderr`. */
async function render(args: readonly string[], expectedStderr = ''): Promise<RenderedList['items']> {
  // Rendered for the apiserver under test, as an operator renders for their cluster.
  const version = ['--kube-version', kubeVersion().join('.')];
  const { code, stdout, stderr } = await runCliCaptured(['manifests', ...args, ...version, '-o', 'json'], {
    cwd: ROOT,
    plugins: [...shippedPlugins, ...testPlugins],
  });
  assert.equal(code, 0, stderr);
  assert.equal(stderr, expectedStderr);
  return (JSON.parse(stdout) as RenderedList).items;
}

/** The fields the renderer set, as the apiserver stored them (it adds defaults such as scope and objectSelector). */
function storedAsRendered(rendered: object, stored: object): Record<string, unknown> {
  const s = plain(stored) as Record<string, unknown>;
  return Object.fromEntries(Object.keys(rendered).map((key) => [key, s[key]]));
}

describe('webhook configurations rendered by `admission-gateway manifests`', function () {
  let gw: E2EGateway | undefined;
  let rendered: RenderedList['items'];
  let namespace: string;
  /** Selected by the suite label, but excluded by name (`--exclude-namespace`). */
  let excluded: string;

  before(async function () {
    // No webhook registered by the helper: the rendered configurations are the registration.
    gw = await startE2EGateway({ suite: SUITE, chain: CHAIN });
    excluded = await gw.namespace();
    rendered = await render(
      [
        '--config',
        path.join(gw.dir, 'gateway.yaml'),
        '--url',
        gw.gateway.webhookUrl,
        '--ca',
        path.join(gw.dir, 'ca.crt'),
        '--name',
        NAME, // the name the helper deregisters on close
        '--namespace-label',
        `${SUITE_LABEL}=${SUITE}`,
        '--exclude-namespace',
        excluded,
      ],
      labelNote(['kube-system', 'kube-node-lease', 'admission-gateway', excluded]),
    );
    const api = admissionRegistration();
    for (const item of rendered) {
      if (item.kind === 'MutatingWebhookConfiguration') {
        await api.createMutatingWebhookConfiguration({ body: item });
      } else {
        await api.createValidatingWebhookConfiguration({ body: item });
      }
    }
    namespace = await gw.namespace();
    // The apiserver picks webhook configurations up through an informer: wait until a dry-run probe
    // ConfigMap shows the mutate webhook (both probe steps) and both validating webhooks acting.
    await eventually(
      'the apiserver to call the rendered webhooks',
      async () => {
        const { data, headers } = await core().createNamespacedConfigMapWithHttpInfo({
          namespace,
          body: { metadata: { name: `probe-${randomSuffix()}`, labels: { [PROBE_LABEL]: 'true' } } },
          dryRun: 'All',
        });
        const annotations = data.metadata?.annotations ?? {};
        const warnings = warningTexts(headers);
        const seen =
          annotations[`${PROBE_ANNOTATION_PREFIX}fail`] === 'seen' &&
          annotations[`${PROBE_ANNOTATION_PREFIX}ignore`] === 'seen' &&
          warnings.includes('e2e-probe-fail: seen') &&
          warnings.includes('e2e-probe-ignore: seen');
        if (!seen)
          throw new Error(`probe saw annotations ${JSON.stringify(annotations)}, warnings ${warnings.join(' | ')}`);
        return true;
      },
      { timeoutMs: 45_000 },
    );
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
  });

  it('were rendered for the chain: /mutate, /validate/fail and /validate/ignore at the gateway URL', function () {
    assert.deepEqual(
      rendered.map((c) => [
        c.kind,
        c.metadata?.name,
        c.webhooks?.map((w) => [w.name, w.clientConfig.url, w.failurePolicy, w.namespaceSelector?.matchLabels]),
      ]),
      [
        [
          'MutatingWebhookConfiguration',
          NAME,
          [['mutate.admissiongateway.io', `${gw!.gateway.webhookUrl}/mutate`, 'Fail', { [SUITE_LABEL]: SUITE }]],
        ],
        [
          'ValidatingWebhookConfiguration',
          NAME,
          [
            [
              'validate-fail.admissiongateway.io',
              `${gw!.gateway.webhookUrl}/validate/fail`,
              'Fail',
              { [SUITE_LABEL]: SUITE },
            ],
            [
              'validate-ignore.admissiongateway.io',
              `${gw!.gateway.webhookUrl}/validate/ignore`,
              'Ignore',
              { [SUITE_LABEL]: SUITE },
            ],
          ],
        ],
      ],
    );
  });

  it('are stored by the apiserver exactly as rendered', async function () {
    const api = admissionRegistration();
    const stored = [
      await api.readMutatingWebhookConfiguration({ name: NAME }),
      await api.readValidatingWebhookConfiguration({ name: NAME }),
    ];
    assert.deepEqual(
      stored.map((c, i) => (c.webhooks ?? []).map((w, j) => storedAsRendered(rendered[i]!.webhooks![j]!, w))),
      rendered.map((c) => plain(c.webhooks)),
    );
  });

  it('route a ConfigMap through the mutate webhook: the apiserver stores the mutation', async function () {
    const name = `cm-${randomSuffix()}`;
    const body: V1ConfigMap = { metadata: { name }, data: { a: 'b' } };
    await core().createNamespacedConfigMap({ namespace, body });

    const stored = await core().readNamespacedConfigMap({ name, namespace });
    assert.deepEqual(stored.metadata?.labels, { rendered: 'yes' });
  });

  it('route a Deployment to the Fail validating webhook, which refuses it', async function () {
    const name = `deploy-${randomSuffix()}`;
    const err = await apiError(apps().createNamespacedDeployment({ namespace, body: pauseDeployment(name, {}) }));

    assert.equal(err.code, 403);
    assert.equal(
      statusOf(err).message,
      'admission webhook "validate-fail.admissiongateway.io" denied the request: require-labels: missing required label: team',
    );
    assert.equal(await readStatus(() => apps().readNamespacedDeployment({ name, namespace })), 404);
  });

  it('route a Deployment to the Ignore validating webhook too: stored, with its warning', async function () {
    const name = `deploy-${randomSuffix()}`;
    const { headers } = await apps().createNamespacedDeploymentWithHttpInfo({
      namespace,
      body: pauseDeployment(
        name,
        { team: 'infra' },
        { pod: { volumes: [{ name: 'host', hostPath: { path: '/var/log' } }] } },
      ),
    });

    assert.deepEqual(warningTexts(headers), [
      'pod-security: spec.template.spec.volumes[0].hostPath: hostPath volumes are not allowed (volume "host") (mode warn: not enforced)',
    ]);
    const stored = await apps().readNamespacedDeployment({ name, namespace });
    assert.deepEqual(stored.metadata?.labels, { team: 'infra' });
  });

  describe('keep out by matchConditions (Kubernetes 1.30+)', function () {
    before(function () {
      requireKube(this, 30, 'webhook matchConditions');
    });

    it('a namespace excluded by name, though the selector selects it: its ConfigMap is stored unmutated', async function () {
      const name = `cm-${randomSuffix()}`;
      await core().createNamespacedConfigMap({ namespace: excluded, body: { metadata: { name } } });
      const stored = await core().readNamespacedConfigMap({ name, namespace: excluded });
      assert.equal(stored.metadata?.labels, undefined);
      // The same ConfigMap in the file's other namespace is mutated: only the condition tells them apart.
      await core().createNamespacedConfigMap({ namespace, body: { metadata: { name } } });
      assert.deepEqual((await core().readNamespacedConfigMap({ name, namespace })).metadata?.labels, {
        rendered: 'yes',
      });
    });

    it('Leases, which a step matches and the rules route: stored unmutated, the gateway never asked', async function () {
      const calls = async () =>
        (await gw!.metrics())
          .split('\n')
          .filter((l) => l.startsWith('admission_gateway_step_calls_total{') && l.includes('step="lease-labels"'))
          .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
      const before = await calls();
      const name = `lease-${randomSuffix()}`;
      const lease = await kubeConfig()
        .makeApiClient(CoordinationV1Api)
        .createNamespacedLease({
          namespace,
          body: { metadata: { name }, spec: { holderIdentity: 'e2e' } },
        });
      assert.equal(lease.metadata?.labels, undefined);
      assert.ok(
        rendered[0]!.webhooks![0]!.rules!.some((r) => r.apiGroups?.includes('coordination.k8s.io')),
        'the rendered rules send Leases to the gateway; only the matchCondition keeps them out',
      );
      assert.equal(await calls(), before);
    });
  });

  it('render, in Service mode for manifests/config.yaml, configurations the apiserver accepts (server-side dry-run)', async function () {
    const dryName = `${SUITE}-dry-run.e2e.admissiongateway.io`;
    // The installed config watches AdmissionProviders: the command says what that means for these rules.
    const service = await render(
      ['--config', 'manifests/config.yaml', '--ca', path.join(gw!.dir, 'ca.crt'), '--name', dryName],
      'admission-gateway: kube.watchProviders is on: AdmissionProviders added at run time only see the requests ' +
        'these rules match (and only on the routes rendered here); render with --all-resources to send every ' +
        'request to the gateway\n' +
        labelNote(['kube-system', 'kube-node-lease', 'admission-gateway']),
    );
    const api = admissionRegistration();
    const answers = [];
    for (const item of service) {
      answers.push(
        item.kind === 'MutatingWebhookConfiguration'
          ? await api.createMutatingWebhookConfiguration({
              body: item,
              dryRun: 'All',
            })
          : await api.createValidatingWebhookConfiguration({
              body: item,
              dryRun: 'All',
            }),
      );
    }

    assert.deepEqual(
      answers.map((c, i) => (c.webhooks ?? []).map((w, j) => storedAsRendered(service[i]!.webhooks![j]!, w))),
      service.map((c) => plain(c.webhooks)),
    );
    assert.deepEqual(
      service.flatMap((c) => (c.webhooks ?? []).map((w) => w.clientConfig.service?.path)),
      ['/mutate', '/validate/ignore'],
    );
    // Nothing stored: a dry run.
    assert.equal(await readStatus(() => api.readMutatingWebhookConfiguration({ name: dryName })), 404);
    assert.equal(await readStatus(() => api.readValidatingWebhookConfiguration({ name: dryName })), 404);
  });
});
