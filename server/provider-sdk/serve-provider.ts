/**
 * Runs plugin modules as a remote provider: the same modules the gateway compiles in, served over HTTPS in
 * the provider protocol (docs/provider-protocol.md) — an AdmissionReview (v1 or v1beta1) POSTed at one path
 * per handler, `GET /discovery` listing the handlers with their match, and `/healthz`. Each handler reviews
 * through the gateway's own reviewer with a chain of its one step, so the working copy, rollback and computed
 * patch happen here exactly as in process; the gateway receives the JSON patch. A plugin author writes one
 * module and chooses at deploy time where it runs. With `register`, the provider also registers itself as an
 * AdmissionProvider once it listens (registration.ts); `GET /registration` says how that went. Its server is
 * bounded as the gateway's webhook server is (the same connection-limits and body reading, options of the same
 * names as gateway.yaml's `server` fields).
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import compose from 'koa-compose';
import { Registry } from 'prom-client';
import type { AdmissionResponse, Phase } from '../admission/types.js';
import { ConfigError, errorMessage } from '../base/errors.js';
import { bufferedStdout, createLogger, type BindableLogger } from '../base/log.js';
import { createChain, pluginEntrySteps } from '../chain/chain.js';
import { createPluginRegistry, type AnyPlugin } from '../chain/plugin-registry.js';
import { createReviewer, standaloneNamespaceLabels } from '../dispatch/reviewer.js';
import { connectionFieldsOf, readConnectionBounds } from '../config/connection-bounds.js';
import { Reader } from '../config/reader.js';
import { readTracing, type TracingSettings } from '../config/tracing.js';
import { validateConfig } from '../config/validate.js';
import type { PluginEntry } from '../config/types.js';
import { ByteBudget } from '../http/byte-budget.js';
import { connectionOptions, watchConnections } from '../http/connection-limits.js';
import {
  answerInProtocol,
  holdReview,
  readReview,
  runReviewWith,
  writeAnswersTogether,
  type ReviewServices,
  type ReviewState,
} from '../http/review-middleware.js';
import { createMetrics } from '../metrics/metrics.js';
import { startTracing, type GatewayTracing } from '../tracing/start-tracing.js';
import type { DiscoveryDocument, DiscoveryHandlerDocument } from '../protocol/discovery-document.js';
import { DISCOVERY_KIND, HOOK_API_V1ALPHA1, REVIEW_VERSIONS, type ReviewVersion } from '../protocol/versions.js';
import {
  checkRegistrationOptions,
  registerProvider,
  type Registration,
  type RegistrationOptions,
  type RegistrationState,
} from './registration.js';

/**
 * The registration's state as `GET /registration` shows it, to anyone who reaches the port: a failure's reason
 * and status, not the apiserver's message (which names accounts, resources and fields); that is in the log.
 */
function withoutDetails(state: RegistrationState): object {
  if (!('lastError' in state) || !state.lastError) return state;
  const { message: _message, ...reason } = state.lastError;
  return { ...state, lastError: reason };
}

/** One plugin the provider serves, as a gateway.yaml entry would place it. */
export interface ProvidedPlugin {
  readonly plugin: AnyPlugin;
  /** Handler name (default the plugin's name). */
  readonly name?: string;
  readonly settings?: unknown;
}

export interface ProviderServerOptions {
  readonly plugins: readonly ProvidedPlugin[];
  /** PEM of the serving certificate and its key. */
  readonly tls: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /** Default 0.0.0.0 (a Pod's address). */
  readonly host?: string;
  /** Default 8443; 0 for any free port. */
  readonly port?: number;
  /**
   * Default: info and above on standard output, in the gateway's format (JSON lines with the level's name, an
   * ISO time and `"service":"admission-provider"`).
   */
  readonly log?: BindableLogger;
  /** Largest review accepted, as the gateway's server.maxRequestBytes (default 7 MiB). */
  readonly maxRequestBytes?: number;
  /** Memory reviews may hold at once (default 256 MiB). */
  readonly maxInflightBytes?: number;
  /**
   * Open connections; more are closed on accept (default 512). This and the four timings below bound
   * connections as the gateway's own webhook server does, with the same defaults and meaning as gateway.yaml's
   * `server` fields of the same names: anyone who can reach the provider's port can open connections and send
   * slowly.
   */
  readonly maxConnections?: number;
  /** Time for a client to finish its TLS handshake and send a request's headers (default 10 s); else closed, 408. */
  readonly headersTimeoutSeconds?: number;
  /** Time for a client to send a whole request (default max(30, headersTimeoutSeconds)); else 408, closed. */
  readonly requestTimeoutSeconds?: number;
  /**
   * Time for a review's body to arrive once its headers have (default 10 s), plus one second per
   * `minBodyBytesPerSecond` bytes received (default 64 KiB); behind that pace it is answered 408 and closed.
   */
  readonly bodyTimeoutSeconds?: number;
  readonly minBodyBytesPerSecond?: number;
  /**
   * The AdmissionReview versions the handlers announce, preferred first (default v1, v1beta1). The gateway
   * calls each handler in the first it speaks; the handlers answer whichever they are sent.
   */
  readonly admissionReviewVersions?: readonly ReviewVersion[];
  /**
   * Register as an AdmissionProvider once listening (never delays serving): the SDK applies where it is, its
   * CA, `discovery: true` and its handlers' phases, and leaves every other field to the operator.
   */
  readonly register?: RegistrationOptions;
  /**
   * Trace each review as the gateway does (README "Tracing"): the fields of gateway.yaml's `tracing`
   * (`serviceName` defaults to `admission-provider`). A review continues the gateway's `traceparent`, so the
   * provider's spans are children of the gateway's step span. Off without `otlpEndpoint`.
   */
  readonly tracing?: TracingSettings;
}

/** One handler in the discovery document. */
export interface ProviderHandler extends DiscoveryHandlerDocument {
  readonly phase: Phase;
  readonly path: string;
  readonly apiVersion: typeof HOOK_API_V1ALPHA1;
  readonly admissionReviewVersions: readonly ReviewVersion[];
}

export interface ProviderServer {
  readonly url: string;
  readonly port: number;
  readonly handlers: readonly ProviderHandler[];
  /** The self-registration, with `register`. */
  readonly registration: Registration | undefined;
  /** Stops serving (and retrying a registration that has not succeeded; the registration itself stays). */
  close(): Promise<void>;
}

const DEFAULT_MAX_REQUEST_BYTES = 7 * 1024 * 1024;
const DEFAULT_MAX_INFLIGHT_BYTES = 256 * 1024 * 1024;

/**
 * The handlers of `plugins`: one per phase each plugin has work in, named after the entry, with `-mutate` or
 * `-validate` appended when it has both. Settings are checked as the gateway checks them (a ConfigError naming
 * `plugins[i].settings…`).
 */
function handlersOf(
  plugins: readonly ProvidedPlugin[],
  admissionReviewVersions: readonly ReviewVersion[],
  log: BindableLogger,
  metrics: ReturnType<typeof createMetrics>,
  tracing: GatewayTracing | undefined,
) {
  try {
    return handlersOfChain(plugins, admissionReviewVersions, log, metrics, tracing);
  } catch (err) {
    // The plugins are checked as a chain; the caller gave a list.
    if (!(err instanceof ConfigError) || !err.path.startsWith('chain[')) throw err;
    throw new ConfigError(err.file, `plugins${err.path.slice('chain'.length)}`, err.expected);
  }
}

function handlersOfChain(
  plugins: readonly ProvidedPlugin[],
  admissionReviewVersions: readonly ReviewVersion[],
  log: BindableLogger,
  metrics: ReturnType<typeof createMetrics>,
  tracing: GatewayTracing | undefined,
) {
  const config = validateConfig(
    {
      chain: plugins.map((p) => ({
        plugin: p.plugin.name,
        ...(p.name ? { name: p.name } : {}),
        ...(p.settings !== undefined ? { settings: p.settings } : {}),
      })),
    },
    'provider plugins',
    process.cwd(),
  );
  const registry = createPluginRegistry(plugins.map((p) => p.plugin));
  return (config.chain as PluginEntry[]).flatMap((entry) => {
    const { steps } = pluginEntrySteps(entry, registry, config.file);
    return steps.map((step) => {
      const name = steps.length > 1 ? `${step.name}-${step.phase}` : step.name;
      const chain = createChain([step]);
      const reviewer = createReviewer({
        chain: () => chain,
        metrics,
        log,
        // The provider knows no namespace labels: the gateway already applied the match's namespaceSelector.
        namespaceLabels: standaloneNamespaceLabels,
        deadlineMarginMs: 0,
        defaultTimeoutMs: step.timeoutMs,
        tracing,
      });
      const described = step.describe() as Pick<DiscoveryHandlerDocument, 'match' | 'supplies' | 'dependsOn'>;
      const handler: ProviderHandler = {
        name,
        phase: step.phase,
        apiVersion: HOOK_API_V1ALPHA1,
        admissionReviewVersions,
        path: `/${name}`,
        ...(described.match ? { match: described.match } : {}),
        ...(described.supplies ? { supplies: described.supplies } : {}),
        ...(described.dependsOn ? { dependsOn: described.dependsOn } : {}),
      };
      return { handler, reviewer, step: step.name };
    });
  });
}

/**
 * The answer as the plugin gave it, without the step name the reviewer put before its message, its warnings and
 * its audit annotation keys: the gateway puts its own step's name there, as for any provider, so a user reads
 * what the compiled-in plugin would have said.
 */
function withoutStepName(step: string): (response: AdmissionResponse) => AdmissionResponse {
  const prefix = `${step}: `;
  const keyPrefix = `${step}.`;
  const bare = (text: string) => (text.startsWith(prefix) ? text.slice(prefix.length) : text);
  return (response) => ({
    ...response,
    ...(response.status?.message !== undefined
      ? { status: { ...response.status, message: bare(response.status.message) } }
      : {}),
    ...(response.warnings ? { warnings: response.warnings.map(bare) } : {}),
    ...(response.auditAnnotations
      ? {
          auditAnnotations: Object.fromEntries(
            Object.entries(response.auditAnnotations).map(([key, value]) => [
              key.startsWith(keyPrefix) ? key.slice(keyPrefix.length) : key,
              value,
            ]),
          ),
        }
      : {}),
  });
}

/** Serves `plugins` as a remote provider; resolves once listening. */
export async function serveProvider(options: ProviderServerOptions): Promise<ProviderServer> {
  const log = options.log ?? createLogger('info', bufferedStdout(), 'admission-provider');
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
  const versions = options.admissionReviewVersions ?? REVIEW_VERSIONS;
  if (versions.length === 0 || versions.some((v) => !REVIEW_VERSIONS.includes(v))) {
    throw new Error(`admissionReviewVersions: expected some of ${REVIEW_VERSIONS.join(', ')}`);
  }
  const tracingConfig = readTracing(new Reader('provider options'), options.tracing, 'tracing', 'admission-provider');
  const tracing = await startTracing(tracingConfig, { log, metrics });
  try {
    return await serveWith(options, log, metrics, [...new Set(versions)], tracing);
  } catch (err) {
    await tracing?.shutdown();
    throw err;
  }
}

async function serveWith(
  options: ProviderServerOptions,
  log: BindableLogger,
  metrics: ReturnType<typeof createMetrics>,
  versions: readonly ReviewVersion[],
  tracing: GatewayTracing | undefined,
): Promise<ProviderServer> {
  const bounds = readConnectionBounds(new Reader('provider options'), connectionFieldsOf(options), '');
  const served = handlersOf(options.plugins, versions, log, metrics, tracing);
  const phases = [...new Set(served.map((s) => s.handler.phase))];
  // Before anything listens: a mistake in the registration fails the start, not the cluster.
  if (options.register) checkRegistrationOptions(options.register, phases);
  const maxRequestBytes = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
  const budget = new ByteBudget(options.maxInflightBytes ?? DEFAULT_MAX_INFLIGHT_BYTES, () => undefined);

  const app = new Koa<ReviewState, ReviewServices>();
  // The reviewer each route uses is its own (runReviewWith); the app's is the first, never read.
  const services: Omit<ReviewServices, 'reviewer'> & { reviewer: ReviewServices['reviewer'] | undefined } = {
    reviewer: served[0]?.reviewer,
    metrics,
    log,
    budget,
    maxRequestBytes,
    bodyTiming: bounds,
  };
  Object.assign(app.context, services);
  app.on('error', (err: unknown) => log.warn({ err: errorMessage(err) }, 'provider request failed'));
  const router = new Router<ReviewState, ReviewServices>();
  for (const { handler, reviewer, step } of served) {
    router.post(
      handler.path,
      compose([
        writeAnswersTogether,
        holdReview,
        answerInProtocol,
        readReview,
        runReviewWith(reviewer, { name: handler.name, phase: handler.phase }, withoutStepName(step)),
      ]),
    );
  }
  const document: DiscoveryDocument = {
    apiVersion: HOOK_API_V1ALPHA1,
    kind: DISCOVERY_KIND,
    handlers: served.map((s) => s.handler),
  };
  const discovery = JSON.stringify(document);
  router.get('/discovery', (ctx) => {
    ctx.set('Content-Type', 'application/json');
    ctx.body = discovery;
  });
  router.get('/healthz', (ctx) => {
    ctx.body = 'ok';
  });
  // Started once listening (below); the route may be asked before.
  const started: { registration?: Registration } = {};
  router.get('/registration', (ctx) => {
    const state = started.registration?.state();
    ctx.status = !state || state.state === 'registered' ? 200 : 503;
    ctx.set('Content-Type', 'application/json');
    ctx.body = JSON.stringify(state ? withoutDetails(state) : { state: 'disabled' });
  });
  app.use(router.routes());
  app.use(router.allowedMethods());

  const handle = app.callback();
  const server = https.createServer(
    { cert: options.tls.cert, key: options.tls.key, ...connectionOptions(bounds) },
    (req, res) => void handle(req, res),
  );
  watchConnections(server, 'provider', bounds.maxConnections, metrics);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8443, options.host ?? '0.0.0.0', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host ?? '0.0.0.0';
  log.info({ port, handlers: served.map((s) => `${s.handler.name}(${s.handler.phase})`) }, 'provider serving');
  const { register } = options;
  const registration = register ? registerProvider({ ...register, phases, log }) : undefined;
  started.registration = registration;
  return {
    url: `https://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    port,
    handlers: served.map((s) => s.handler),
    registration,
    close: async () => {
      await new Promise<void>((resolve) => {
        registration?.stop();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      // The spans of the last reviews are exported before it is closed.
      await tracing?.shutdown();
    },
  };
}
