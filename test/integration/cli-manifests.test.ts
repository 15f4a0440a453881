/**
 * `admission-gateway manifests` through runCli in this process: flags, the caBundle found or generated as
 * `certs` does, the notes on stderr and the exit codes.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { runCliCaptured, type CliRun, configFolderPerTest } from '../helpers/cli.js';
import { makeNamedPipe, releaseNamedPipe } from '../helpers/named-pipe.js';
import { POD_SPEC_RESOURCES } from '../helpers/pod-resources.js';
import { KNOWN_PLUGINS } from '../helpers/shipped-plugins.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

type Run = CliRun;

const runCli = (args: readonly string[], cwd = ROOT): Promise<Run> => runCliCaptured(args, { cwd });

interface Webhook {
  name: string;
  failurePolicy: string;
  timeoutSeconds: number;
  sideEffects: string;
  clientConfig: { url?: string; service?: unknown; caBundle: string };
  namespaceSelector: unknown;
  rules: unknown[];
}
interface Configuration {
  kind: string;
  metadata: { name: string };
  webhooks: Webhook[];
}

function items(run: Run): Configuration[] {
  assert.equal(run.code, 0, run.stderr);
  const list = JSON.parse(run.stdout) as { apiVersion: string; kind: string; items: Configuration[] };
  assert.equal(`${list.apiVersion}/${list.kind}`, 'v1/List');
  return list.items;
}

const WATCH_NOTE =
  'admission-gateway: kube.watchProviders is on: AdmissionProviders added at run time only see the requests these ' +
  'rules match (and only on the routes rendered here); render with --all-resources to send every request to the gateway\n';

const CHAIN = `
chain:
  - plugin: default-labels
    failurePolicy: Ignore
    timeoutSeconds: 2
    match:
      rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [configmaps] }]
      namespaceSelector: { matchLabels: { team: a } }
    settings: { labels: { owner: platform } }
  - plugin: require-labels
    timeoutSeconds: 4
    settings: { labels: [team] }
  - plugin: pod-security
    failurePolicy: Ignore
    sideEffects: Some
`;

describe('admission-gateway manifests', function () {
  this.timeout(30000);
  const folder = configFolderPerTest('gateway-manifests-');

  it('prints its usage with --help and is listed in the main help', async function () {
    const help = await runCli(['manifests', '--help']);
    assert.equal(help.code, 0);
    assert.ok(help.stdout.startsWith('usage: admission-gateway manifests [--config FILE] [--service'), help.stdout);
    assert.match(help.stdout, /^ {2}--all-resources {11}catch-all rules on every route/m);
    const main = await runCli(['--help']);
    assert.match(main.stdout, /^ {2}manifests render the webhook configurations for the configured chain$/m);
  });

  describe('for a URL, with the CA generated next to the serving certificate', function () {
    it('renders the chain: mutate on /mutate, the validating steps split by failure policy', async function () {
      const file = await folder.config(`kube: { enabled: false }\n${CHAIN}`);
      const run = await runCli(['manifests', '--config', file, '--url', 'https://127.0.0.1:8443', '-o', 'json']);
      const ca = await readFile(join(folder.dir, 'certs', 'ca.crt'), 'utf8');
      const caBundle = Buffer.from(ca).toString('base64');
      // Kubernetes 1.37 by default: the namespaces and Leases kept out by matchConditions, the opt-out label by
      // the selector.
      const selector = { matchExpressions: [{ key: 'admissiongateway.io/exclude', operator: 'DoesNotExist' }] };
      const matchConditions = [
        {
          name: 'exclude-namespaces',
          expression: "!(request.namespace in ['kube-system', 'kube-node-lease', 'admission-gateway'])",
        },
        {
          name: 'exclude-leases',
          expression: "!(request.resource.group == 'coordination.k8s.io' && request.resource.resource == 'leases')",
        },
      ];
      const common = { admissionReviewVersions: ['v1', 'v1beta1'], matchPolicy: 'Equivalent' };
      const podRule = {
        operations: ['CREATE', 'UPDATE'],
        apiGroups: ['', 'apps', 'batch'],
        apiVersions: ['*'],
        scope: '*',
      };

      assert.equal(
        run.stderr,
        'admission-gateway: generated a self-signed CA and serving certificate; register the CA as the webhook caBundle\n',
      );
      assert.deepEqual(items(run), [
        {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'MutatingWebhookConfiguration',
          metadata: { name: 'admission-gateway', labels: { 'app.kubernetes.io/name': 'admission-gateway' } },
          webhooks: [
            {
              name: 'mutate.admissiongateway.io',
              ...common,
              sideEffects: 'None',
              timeoutSeconds: 3,
              failurePolicy: 'Ignore',
              reinvocationPolicy: 'Never',
              matchPolicy: 'Equivalent',
              clientConfig: { url: 'https://127.0.0.1:8443/mutate', caBundle },
              namespaceSelector: selector,
              rules: [
                { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], scope: '*' },
              ],
              matchConditions,
            },
          ],
        },
        {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingWebhookConfiguration',
          metadata: { name: 'admission-gateway', labels: { 'app.kubernetes.io/name': 'admission-gateway' } },
          webhooks: [
            {
              name: 'validate-fail.admissiongateway.io',
              ...common,
              sideEffects: 'None',
              timeoutSeconds: 5,
              failurePolicy: 'Fail',
              clientConfig: { url: 'https://127.0.0.1:8443/validate/fail', caBundle },
              namespaceSelector: selector,
              rules: [
                {
                  ...podRule,
                  resources: [
                    'pods',
                    'deployments',
                    'statefulsets',
                    'daemonsets',
                    'replicasets',
                    'jobs',
                    'cronjobs',
                    'services',
                  ],
                },
              ],
              matchConditions,
            },
            {
              name: 'validate-ignore.admissiongateway.io',
              ...common,
              sideEffects: 'NoneOnDryRun',
              timeoutSeconds: 11,
              failurePolicy: 'Ignore',
              clientConfig: { url: 'https://127.0.0.1:8443/validate/ignore', caBundle },
              namespaceSelector: selector,
              rules: [
                {
                  ...podRule,
                  resources: [...POD_SPEC_RESOURCES, 'pods/ephemeralcontainers'],
                },
              ],
              matchConditions,
            },
          ],
        },
      ]);
    });
  });

  it('uses --ca, --service, --name and the selector flags; YAML says how it was rendered', async function () {
    const file = await folder.config(`kube: { enabled: false }\n${CHAIN}`);
    const caFile = join(folder.dir, 'other-ca.pem');
    await writeFile(caFile, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    const args = [
      'manifests',
      '--config',
      file,
      '--ca',
      caFile,
      '--service',
      'gw-system/gw:8443',
      '--name',
      'gw',
      '--namespace-label',
      'team=a',
      '--exclude-namespace',
      'monitoring',
      '--kube-version',
      '1.29',
    ];
    const run = await runCli(args);

    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, '');
    assert.ok(
      run.stdout.startsWith(
        `# Rendered by \`admission-gateway ${args.join(' ')}\` for Kubernetes 1.29:\n` +
          '# regenerate it from the configured chain, do not edit it by hand.\n' +
          '# Namespaces kube-system, kube-node-lease, gw-system, monitoring and any labelled admissiongateway.io/exclude are excluded,\n' +
          '# so the gateway can never lock the cluster (or itself) out.\n' +
          'apiVersion: admissionregistration.k8s.io/v1\n',
      ),
      run.stdout,
    );
    const webhooks = parseAllDocuments(run.stdout).flatMap((d) => (d.toJS() as Configuration).webhooks);
    const caBundle = Buffer.from(await readFile(caFile)).toString('base64');
    assert.deepEqual(
      webhooks.map((w) => [w.name, w.clientConfig]),
      [
        [
          'mutate.admissiongateway.io',
          { service: { name: 'gw', namespace: 'gw-system', path: '/mutate', port: 8443 }, caBundle },
        ],
        [
          'validate-fail.admissiongateway.io',
          { service: { name: 'gw', namespace: 'gw-system', path: '/validate/fail', port: 8443 }, caBundle },
        ],
        [
          'validate-ignore.admissiongateway.io',
          { service: { name: 'gw', namespace: 'gw-system', path: '/validate/ignore', port: 8443 }, caBundle },
        ],
      ],
    );
    // Before 1.30 the names are excluded through the label the apiserver sets (1.21+), without matchConditions.
    for (const w of webhooks) {
      assert.equal((w as { matchConditions?: unknown }).matchConditions, undefined);
      assert.deepEqual(w.namespaceSelector, {
        matchLabels: { team: 'a' },
        matchExpressions: [
          {
            key: 'kubernetes.io/metadata.name',
            operator: 'NotIn',
            values: ['kube-system', 'kube-node-lease', 'gw-system', 'monitoring'],
          },
          { key: 'admissiongateway.io/exclude', operator: 'DoesNotExist' },
        ],
      });
    }
  });

  it('notes on stderr that run-time providers only see these rules; --all-resources renders the catch-all', async function () {
    const file = await folder.config(`kube: { enabled: auto, watchProviders: true }\n${CHAIN}`);
    const rendered = await runCli(['manifests', '--config', file, '--no-ca-bundle', '-o', 'json']);
    assert.equal(rendered.stderr, WATCH_NOTE);
    assert.equal(items(rendered).length, 2);

    const all = await runCli(['manifests', '--config', file, '--no-ca-bundle', '-o', 'json', '--all-resources']);
    assert.equal(
      all.stderr,
      'admission-gateway: WARNING: validate-fail.admissiongateway.io (/validate/fail) is rendered failurePolicy Fail ' +
        'with rules that match every resource: while the gateway is unreachable, the apiserver refuses every ' +
        'CREATE/UPDATE/DELETE/CONNECT of any resource in the namespaces it selects, and of any cluster-scoped ' +
        'resource (namespaceSelector does not filter those).\n' +
        '  failurePolicy Fail because of: require-labels\n' +
        '  every resource because of: --all-resources\n' +
        '  To avoid it, give those steps failurePolicy: Ignore (or mode: warn), or narrow their match.rules to the ' +
        'resources they need (a provider without match sees every request), or render without --all-resources.\n',
    );
    assert.deepEqual(
      items(all).flatMap((c) => c.webhooks.map((w) => [w.name, w.failurePolicy, w.rules])),
      [
        [
          'mutate.admissiongateway.io',
          'Ignore',
          [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'], scope: '*' }],
        ],
        [
          'validate-fail.admissiongateway.io',
          'Fail',
          [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'], scope: '*' }],
        ],
        [
          'validate-ignore.admissiongateway.io',
          'Ignore',
          [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'], scope: '*' }],
        ],
      ],
    );
  });

  it('warns loudly on stderr about a Fail webhook that matches every resource, naming the steps and the fix', async function () {
    const file = await folder.config(`kube: { enabled: false }
chain:
  - plugin: default-labels
    settings: { labels: { team: unknown } }
  - plugin: resource-defaults
    failurePolicy: Ignore
`);
    const run = await runCli(['manifests', '--config', file, '--no-ca-bundle', '-o', 'json']);

    assert.equal(
      run.stderr,
      'admission-gateway: WARNING: mutate.admissiongateway.io (/mutate) is rendered failurePolicy Fail with rules ' +
        'that match every resource: while the gateway is unreachable, the apiserver refuses every CREATE/UPDATE of ' +
        'any resource in the namespaces it selects, and of any cluster-scoped resource (namespaceSelector does not ' +
        'filter those).\n' +
        '  failurePolicy Fail because of: default-labels\n' +
        "  every resource because of: default-labels (operations ['CREATE', 'UPDATE'], apiGroups ['*'], resources ['*'])\n" +
        '  To avoid it, give those steps failurePolicy: Ignore (or mode: warn), or narrow their match.rules to the ' +
        'resources they need (a provider without match sees every request).\n',
    );
    assert.deepEqual(
      items(run).flatMap((c) => c.webhooks.map((w) => [w.name, w.failurePolicy])),
      [['mutate.admissiongateway.io', 'Fail']],
    );
  });

  it('renders a provider without match for every operation on every resource, and warns when it is Fail', async function () {
    const file = await folder.config(
      'kube: { enabled: false }\nchain:\n  - provider: scanner\n    url: https://127.0.0.1:1/admit\n    phases: [validate]\n',
    );
    const run = await runCli(['manifests', '--config', file, '--no-ca-bundle', '-o', 'json']);

    assert.deepEqual(
      items(run).flatMap((c) => c.webhooks.map((w) => [w.name, w.failurePolicy, w.rules])),
      [
        [
          'validate-fail.admissiongateway.io',
          'Fail',
          [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'], scope: '*' }],
        ],
      ],
    );
    assert.match(run.stderr, /^admission-gateway: WARNING: validate-fail\.admissiongateway\.io \(\/validate\/fail\)/);
    assert.match(run.stderr, /^ {2}failurePolicy Fail because of: scanner$/m);
    assert.match(
      run.stderr,
      /^ {2}every resource because of: scanner \(operations \['\*'\], apiGroups \['\*'\], resources \['\*'\]\)$/m,
    );
  });

  it('renders the shipped gateway.yaml as Ignore webhooks only, without a warning: it blocks nobody', async function () {
    const run = await runCli(['manifests', '--config', 'gateway.yaml', '--no-ca-bundle', '-o', 'json']);

    assert.equal(run.stderr, WATCH_NOTE);
    assert.deepEqual(
      items(run).flatMap((c) => c.webhooks.map((w) => [w.name, w.failurePolicy])),
      [
        ['mutate.admissiongateway.io', 'Ignore'],
        ['validate-ignore.admissiongateway.io', 'Ignore'],
      ],
    );
  });

  it('renders a provider that cannot be discovered with its configured phases and match, and says so', async function () {
    const file = await folder.config(`kube: { enabled: false }
chain:
  - provider: scanner
    url: https://127.0.0.1:1/admit
    discovery: true
    phases: [validate]
    failurePolicy: Ignore
    timeoutSeconds: 1
    match: { rules: [{ operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments] }] }
`);
    const run = await runCli(['manifests', '--config', file, '--no-ca-bundle', '-o', 'json']);

    assert.match(
      run.stderr,
      /^admission-gateway: provider "scanner" could not be discovered \(.+\): its configured phases are rendered with its configured match\n$/,
    );
    assert.deepEqual(
      items(run).flatMap((c) => c.webhooks.map((w) => [w.name, w.rules])),
      [
        [
          'validate-ignore.admissiongateway.io',
          [
            {
              operations: ['CREATE'],
              apiGroups: ['apps'],
              apiVersions: ['v1'],
              resources: ['deployments'],
              scope: '*',
            },
          ],
        ],
      ],
    );
  });

  it('renders the installed chain from the ConfigMap in manifests/config.yaml: manifests/webhooks.yaml', async function () {
    const run = await runCli(['manifests', '--config', 'manifests/config.yaml', '--no-ca-bundle']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, await readFile(join(ROOT, 'manifests', 'webhooks.yaml'), 'utf8'));
  });

  it('prints nothing but a note for a chain without steps', async function () {
    const file = await folder.config('kube: { enabled: false }\nchain: []\n');
    const run = await runCli(['manifests', '--config', file, '--no-ca-bundle', '-o', 'json']);
    assert.equal(run.code, 0);
    assert.deepEqual(items(run), []);
    assert.equal(
      run.stderr,
      `admission-gateway: the chain of ${file} has no steps: no webhook configuration rendered\n`,
    );
  });

  describe('refuses with exit code 2 and a message naming the problem', function () {
    const cases: [string, (file: string) => string[], string][] = [
      [
        'an http URL',
        (file) => ['--config', file, '--url', 'http://127.0.0.1:8443'],
        'admission-gateway: --url: the apiserver only calls https URLs; expected https://HOST[:PORT] (the routes /mutate, /validate/fail and /validate/ignore are appended), got "http://127.0.0.1:8443"\n',
      ],
      [
        'an unknown output format',
        (file) => ['--config', file, '-o', 'table'],
        'admission-gateway: --output: expected yaml or json, got "table"\n',
      ],
      [
        'a Service and a URL together',
        (file) => ['--config', file, '--service', 'a/b', '--url', 'https://x'],
        'admission-gateway: --service and --url exclude each other: the webhooks call either a Service or a URL\n',
      ],
      [
        'an extra argument',
        (file) => ['--config', file, 'now'],
        'admission-gateway: manifests: unexpected argument "now"\n',
      ],
      [
        'a missing serving certificate that may not be generated',
        (file) => ['--config', file],
        `admission-gateway: TLS certificate file "DIR/tls.crt" and key file "DIR/tls.key" do not exist and generation is disabled; pass --ca FILE, or --no-ca-bundle when the gateway patches the caBundle in\n`,
      ],
      [
        'a CA file that does not exist',
        (file) => ['--config', file, '--ca', 'DIR/nope.pem'],
        'admission-gateway: cannot read the CA certificate "DIR/nope.pem"; pass --ca FILE (the CA that signed DIR/tls.crt)\n',
      ],
    ];
    for (const [what, args, message] of cases) {
      it(`given ${what}`, async function () {
        const file = await folder.config(
          `kube: { enabled: false }\nserver: { tls: { certFile: tls.crt, keyFile: tls.key, generate: false } }\n${CHAIN}`,
        );
        const run = await runCli(['manifests', ...args(file).map((a) => a.replace('DIR', folder.dir))]);
        assert.equal(run.stdout, '');
        assert.equal(run.stderr, message.replaceAll('DIR', folder.dir));
        assert.equal(run.code, 2);
      });
    }

    it('given an unknown plugin in the config (its line and field path are named)', async function () {
      const file = await folder.config('chain:\n  - plugin: nope\n');
      const run = await runCli(['manifests', '--config', file, '--no-ca-bundle']);
      assert.equal(run.code, 2, run.stderr);
      assert.equal(
        run.stderr,
        `admission-gateway: ${file}:2:5: chain[0].plugin: unknown plugin "nope" ${KNOWN_PLUGINS}\n`,
      );
    });

    it('given a named pipe as the config file, at once (reading it would wait for a writer)', async function () {
      const fifo = join(folder.dir, 'gateway.yaml.fifo');
      makeNamedPipe(fifo);
      try {
        const run = await runCli(['manifests', '--config', fifo, '--no-ca-bundle']);
        assert.equal(run.code, 2, run.stderr);
        assert.equal(
          run.stderr,
          `admission-gateway: ${fifo}: (file): cannot read the config file: not a regular file (a FIFO)\n`,
        );
      } finally {
        releaseNamedPipe(fifo);
      }
    });

    it('given a misspelt flag, naming the closest', async function () {
      const run = await runCli(['manifests', '--no-cabundle']);
      assert.equal(run.code, 2);
      assert.equal(
        run.stderr,
        'admission-gateway manifests: unknown option --no-cabundle (did you mean --no-ca-bundle?)\n' +
          'Run "admission-gateway manifests --help" for its options.\n',
      );
    });
  });
});
