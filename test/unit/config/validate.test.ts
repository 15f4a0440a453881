import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_CONFIG_YAML } from '../../../server/config/default-config.js';
import { configFilePaths } from '../../../server/config/file-paths.js';
import { EMBEDDED_CONFIG, loadConfig } from '../../../server/config/load.js';
import { ConfigError } from '../../../server/base/errors.js';
import { configMapGatewayYaml } from '../../../server/manifests/config-source.js';
import { configError, parseConfig as parse } from '../../helpers/config.js';
import { shippedPluginNames, withoutAddedEntries } from '../../helpers/shipped-plugins.js';

describe('parseConfigText()', () => {
  describe('given an empty document', () => {
    it('applies every default', () => {
      const config = parse('{}');
      assert.deepEqual(config.server, {
        host: '0.0.0.0',
        port: 8443,
        opsHost: undefined,
        opsPort: 9090,
        opsAuth: undefined,
        healthHost: undefined,
        healthPort: 8081,
        tls: {
          certFile: '/etc/gateway/certs/tls.crt',
          keyFile: '/etc/gateway/certs/tls.key',
          clientCAFile: '',
          generate: true,
          dnsNames: [
            'admission-gateway.admission-gateway.svc',
            'admission-gateway.admission-gateway.svc.cluster.local',
            'localhost',
          ],
          ipAddresses: ['127.0.0.1', '::1'],
        },
        maxRequestBytes: 7340032,
        maxInflightBytes: undefined,
        maxConnections: 512,
        headersTimeoutSeconds: 10,
        requestTimeoutSeconds: 30,
        bodyTimeoutSeconds: 10,
        minBodyBytesPerSecond: 65536,
        deadlineMarginMs: 250,
        defaultTimeoutSeconds: 10,
        shutdownTimeoutSeconds: 25,
        service: { name: 'admission-gateway', namespace: 'admission-gateway' },
        largeReviews: { thresholdBytes: 65536, workers: 1, queue: 8, niceness: 10, youngGenerationMiB: 48 },
      });
      assert.deepEqual(config.kube, {
        enabled: 'auto',
        watchProviders: true,
        kubeconfig: '',
        certificate: {
          secretName: '',
          secretNamespace: 'admission-gateway',
          mutatingWebhookConfigurations: ['admission-gateway'],
          validatingWebhookConfigurations: ['admission-gateway'],
          caValiditySeconds: 5 * 365 * 86_400,
          certValiditySeconds: 365 * 86_400,
          caRenewBeforeSeconds: Math.floor((5 * 365 * 86_400) / 3),
          certRenewBeforeSeconds: Math.floor((365 * 86_400) / 3),
          propagationSeconds: 60,
          overlapSeconds: 900,
          resyncSeconds: 30,
        },
        leaderElection: {
          leaseName: 'admission-gateway',
          leaseNamespace: 'admission-gateway',
          leaseDurationSeconds: 15,
          renewDeadlineSeconds: 10,
          retryPeriodSeconds: 2,
        },
        policyParams: {
          maxObjects: 256,
          maxBytes: 4 * 1024 * 1024,
          maxTotalObjects: 2048,
          maxTotalBytes: 8 * 1024 * 1024,
        },
      });
      assert.deepEqual(config.log, { level: 'info' });
      assert.deepEqual(config.chain, []);
    });
  });

  it('takes server.opsAuth kube or none, and leaves it to the mode when unset', () => {
    assert.deepEqual(
      ['server: { opsAuth: kube }', 'server: { opsAuth: none }', '{}'].map((yaml) => parse(yaml).server.opsAuth),
      ['kube', 'none', undefined],
    );
  });

  describe('given chain entries', () => {
    it('orders them 10 × position and names them after their plugin', () => {
      const config = parse(`
chain:
  - plugin: default-labels
    settings: { labels: { a: b } }
  - plugin: require-labels
    name: require-team
    mode: warn
    failurePolicy: Ignore
    timeoutSeconds: 2
    reinvocationPolicy: IfNeeded
    sideEffects: Some
    match:
      rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods], scope: Namespaced }]
      namespaceSelector: { matchExpressions: [{ key: env, operator: In, values: [prod] }] }
`);
      assert.deepEqual(config.chain, [
        {
          kind: 'plugin',
          plugin: 'default-labels',
          name: 'default-labels',
          order: 10,
          path: 'chain[0]',
          settings: { labels: { a: 'b' } },
        },
        {
          kind: 'plugin',
          plugin: 'require-labels',
          name: 'require-team',
          order: 20,
          path: 'chain[1]',
          mode: 'warn',
          failurePolicy: 'Ignore',
          timeoutSeconds: 2,
          reinvocationPolicy: 'IfNeeded',
          sideEffects: 'Some',
          match: {
            rules: [
              {
                operations: ['CREATE'],
                apiGroups: [''],
                apiVersions: ['v1'],
                resources: ['pods'],
                scope: 'Namespaced',
              },
            ],
            namespaceSelector: { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }] },
          },
        },
      ]);
    });

    it('reads a provider entry with its defaults', () => {
      const [entry] = parse(`
chain:
  - provider: image-scanner
    url: https://127.0.0.1:9555/admit
    caBundle: "TFMw\\nLS0="
    timeoutSeconds: 2
    failurePolicy: Ignore
    circuitBreaker: { volumeThreshold: 3, resetTimeoutSeconds: 0.5 }
`).chain;
      assert.deepEqual(entry, {
        kind: 'provider',
        provider: 'image-scanner',
        name: 'image-scanner',
        order: 10,
        path: 'chain[0]',
        timeoutSeconds: 2,
        failurePolicy: 'Ignore',
        url: 'https://127.0.0.1:9555/admit',
        phases: ['mutate', 'validate'],
        caBundle: 'TFMwLS0=',
        circuitBreaker: {
          errorThresholdPercentage: 50,
          volumeThreshold: 3,
          resetTimeoutMs: 500,
          rollingWindowMs: 10000,
        },
        discovery: false,
        discoveryPath: 'discovery',
        admissionReviewVersions: ['v1', 'v1beta1'],
      });
    });
  });

  const invalid: Array<[string, string, string]> = [
    ['a wrong kind', 'kind: Config', 'gateway.yaml:1:1: kind: expected GatewayConfig, got "Config"'],
    ['an unknown top-level field', 'chains: []', 'gateway.yaml:1:1: chains: unknown field (did you mean "chain"?)'],
    [
      'a port out of range',
      'server: { port: 70000 }',
      'gateway.yaml:1:11: server.port: expected an integer from 0 to 65535, got 70000',
    ],
    [
      'equal ports',
      'server: { port: 9000, opsPort: 9000 }',
      'gateway.yaml:1:23: server.opsPort: must differ from server.port (9000)',
    ],
    [
      'a timeout out of range',
      'chain: [{ plugin: default-labels, timeoutSeconds: 31 }]',
      'gateway.yaml:1:35: chain[0].timeoutSeconds: expected a number from 0.001 to 30, got 31',
    ],
    [
      'an entry with neither plugin nor provider',
      'chain: [{ name: x }]',
      'gateway.yaml:1:9: chain[0]: expected exactly one of plugin (an in-process plugin name), provider (a remote provider name), policy (a policy written in CEL) or admissionPolicies (ValidatingAdmissionPolicies from files)',
    ],
    [
      'a misspelt plugin key',
      'chain:\n  - plugn: default-labels\n    mode: warn',
      'gateway.yaml:2:5: chain[0].plugn: unknown field (did you mean "plugin"?)',
    ],
    [
      'a misspelt provider key',
      'chain: [{ name: x, Provider: labels, url: "https://labels" }]',
      'gateway.yaml:1:20: chain[0].Provider: unknown field (did you mean "provider"?)',
    ],
    [
      'an unknown entry field',
      'chain: [{ plugin: a, failurepolicy: Fail }]',
      'gateway.yaml:1:22: chain[0].failurepolicy: unknown field (did you mean "failurePolicy"?)',
    ],
    [
      'a bad mode',
      'chain: [{ plugin: a, mode: dry }]',
      'gateway.yaml:1:22: chain[0].mode: expected one of enforce, warn, audit, got "dry"',
    ],
    [
      'a step name that is not a DNS label',
      'chain: [{ plugin: a, name: Upper_Case }]',
      'gateway.yaml:1:22: chain[0].name: expected a lower-case DNS-1123 label as the step name, got "Upper_Case"',
    ],
    [
      'two steps with one name',
      'chain: [{ plugin: a }, { plugin: a }]',
      'gateway.yaml:1:24: chain[1]: step name "a" is already used by chain[0]; set a distinct name: on one of them',
    ],
    [
      'an empty rule list',
      'chain: [{ plugin: a, match: { rules: [] } }]',
      'gateway.yaml:1:31: chain[0].match.rules: expected a non-empty list of rules',
    ],
    [
      'a rule without resources',
      "chain: [{ plugin: a, match: { rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1] }] } }]",
      'gateway.yaml:1:39: chain[0].match.rules[0].resources: expected a non-empty list of strings',
    ],
    [
      'an In selector without values',
      'chain: [{ plugin: a, match: { rules: [{ operations: ["*"], apiGroups: ["*"], apiVersions: ["*"], resources: ["*"] }], objectSelector: { matchExpressions: [{ key: k, operator: In }] } } }]',
      'gateway.yaml:1:156: chain[0].match.objectSelector.matchExpressions[0].values: must be non-empty for operator In',
    ],
    [
      'a provider with both url and service',
      'chain: [{ provider: p, url: "https://x", service: { namespace: n, name: s } }]',
      'gateway.yaml:1:9: chain[0]: expected exactly one of url or service',
    ],
    [
      'a plain-http provider',
      'chain: [{ provider: p, url: "http://127.0.0.1:1/a" }]',
      'gateway.yaml:1:24: chain[0].url: expected an https:// URL, got "http://127.0.0.1:1/a"',
    ],
    [
      'a provider URL with a query',
      'chain: [{ provider: p, url: "https://127.0.0.1:1/a?x=1" }]',
      'gateway.yaml:1:24: chain[0].url: must not have a query or fragment, got "https://127.0.0.1:1/a?…"',
    ],
    [
      'a memory budget smaller than one request body',
      'server: { maxRequestBytes: 1048576, maxInflightBytes: 65536 }',
      'gateway.yaml:1:37: server.maxInflightBytes: expected an integer from 1048576 to',
    ],
    [
      'a request timeout shorter than the headers timeout',
      'server: { headersTimeoutSeconds: 20, requestTimeoutSeconds: 5 }',
      'gateway.yaml:1:38: server.requestTimeoutSeconds: expected a number from 20 to 600, got 5',
    ],
    [
      'the health port on the ops port',
      'server: { healthPort: 9090 }',
      'gateway.yaml:1:11: server.healthPort: must differ from server.opsPort (9090)',
    ],
    [
      'an ops authentication other than kube or none',
      'server: { opsAuth: Kube }',
      'gateway.yaml:1:11: server.opsAuth: expected one of kube, none, got "Kube" (did you mean "kube"?)',
    ],
    [
      'ops authentication by the apiserver without a cluster',
      'server: { opsAuth: kube }\nkube: { enabled: false }',
      'gateway.yaml:1:11: server.opsAuth: kube needs cluster mode, but kube.enabled is false',
    ],
    [
      'a body allowed to arrive at no pace at all',
      'server: { minBodyBytesPerSecond: 0 }',
      'gateway.yaml:1:11: server.minBodyBytesPerSecond: expected an integer from 1 to 1073741824, got 0',
    ],
    [
      'a niceness past what the kernel has',
      'server: { largeReviews: { niceness: 20 } }',
      'gateway.yaml:1:27: server.largeReviews.niceness: expected an integer from 0 to 19, got 20',
    ],
    [
      'a young generation past what a heap could have',
      'server: { largeReviews: { youngGenerationMiB: 2048 } }',
      'gateway.yaml:1:27: server.largeReviews.youngGenerationMiB: expected an integer from 0 to 1024, got 2048',
    ],
    [
      'no connections at all',
      'server: { maxConnections: 0 }',
      'gateway.yaml:1:11: server.maxConnections: expected an integer from 1',
    ],
    [
      'a misspelt match field, naming the closest',
      'chain:\n  - plugin: a\n    match:\n      rule: []\n',
      'gateway.yaml:4:7: chain[0].match.rule: unknown field (did you mean "rules"?)',
    ],
    [
      'a misspelt scope, naming the closest',
      "chain:\n  - plugin: a\n    match:\n      rules:\n        - { operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'], scope: namespaced }\n",
      'gateway.yaml:5:88: chain[0].match.rules[0].scope: expected one of Cluster, Namespaced, *, got "namespaced" (did you mean "Namespaced"?)',
    ],
    [
      'a label key with dots, at the key',
      "chain:\n  - plugin: a\n    match:\n      rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }]\n      objectSelector:\n        matchLabels:\n          app.kubernetes.io/name: 3\n",
      'gateway.yaml:7:11: chain[0].match.objectSelector.matchLabels.app.kubernetes.io/name: expected a string, got 3',
    ],
    [
      'an attach that is neither Always nor OptIn, naming the closest',
      'chain:\n  - plugin: a\n    attach: optin\n',
      'gateway.yaml:3:5: chain[0].attach: expected one of Always, OptIn, got "optin" (did you mean "OptIn"?)',
    ],
    [
      'a conflictGroup that is not a DNS label',
      'chain:\n  - provider: p\n    url: https://p.example/\n    conflictGroup: Scanners\n',
      'gateway.yaml:4:5: chain[0].conflictGroup: expected a lower-case DNS-1123 label, got "Scanners"',
    ],
    ['invalid YAML', 'chain: [\n  - plugin: a', 'gateway.yaml:2:3: invalid YAML: '],
  ];
  for (const [name, yaml, message] of invalid) {
    it(`refuses ${name}, naming the field`, () => {
      const got = configError(yaml);
      assert.ok(got.startsWith(message), `got: ${got}`);
    });
  }
});

describe('the shipped gateway.yaml', () => {
  it('is the embedded default, byte for byte, less the entries an author added for plugins of their own', async () => {
    const text = await readFile(new URL('../../../gateway.yaml', import.meta.url), 'utf8');
    assert.equal(withoutAddedEntries(text, shippedPluginNames()), DEFAULT_CONFIG_YAML);
  });

  it('is as safe as the installed config: the chain of manifests/config.yaml, mutating steps Ignore', async () => {
    const configMap = await readFile(new URL('../../../manifests/config.yaml', import.meta.url), 'utf8');
    const installed = parse(configMapGatewayYaml(configMap, 'manifests/config.yaml')!);

    const shipped = parse(DEFAULT_CONFIG_YAML);

    assert.deepEqual(shipped.chain, installed.chain);
    assert.deepEqual(
      shipped.chain.filter((e) => e.mode === undefined).map((e) => [e.name, e.failurePolicy]),
      [
        ['default-labels', 'Ignore'],
        ['resource-defaults', 'Ignore'],
      ],
    );
  });

  it('starts validating plugins in warn mode so a first install blocks nobody', () => {
    const config = parse(DEFAULT_CONFIG_YAML);
    const modes = Object.fromEntries(config.chain.map((e) => [e.name, e.mode ?? 'enforce']));
    assert.deepEqual(modes, {
      'default-labels': 'enforce',
      'resource-defaults': 'enforce',
      'image-policy': 'warn',
      'require-labels': 'warn',
      'pod-security': 'warn',
    });
  });
});

describe('loadConfig()', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'gw-config-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('falls back to the embedded default when the default location has no file', async () => {
    const config = await loadConfig('gateway.yaml', { isDefaultLocation: true, cwd: dir });
    assert.equal(config.file, EMBEDDED_CONFIG);
    assert.equal(config.server.tls.certFile, path.join(dir, 'certs/tls.crt'));
  });

  it('refuses a missing explicit file', async () => {
    await assert.rejects(loadConfig('missing.yaml', { cwd: dir }), (err: unknown) => {
      return (
        err instanceof ConfigError && err.message.startsWith('missing.yaml: (file): cannot read the config file: ')
      );
    });
  });

  it("resolves every relative path against the config file's folder, whatever the working directory", async () => {
    await mkdir(path.join(dir, 'conf'));
    await writeFile(
      path.join(dir, 'conf', 'gw.yaml'),
      `server: { tls: { certFile: tls/a.crt, keyFile: /etc/tls/a.key, clientCAFile: ../ca.crt } }
kube: { kubeconfig: kube/config }
record: { path: rec/reviews.ndjson, sampleRate: 0.5 }
chain:
  - provider: p
    url: https://127.0.0.1:1/
    clientCert: { certFile: client.crt, keyFile: client.key }
`,
    );

    const config = await loadConfig('conf/gw.yaml', { cwd: dir });

    assert.deepEqual(configFilePaths(config), {
      'server.tls.certFile': path.join(dir, 'conf', 'tls/a.crt'),
      'server.tls.keyFile': '/etc/tls/a.key',
      'server.tls.clientCAFile': path.join(dir, 'ca.crt'),
      'kube.kubeconfig': path.join(dir, 'conf', 'kube/config'),
      'record.path': path.join(dir, 'conf', 'rec/reviews.ndjson'),
      'chain[0].clientCert.certFile': path.join(dir, 'conf', 'client.crt'),
      'chain[0].clientCert.keyFile': path.join(dir, 'conf', 'client.key'),
    });
  });

  it('resolves the relative paths of the embedded default against the working directory', async () => {
    const config = await loadConfig('gateway.yaml', { isDefaultLocation: true, cwd: dir });

    assert.deepEqual(configFilePaths(config), {
      'server.tls.certFile': path.join(dir, 'certs/tls.crt'),
      'server.tls.keyFile': path.join(dir, 'certs/tls.key'),
    });
  });
});

describe('config errors about credentials', () => {
  // Each message still says which field and what is wrong; none repeats the secret it refuses.
  const cases: Array<[string, string, string]> = [
    [
      'a provider URL with a user and password',
      'chain: [{ provider: p, url: "https://alice:s3cret@scanner.example/admit" }]',
      'gateway.yaml:1:24: chain[0].url: must not carry credentials, got "https://***@scanner.example/admit"',
    ],
    [
      'a plain-http provider URL with a user and password',
      'chain: [{ provider: p, url: "http://alice:s3cret@scanner.example/admit" }]',
      'gateway.yaml:1:24: chain[0].url: expected an https:// URL, got "http://***@scanner.example/admit"',
    ],
    [
      'a provider URL with a token in its query',
      'chain: [{ provider: p, url: "https://scanner.example/admit?token=s3cret" }]',
      'gateway.yaml:1:24: chain[0].url: must not have a query or fragment, got "https://scanner.example/admit?…"',
    ],
    [
      'an OTLP endpoint with a user and password',
      'tracing: { otlpEndpoint: "https://alice:s3cret@otel.example:4318/v1/traces" }',
      'gateway.yaml:1:12: tracing.otlpEndpoint: must not carry credentials (set tracing.headers), ' +
        'got "https://***@otel.example:4318/v1/traces"',
    ],
    [
      'OTLP headers given as one string',
      'tracing: { otlpEndpoint: "https://otel.example", headers: "Authorization: Bearer s3cret" }',
      'gateway.yaml:1:50: tracing.headers: expected a map of strings',
    ],
    [
      'an OTLP header whose value is not a string',
      'tracing: { otlpEndpoint: "https://otel.example", headers: { x-api-key: 12345678 } }',
      'gateway.yaml:1:61: tracing.headers.x-api-key: expected a string',
    ],
  ];
  for (const [name, yaml, message] of cases) {
    it(`refuses ${name} without quoting it`, () => {
      assert.equal(configError(yaml), message);
    });
  }
});
