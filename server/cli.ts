/**
 * The `admission-gateway` command line: serve, certs, review. Exit codes: 0 ok, 1 runtime failure,
 * 2 bad usage or invalid config (with a message naming the file and field).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { availablePlugins } from '../plugins/index.js';
import { decodeReview, encodeReview } from './admission/codec.js';
import type { Chain } from './chain/chain.js';
import type { AnyPlugin } from './chain/plugin-registry.js';
import { createReviewer, standaloneNamespaceLabels, type ReviewResult } from './chain/reviewer.js';
import type { AdmissionApiVersion, AdmissionRequest } from './admission/types.js';
import type { Metrics } from './metrics/metrics.js';
import { loadConfig } from './config/load.js';
import type { GatewayConfig } from './config/types.js';
import { ReviewDecodeError } from './admission/review-decode-error.js';
import { ConfigError, PluginRegistrationError, errorMessage } from './base/errors.js';
import { startGateway } from './gateway.js';
import { createChainForConfig } from './providers/configured-chain.js';
import { createLogger, type BindableLogger } from './base/log.js';
import { loadKubeConfig } from './kube/kube-config.js';
import { runManifests } from './manifests/command.js';
import { loadManifestsConfig } from './manifests/config-source.js';
import { ManifestsUsageError, parseManifestsOptions } from './manifests/options.js';
import { createMetrics } from './metrics/metrics.js';
import { applyPatchInPlace } from './patch/apply.js';
import { ensureConfiguredCertificate, servingCaBundle } from './tls/serving-certificate.js';
import { ROUTES, selectionOf, type Route } from './http/routes.js';
import { Registry } from 'prom-client';
import pino from 'pino';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** Where the CLI writes; injected so tests can capture it. */
export interface CliIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly stdin: () => Promise<string>;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  /** Resolves when the process is asked to stop (SIGTERM/SIGINT). */
  readonly stopSignal: () => Promise<string>;
  readonly plugins?: readonly AnyPlugin[];
}

class UsageError extends Error {}

const HELP: Record<string, string> = {
  main: `admission-gateway — an admission webhook gateway for Kubernetes

usage: admission-gateway <command> [options]

commands:
  serve     run the webhook (HTTPS) and operations (HTTP) servers (default)
  certs     generate the CA and serving certificate if missing, print the caBundle
  review    run an AdmissionReview file through the configured chain offline
  manifests render the webhook configurations for the configured chain

Run "admission-gateway <command> --help" for a command's options.`,
  serve: `usage: admission-gateway serve [--config FILE] [--port N] [--ops-port N] [--log-level LEVEL]

  --config FILE       gateway configuration (default: gateway.yaml, env GATEWAY_CONFIG)
  --port N            webhook HTTPS port (overrides server.port)
  --ops-port N        operations HTTP port (overrides server.opsPort)
  --log-level LEVEL   debug, info, warn, error or silent (overrides log.level)`,
  certs: `usage: admission-gateway certs [--config FILE]

Generates a CA and serving certificate at server.tls.certFile/keyFile when both are missing (as serve
does), then prints the caBundle (base64 of the CA certificate) for a webhook configuration's
clientConfig.caBundle.

  --config FILE       gateway configuration (default: gateway.yaml, env GATEWAY_CONFIG)
  --ca FILE           CA certificate to print (default: ca.crt next to the serving certificate)`,
  review: `usage: admission-gateway review <file|-> [--config FILE] [--route ROUTE]

Runs an AdmissionReview (JSON; "-" reads standard input) through the configured chain without a
cluster and prints, as JSON, each phase's AdmissionReview response and its decoded patch. With the
default route "all" it does what the apiserver does: the mutate phase, then the validate phase on the
mutated object.

  --config FILE       gateway configuration (default: gateway.yaml, env GATEWAY_CONFIG)
  --route ROUTE       all (default), ${ROUTES.join(', ')}`,
  manifests: `usage: admission-gateway manifests [--config FILE] [--service NAMESPACE/NAME[:PORT] | --url https://HOST[:PORT]]
                                   [--ca FILE | --no-ca-bundle] [--name NAME] [--output yaml|json]
                                   [--namespace-label KEY=VALUE]... [--exclude-namespace NAME]... [--all-resources]

Prints the MutatingWebhookConfiguration and ValidatingWebhookConfiguration that send the apiserver's
requests to the gateway for the configured chain (pipe into "kubectl apply -f -"):
  - mutate.admissiongateway.io on /mutate: the whole mutate phase in one webhook (split by failure policy
    it would run out of chain order); failurePolicy Fail if any mutate step is Fail, else Ignore;
    reinvocationPolicy IfNeeded if any mutate step is.
  - validate-fail.admissiongateway.io on /validate/fail and validate-ignore.admissiongateway.io on
    /validate/ignore: the validating steps of each failure policy.
  A webhook whose route has no step is left out. rules: the union of its steps' rules (equal operations,
  groups, versions and scope merged; rules and resources another rule covers dropped). timeoutSeconds: the
  largest step timeout plus server.deadlineMarginMs, rounded up, at most 30. sideEffects: NoneOnDryRun when
  a step declares sideEffects Some (the gateway skips it on dry-run), else None. namespaceSelector: only
  the exclusions (kube-system, kube-node-lease, the gateway's namespace, namespaces labelled
  admissiongateway.io/exclude); step selectors are evaluated by the gateway itself.
AdmissionProviders added at run time only see what these rules send: with kube.watchProviders on, a note
says so on stderr; --all-resources renders every route with a catch-all rule instead.
--config also takes the ConfigMap that carries gateway.yaml (manifests/config.yaml).

  --config FILE             gateway configuration (default: gateway.yaml, env GATEWAY_CONFIG)
  --service NS/NAME[:PORT]  call this Service (default: server.service of the config, port 443)
  --url https://HOST[:PORT] call this URL instead (e.g. a gateway outside the cluster)
  --ca FILE                 CA certificate for caBundle (default: ca.crt next to server.tls.certFile,
                            generated with the serving certificate when both are missing, as certs does)
  --no-ca-bundle         leave caBundle out: the gateway in cluster mode patches it in, and re-applying
                         the output keeps what it patched (apply never removes a field it did not set)
  --name NAME               metadata.name of both configurations (default: admission-gateway)
  --output, -o FORMAT       yaml (default: documents with a comment header) or json (a v1 List)
  --namespace-label K=V     only select namespaces with this label (repeatable)
  --exclude-namespace NAME  exclude this namespace too (repeatable)
  --all-resources           catch-all rules on every route, for AdmissionProviders added at run time`,
};

const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  config: { type: 'string', short: 'c' },
  port: { type: 'string' },
  'ops-port': { type: 'string' },
  'log-level': { type: 'string' },
  route: { type: 'string' },
  ca: { type: 'string' },
  service: { type: 'string' },
  url: { type: 'string' },
  'no-ca-bundle': { type: 'boolean' },
  name: { type: 'string' },
  output: { type: 'string', short: 'o' },
  'namespace-label': { type: 'string', multiple: true },
  'exclude-namespace': { type: 'string', multiple: true },
  'all-resources': { type: 'boolean' },
} satisfies ParseArgsConfig['options'];

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

function portOption(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new UsageError(`--${flag}: expected a port number, got "${value}"`);
  return n;
}

async function configFrom(values: Values, io: CliIO): Promise<GatewayConfig> {
  const explicit = values.config ?? io.env.GATEWAY_CONFIG;
  return loadConfig(explicit ?? 'gateway.yaml', { isDefaultLocation: explicit === undefined, cwd: io.cwd });
}

function withOverrides(config: GatewayConfig, values: Values): GatewayConfig {
  const port = portOption(values.port, 'port');
  const opsPort = portOption(values['ops-port'], 'ops-port');
  const level = values['log-level'];
  if (level !== undefined && !['debug', 'info', 'warn', 'error', 'silent'].includes(level)) {
    throw new UsageError(`--log-level: expected debug, info, warn, error or silent, got "${level}"`);
  }
  return {
    ...config,
    server: {
      ...config.server,
      ...(port !== undefined ? { port } : {}),
      ...(opsPort !== undefined ? { opsPort } : {}),
    },
    log: level ? { level: level as GatewayConfig['log']['level'] } : config.log,
  };
}

async function serve(values: Values, io: CliIO): Promise<number> {
  const config = withOverrides(await configFrom(values, io), values);
  const log = createLogger(config.log.level);
  const kc = await loadKubeConfig(config.kube, io.env);
  if (!kc && config.kube.certificate.secretName) {
    throw new ConfigError(
      config.file,
      'kube.certificate.secretName',
      'needs cluster mode, but no kubeconfig or in-cluster service account was found',
    );
  }
  const cluster = kc ? (await import('./kube/cluster-mode.js')).createClusterMode(kc, config, log) : undefined;
  log.info({ cluster: kc?.getCurrentCluster()?.server ?? null }, kc ? 'cluster mode' : 'standalone mode (no cluster)');
  // The managed certificate Secret must be read (or created) before the webhook server can listen.
  const clusterOptions = await cluster?.prepare();
  const gateway = await startGateway({
    config,
    plugins: io.plugins ?? availablePlugins,
    log,
    ...clusterOptions,
  });
  cluster?.attach(gateway);
  const signal = await io.stopSignal();
  log.info({ signal }, 'stopping: draining in-flight reviews');
  await cluster?.stop();
  await gateway.close();
  log.info({}, 'stopped');
  log.flush();
  return EXIT_OK;
}

async function certs(values: Values, io: CliIO): Promise<number> {
  const config = await configFrom(values, io);
  const { tls } = config.server;
  const log = pino({ level: 'warn' }, pino.destination(2));
  await ensureConfiguredCertificate(tls, log);
  const caFile = values.ca ? path.resolve(io.cwd, values.ca) : undefined;
  const bundle = await servingCaBundle(tls.certFile, caFile).catch((err: unknown) => {
    throw new UsageError(errorMessage(err));
  });
  io.stdout(`${bundle}\n`);
  return EXIT_OK;
}

async function manifests(argv: readonly string[], positionals: string[], values: Values, io: CliIO): Promise<number> {
  if (positionals.length > 0) throw new UsageError(`manifests: unexpected argument "${positionals[0]}"`);
  try {
    const options = parseManifestsOptions(values);
    const explicit = values.config ?? io.env.GATEWAY_CONFIG;
    const config = await loadManifestsConfig(explicit ?? 'gateway.yaml', {
      isDefaultLocation: explicit === undefined,
      cwd: io.cwd,
    });
    // The command line minus the command word, for the "Rendered by" header.
    const args = argv.filter((_, i) => i !== argv.indexOf('manifests'));
    await runManifests(options, {
      config,
      plugins: io.plugins ?? availablePlugins,
      cwd: io.cwd,
      stdout: io.stdout,
      stderr: io.stderr,
      args,
    });
    return EXIT_OK;
  } catch (err) {
    if (err instanceof ManifestsUsageError) throw new UsageError(err.message);
    throw err;
  }
}

function printable(result: ReviewResult, apiVersion: Parameters<typeof encodeReview>[0]) {
  return {
    review: JSON.parse(encodeReview(apiVersion, result.response).toString()) as unknown,
    patch: result.decision.patch ?? null,
    steps: result.reports,
  };
}

async function review(positionals: string[], values: Values, io: CliIO): Promise<number> {
  const source = positionals[0];
  if (!source) throw new UsageError('review: expected a file name or "-" for standard input');
  const routeName = values.route ?? 'all';
  if (routeName !== 'all' && !(ROUTES as readonly string[]).includes(routeName)) {
    throw new UsageError(`--route: expected all or one of ${ROUTES.join(', ')}, got "${routeName}"`);
  }
  const config = await configFrom(values, io);
  let text: string;
  try {
    text = source === '-' ? await io.stdin() : await readFile(path.resolve(io.cwd, source), 'utf8');
  } catch (err) {
    throw new UsageError(`review: cannot read "${source}": ${errorMessage(err)}`);
  }
  const { apiVersion, request } = decodeReview(text);
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
  const log = pino({ level: config.log.level === 'debug' ? 'debug' : 'warn' }, pino.destination(2));
  const chains = await createChainForConfig(config, io.plugins ?? availablePlugins, {
    metrics,
    log,
    onChain: () => undefined,
  });
  try {
    // Providers with discovery get one attempt, so the offline run sees their handlers.
    await Promise.all(chains.runtimes().map((r) => r.discover()));
    return await reviewAll(chains.current(), request, apiVersion, routeName, { metrics, log, config, io });
  } finally {
    await chains.close();
  }
}

async function reviewAll(
  chain: Chain,
  request: AdmissionRequest,
  apiVersion: AdmissionApiVersion,
  routeName: string,
  deps: { metrics: Metrics; log: BindableLogger; config: GatewayConfig; io: CliIO },
): Promise<number> {
  const { io, config } = deps;
  const reviewer = createReviewer({
    chain: () => chain,
    metrics: deps.metrics,
    log: deps.log,
    namespaceLabels: standaloneNamespaceLabels,
    deadlineMarginMs: config.server.deadlineMarginMs,
    defaultTimeoutMs: config.server.defaultTimeoutSeconds * 1000,
  });

  if (routeName !== 'all') {
    const result = await reviewer.review(request, selectionOf(routeName as Route));
    io.stdout(`${JSON.stringify(printable(result, apiVersion), null, 2)}\n`);
    return EXIT_OK;
  }
  const mutated = await reviewer.review(request, selectionOf('mutate'));
  const output: Record<string, unknown> = { mutate: printable(mutated, apiVersion) };
  if (mutated.response.allowed) {
    // The apiserver validates the object as mutated; do the same.
    const object = request.object ? structuredClone(request.object) : request.object;
    if (object && mutated.decision.patch) applyPatchInPlace(object, mutated.decision.patch);
    const validated = await reviewer.review({ ...request, object }, selectionOf('validate'));
    output.validate = printable(validated, apiVersion);
    output.allowed = validated.response.allowed;
  } else {
    output.allowed = false;
  }
  io.stdout(`${JSON.stringify(output, null, 2)}\n`);
  return EXIT_OK;
}

/** Runs the CLI; returns the exit code. */
export async function runCli(argv: readonly string[], io: CliIO): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options: OPTIONS,
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length === 0 && values.help) {
      io.stdout(`${HELP.main}\n`);
      return EXIT_OK;
    }
    const [command = 'serve', ...rest] = positionals;
    if (!(command in HELP) || command === 'main') {
      throw new UsageError(`unknown command "${command}"\n\n${HELP.main}`);
    }
    if (values.help) {
      io.stdout(`${HELP[command]}\n`);
      return EXIT_OK;
    }
    switch (command) {
      case 'serve':
        return await serve(values, io);
      case 'certs':
        return await certs(values, io);
      case 'manifests':
        return await manifests(argv, rest, values, io);
      default:
        return await review(rest, values, io);
    }
  } catch (err) {
    if (err instanceof ConfigError || err instanceof UsageError || err instanceof PluginRegistrationError) {
      io.stderr(`admission-gateway: ${err.message}\n`);
      return EXIT_USAGE;
    }
    if (err instanceof ReviewDecodeError) {
      io.stderr(`admission-gateway: invalid AdmissionReview: ${err.message}\n`);
      return EXIT_USAGE;
    }
    if (err instanceof TypeError && (err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
      io.stderr(`admission-gateway: ${err.message}\n\n${HELP.main}\n`);
      return EXIT_USAGE;
    }
    io.stderr(`admission-gateway: ${errorMessage(err)}\n`);
    return EXIT_FAILURE;
  }
}
