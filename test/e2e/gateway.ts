/**
 * Runs the gateway in-process (startGateway, exactly what `serve` runs) on 127.0.0.1 with ephemeral
 * ports and a generated certificate, and registers it with the real kube-apiserver through url-based
 * Mutating/ValidatingWebhookConfigurations. Each test file uses its own `suite` name: its webhooks only
 * select namespaces labelled `e2e.admissiongateway.io/suite=<suite>`, so files never see each other.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  ApiException,
  type V1ConfigMap,
  type V1MutatingWebhook,
  type V1RuleWithOperations,
  type V1ValidatingWebhook,
} from '@kubernetes/client-node';
import pino from 'pino';
import type { Registry } from 'prom-client';
import { parse, stringify } from 'yaml';
import { plugins as shippedPlugins } from '../../plugins/index.js';
import type { Route } from '../../server/http/routes.js';
import type { AnyPlugin } from '../../server/chain/plugin-registry.js';
import { parseConfigText } from '../../server/config/load.js';
import { startGateway, type Gateway } from '../../server/gateway.js';
import { createClusterMode, type ClusterMode, type ClusterModeOptions } from '../../server/kube/cluster-mode.js';
import { createLogger } from '../../server/base/log.js';
import {
  AUTHZ_PORT,
  AUTHZ_TLS,
  KUBECONFIG_ENV,
  SUITE_LABEL,
  admissionRegistration,
  core,
  createNamespace,
  eventually,
  newKubeConfig,
  randomSuffix,
  warningTexts,
} from './cluster.js';
import { PROBE_ANNOTATION_PREFIX, PROBE_LABEL, testPlugins } from './plugins.js';

/** The rule most files test through: Pods created. */
export const POD_CREATES: readonly V1RuleWithOperations[] = [
  { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] },
];

/** A webhook named after the route it calls, for Pods created. */
export function podCreateWebhook(route: 'mutate' | 'validate', more: Partial<WebhookSpec> = {}): WebhookSpec {
  return { name: route, route, rules: POD_CREATES, ...more };
}

export interface WebhookSpec {
  /** Short name, unique within the file; registered as `<name>.<suite>.e2e.admissiongateway.io`. */
  readonly name: string;
  /** The gateway route the webhook calls: mutate, mutate/fail, mutate/ignore, validate, ... */
  readonly route: Route;
  /** The resources under test (a ConfigMap CREATE rule for the registration probe is added). */
  readonly rules: readonly V1RuleWithOperations[];
  /** Default Fail. */
  readonly failurePolicy?: 'Fail' | 'Ignore';
  /** Default [v1, v1beta1]. */
  readonly admissionReviewVersions?: readonly string[];
  /** Default 10. */
  readonly timeoutSeconds?: number;
}

export interface E2EGatewayOptions {
  /** DNS label naming the test file's namespaces and webhook configurations. */
  readonly suite: string;
  /** The config's `chain:` as YAML (a list); probe entries are appended. */
  readonly chain: string;
  /** More `server:` settings (e.g. maxRequestBytes, maxInflightBytes), over the suite's own. */
  readonly server?: Readonly<Record<string, unknown>>;
  /** The config's `record:` section (a relative `path` is in the gateway's dir). */
  readonly record?: Readonly<Record<string, unknown>>;
  /** The config's `explain:` section. */
  readonly explain?: Readonly<Record<string, unknown>>;
  /** Plugins besides the shipped ones and the test-only ones of ./plugins.ts. */
  readonly plugins?: readonly AnyPlugin[];
  readonly mutating?: readonly WebhookSpec[];
  readonly validating?: readonly WebhookSpec[];
  /**
   * Register the webhooks through a recording TLS pass-through in front of the gateway, so a test can
   * see which AdmissionReview apiVersion the apiserver sent and the gateway answered.
   */
  readonly tap?: boolean;
  /**
   * Run in cluster mode against the e2e apiserver, as `serve` does with a kubeconfig: createClusterMode
   * with these options (namespace labels from an informer, AdmissionProviders watched into the chain and
   * their status written back), attached right after the gateway started.
   */
  readonly clusterMode?: ClusterModeOptions;
  /** `server.tls.clientCAFile`: the gateway refuses callers without a client certificate that CA signed. */
  readonly clientCAFile?: string;
  /**
   * More `kube:` settings in cluster mode (e.g. `watchProviders: false`), over the suite's own (its own
   * `leaderElection`: the Lease `e2e-<suite>` in namespace default, with the default timings).
   */
  readonly kube?: Readonly<Record<string, unknown>>;
  /**
   * Serve where the e2e apiserver's authorization webhook calls: port AUTHZ_PORT, with the cluster's authz
   * certificate and key as they are (AUTHZ_TLS; never generated), so the apiserver trusts it as its
   * authorization webhook; the admission webhooks are registered with AUTHZ_TLS.caFile as their caBundle.
   */
  readonly authorizationWebhook?: boolean;
  /** The config's `audit:` section (e.g. intervalSeconds for the periodic audit of cluster mode). */
  readonly audit?: Readonly<Record<string, unknown>>;
  /** The config's `tracing:` section (README "Tracing"); absent, tracing is off. */
  readonly tracing?: Readonly<Record<string, unknown>>;
}

/** One call the apiserver made through the tap. */
export interface TapExchange {
  readonly path: string;
  readonly requestApiVersion: unknown;
  readonly operation: unknown;
  readonly kind: unknown;
  readonly status: number;
  readonly responseApiVersion: unknown;
  readonly allowed: unknown;
}

export interface E2EGateway {
  readonly gateway: Gateway;
  /** The gateway's temp dir: gateway.yaml, certs (ca.crt, tls.crt, tls.key; not with `authorizationWebhook`) and gateway.log. */
  readonly dir: string;
  /** base64 of the CA (<dir>/ca.crt, or AUTHZ_TLS.caFile), as registered in the webhook configurations. */
  readonly caBundle: string;
  /** Calls recorded by the tap (empty without `tap: true`). */
  readonly exchanges: readonly TapExchange[];
  /** The cluster mode attached to the gateway (with `clusterMode`). */
  readonly cluster: ClusterMode | undefined;
  /** The gateway log so far, one parsed JSON object per line. */
  logLines(): Promise<Record<string, unknown>[]>;
  /** Full name of a registered webhook, as the apiserver quotes it in denials. */
  webhookName(name: string): string;
  /** A fresh namespace selected by this file's webhooks. */
  namespace(): Promise<string>;
  /** GET <ops>/metrics as text. */
  metrics(): Promise<string>;
  /** Deregisters (and waits until the apiserver stopped calling), closes the gateway, removes `dir` unless kept. */
  close(options?: { keepDir?: boolean }): Promise<void>;
}

const PROBE_ROUTES: Readonly<Record<string, readonly string[]>> = {
  mutate: ['fail', 'ignore'],
  'mutate/fail': ['fail'],
  'mutate/ignore': ['ignore'],
  validate: ['fail', 'ignore'],
  'validate/fail': ['fail'],
  'validate/ignore': ['ignore'],
};

/** One probe entry per failure policy, so every route (and its split) has a probe step. */
const PROBE_ENTRIES = [
  { plugin: 'e2e-probe', name: 'e2e-probe-fail', failurePolicy: 'Fail', settings: { id: 'fail' } },
  { plugin: 'e2e-probe', name: 'e2e-probe-ignore', failurePolicy: 'Ignore', settings: { id: 'ignore' } },
];

const PROBE_RULE: V1RuleWithOperations = {
  operations: ['CREATE'],
  apiGroups: [''],
  apiVersions: ['v1'],
  resources: ['configmaps'],
};

function configName(suite: string): string {
  return `${suite}.e2e.admissiongateway.io`;
}

/** What a probe ConfigMap showed: the probe annotations set (mutating webhooks) and warnings (validating). */
interface ProbeResult {
  readonly annotations: ReadonlySet<string>;
  readonly warnings: ReadonlySet<string>;
}

async function probe(namespace: string): Promise<ProbeResult> {
  const body: V1ConfigMap = {
    metadata: { name: `probe-${randomSuffix()}`, labels: { [PROBE_LABEL]: 'true' } },
    data: { probe: 'true' },
  };
  const { data, headers } = await core().createNamespacedConfigMapWithHttpInfo({ namespace, body, dryRun: 'All' });
  const annotations = Object.keys(data.metadata?.annotations ?? {}).filter((k) =>
    k.startsWith(PROBE_ANNOTATION_PREFIX),
  );
  return { annotations: new Set(annotations), warnings: new Set(warningTexts(headers)) };
}

function describeProbe(result: ProbeResult): string {
  return `annotations [${[...result.annotations].join(', ')}], warnings [${[...result.warnings].join(', ')}]`;
}

export async function startE2EGateway(options: E2EGatewayOptions): Promise<E2EGateway> {
  const { suite } = options;
  const dir = await mkdtemp(path.join(os.tmpdir(), `admission-gateway-e2e-${suite}-`));
  const logFile = path.join(dir, 'gateway.log');
  const chain = parse(options.chain) as unknown;
  if (!Array.isArray(chain)) throw new Error('options.chain must be a YAML list of chain entries');
  const certificate: CertificateFiles = options.authorizationWebhook
    ? AUTHZ_TLS
    : { certFile: path.join(dir, 'tls.crt'), keyFile: path.join(dir, 'tls.key'), caFile: path.join(dir, 'ca.crt') };
  const configText = stringify({
    apiVersion: 'admissiongateway.io/v1alpha1',
    kind: 'GatewayConfig',
    server: {
      host: '127.0.0.1',
      port: options.authorizationWebhook ? AUTHZ_PORT : 0,
      opsHost: '127.0.0.1',
      opsPort: 0,
      healthHost: '127.0.0.1',
      healthPort: 0,
      tls: {
        certFile: certificate.certFile,
        keyFile: certificate.keyFile,
        // Missing authz files are an error, not a new pair written into the shared PKI.
        generate: !options.authorizationWebhook,
        ...(options.clientCAFile ? { clientCAFile: options.clientCAFile } : {}),
        dnsNames: ['localhost'],
        ipAddresses: ['127.0.0.1'],
      },
      shutdownTimeoutSeconds: 5,
      // Tests read /metrics, /chain and /explain over plain HTTP; ops-auth.e2e.ts guards the port itself.
      ...(options.clusterMode ? { opsAuth: 'none' } : {}),
      ...options.server,
    },
    kube: options.clusterMode
      ? {
          enabled: true,
          watchProviders: true,
          kubeconfig: process.env[KUBECONFIG_ENV] ?? '',
          // With the periodic audit on, the gateway audits once it holds this Lease: one of its own per file, in a
          // namespace every cluster has (the gateway's own does not exist here).
          leaderElection: { leaseName: `e2e-${suite}`, leaseNamespace: 'default' },
          ...options.kube,
        }
      : { enabled: false },
    log: { level: 'debug' },
    ...(options.record ? { record: options.record } : {}),
    ...(options.explain ? { explain: options.explain } : {}),
    chain: [...(chain as unknown[]), ...PROBE_ENTRIES],
    ...(options.audit ? { audit: options.audit } : {}),
    ...(options.tracing ? { tracing: options.tracing } : {}),
  });
  const configFile = path.join(dir, 'gateway.yaml');
  await writeFile(configFile, configText);
  const config = parseConfigText(configText, configFile, dir);

  const destination = pino.destination({ dest: logFile, sync: true });
  const log = createLogger(config.log.level, destination);
  const cluster = options.clusterMode
    ? createClusterMode(newKubeConfig(), config, log, options.clusterMode)
    : undefined;
  const clusterOptions = await cluster?.prepare();
  const gateway = await startGateway({
    config,
    plugins: [...shippedPlugins, ...testPlugins, ...(options.plugins ?? [])],
    log,
    ...clusterOptions,
  });
  cluster?.attach(gateway);
  const webhookName = (name: string) => `${name}.${suite}.e2e.admissiongateway.io`;
  const exchanges: TapExchange[] = [];
  let tap: Tap | undefined;
  let caBundle: string;
  let probeNamespace: string;
  try {
    caBundle = (await readFile(certificate.caFile)).toString('base64');
    if (options.tap) tap = await startTap(certificate, gateway.webhookUrl, exchanges);
    await register(options, tap?.url ?? gateway.webhookUrl, caBundle, webhookName);
    probeNamespace = await createNamespace(suite);
    await waitUntilCalled(options, probeNamespace);
  } catch (err) {
    // The dir (config, certificates, gateway.log) stays for debugging.
    await deregister(suite).catch(() => undefined);
    await tap?.close();
    await cluster?.stop();
    await gateway.close();
    destination.flushSync();
    const message = err instanceof Error ? err.message : JSON.stringify(err);
    throw new Error(`${message}\n(gateway config, certificates and log kept in ${dir})`, { cause: err });
  }

  return {
    gateway,
    dir,
    caBundle,
    exchanges,
    cluster,
    async logLines() {
      destination.flushSync();
      const text = await readFile(logFile, 'utf8');
      return text
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    },
    webhookName,
    namespace: () => createNamespace(suite),
    async metrics() {
      const res = await fetch(`${gateway.opsUrl}/metrics`);
      if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
      return res.text();
    },
    async close({ keepDir = false } = {}) {
      try {
        await deregister(suite);
        // Closing before the apiserver dropped the webhooks would fail its requests, so wait for a
        // probe that no webhook of this gateway touches.
        await eventually(`the apiserver to stop calling the webhooks of ${configName(suite)}`, async () => {
          const seen = await probe(probeNamespace);
          if (seen.annotations.size > 0 || seen.warnings.size > 0) throw new Error(`probe saw ${describeProbe(seen)}`);
          return true;
        });
      } finally {
        await tap?.close();
        await cluster?.stop();
        await gateway.close();
        destination.flushSync();
        if (!keepDir && !process.env.E2E_KEEP) await rm(dir, { recursive: true, force: true });
      }
    },
  };
}

/** The serving certificate, its key and the CA the webhooks' caBundle carries. */
interface CertificateFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
}

interface Tap {
  readonly url: string;
  close(): Promise<void>;
}

async function register(
  options: E2EGatewayOptions,
  baseUrl: string,
  caBundle: string,
  webhookName: (name: string) => string,
): Promise<void> {
  const { suite } = options;
  const common = (spec: WebhookSpec) => ({
    name: webhookName(spec.name),
    clientConfig: { url: `${baseUrl}/${spec.route}`, caBundle },
    rules: [...spec.rules, PROBE_RULE],
    failurePolicy: spec.failurePolicy ?? 'Fail',
    matchPolicy: 'Equivalent',
    sideEffects: 'None',
    admissionReviewVersions: [...(spec.admissionReviewVersions ?? ['v1', 'v1beta1'])],
    timeoutSeconds: spec.timeoutSeconds ?? 10,
    namespaceSelector: { matchLabels: { [SUITE_LABEL]: suite } },
  });
  const metadata = { name: configName(suite), labels: { [SUITE_LABEL]: suite } };
  const api = admissionRegistration();
  const mutating = options.mutating ?? [];
  const validating = options.validating ?? [];
  if (mutating.length > 0) {
    const webhooks: V1MutatingWebhook[] = mutating.map((spec) => ({ ...common(spec), reinvocationPolicy: 'Never' }));
    await api.createMutatingWebhookConfiguration({ body: { metadata, webhooks } });
  }
  if (validating.length > 0) {
    const webhooks: V1ValidatingWebhook[] = validating.map(common);
    await api.createValidatingWebhookConfiguration({ body: { metadata, webhooks } });
  }
}

/**
 * Webhook configurations reach the apiserver's admission chain through an informer: probe until every
 * registered webhook is seen acting (one dry-run ConfigMap create shows all of them at once).
 */
async function waitUntilCalled(options: E2EGatewayOptions, probeNamespace: string): Promise<void> {
  const annotations = (options.mutating ?? [])
    .flatMap((spec) => PROBE_ROUTES[spec.route] ?? [])
    .map((id) => `${PROBE_ANNOTATION_PREFIX}${id}`);
  const warnings = (options.validating ?? [])
    .flatMap((spec) => PROBE_ROUTES[spec.route] ?? [])
    .map((id) => `e2e-probe-${id}: seen`);
  await eventually(
    `the apiserver to call the webhooks of ${configName(options.suite)}`,
    async () => {
      const seen = await probe(probeNamespace);
      const all = annotations.every((a) => seen.annotations.has(a)) && warnings.every((w) => seen.warnings.has(w));
      if (!all) throw new Error(`probe saw ${describeProbe(seen)}`);
      return true;
    },
    { timeoutMs: 45_000 },
  );
}

function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.once('error', reject);
  });
}

function field(json: Buffer, ...keys: string[]): unknown {
  let value: unknown;
  try {
    value = JSON.parse(json.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
  for (const key of keys) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/**
 * A TLS pass-through serving the gateway's own certificate (so the registered caBundle fits both): it
 * forwards each request unchanged to the gateway and records the AdmissionReview versions on the wire.
 */
async function startTap(files: CertificateFiles, target: string, exchanges: TapExchange[]): Promise<Tap> {
  const [cert, key, ca] = await Promise.all(
    [files.certFile, files.keyFile, files.caFile].map((file) => readFile(file)),
  );
  const agent = new https.Agent({ ca, keepAlive: true });
  const server = https.createServer({ cert, key }, (req, res) => {
    void (async () => {
      const body = await readAll(req);
      const upstream = await new Promise<{ status: number; headers: Record<string, string>; body: Buffer }>(
        (resolve, reject) => {
          const out = https.request(
            `${target}${req.url ?? '/'}`,
            { method: req.method, agent, headers: { 'content-type': req.headers['content-type'] ?? '' } },
            (answer) => {
              readAll(answer)
                .then((data) =>
                  resolve({
                    status: answer.statusCode ?? 502,
                    headers: { 'content-type': answer.headers['content-type'] ?? 'application/json' },
                    body: data,
                  }),
                )
                .catch(reject);
            },
          );
          out.once('error', reject);
          out.end(body);
        },
      );
      exchanges.push({
        path: (req.url ?? '').split('?')[0] ?? '',
        requestApiVersion: field(body, 'apiVersion'),
        operation: field(body, 'request', 'operation'),
        kind: field(body, 'request', 'kind', 'kind'),
        status: upstream.status,
        responseApiVersion: field(upstream.body, 'apiVersion'),
        allowed: field(upstream.body, 'response', 'allowed'),
      });
      res.writeHead(upstream.status, upstream.headers);
      res.end(upstream.body);
    })().catch((err: unknown) => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`tap: ${err instanceof Error ? err.message : String(err)}`);
    });
  });
  const address = await new Promise<AddressInfo>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server.address() as AddressInfo));
  });
  return {
    url: `https://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}

async function deregister(suite: string): Promise<void> {
  const api = admissionRegistration();
  const ignoreMissing = (err: unknown) => {
    if (!(err instanceof ApiException && err.code === 404)) throw err;
  };
  await api.deleteMutatingWebhookConfiguration({ name: configName(suite) }).catch(ignoreMissing);
  await api.deleteValidatingWebhookConfiguration({ name: configName(suite) }).catch(ignoreMissing);
}

/** Parses Prometheus text and returns the value of `name{labels}` (all given labels equal), or undefined. */
export function metricValue(
  text: string,
  name: string,
  labels: Readonly<Record<string, string>> = {},
): number | undefined {
  const found: number[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const actual = new Map<string, string>();
    for (const pair of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      actual.set(pair[1]!, pair[2]!);
    }
    if (Object.entries(labels).every(([k, v]) => actual.get(k) === v)) found.push(Number(m[3]));
  }
  if (found.length > 1) throw new Error(`${name}${JSON.stringify(labels)} matches ${found.length} series`);
  return found[0];
}

/** The value of `name{labels}` (all given labels equal) read from a prom-client Registry, or undefined. */
export async function registryValue(
  registry: Registry,
  name: string,
  labels: Readonly<Record<string, string>>,
): Promise<number | undefined> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return undefined;
  const { values } = await metric.get();
  const found = values.filter((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value));
  if (found.length > 1) throw new Error(`${name}${JSON.stringify(labels)} matches ${found.length} series`);
  return found[0]?.value;
}

/** Mocha helper: whether any test of the current file failed (to keep the gateway's dir for debugging). */
export function anyFailed(suite: Mocha.Suite): boolean {
  const failed = (s: Mocha.Suite): boolean => s.tests.some((t) => t.state === 'failed') || s.suites.some(failed);
  return failed(suite);
}
