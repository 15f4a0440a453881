/**
 * The composition root of a running gateway: plugins → chain → reviewer → HTTPS webhook server, ops server (plain
 * HTTP, or HTTPS behind the apiserver's authentication and authorization with an `opsAccess`) and plain-HTTP
 * health server (the probes), with certificate hot reload and graceful close. Used by
 * `serve`, the integration tests and the e2e suite alike, so what is tested is what runs.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import type Koa from 'koa';
import type { Chain } from './chain/chain.js';
import type { AnyPlugin } from './chain/plugin-registry.js';
import {
  createReviewer,
  standaloneNamespaceLabels,
  type NamespaceLabelSource,
  type ReviewedRequest,
  type Reviewer,
} from './dispatch/reviewer.js';
import type { GatewayConfig } from './config/types.js';
import { createChainForConfig, type ProviderChains } from './providers/configured-chain.js';
import type { ProviderRuntime, ProviderRuntimeDeps } from './providers/provider-runtime.js';
import type { BindableLogger } from './base/log.js';
import { createMetrics, type Metrics } from './metrics/metrics.js';
import { createHealthApp, HEALTH_CONNECTIONS, type ReadinessCheck } from './http/health-app.js';
import { createOpsApp } from './http/ops-app.js';
import { createOpsAccess, type OpsAccessOptions } from './http/ops-access.js';
import { opsAuthMiddleware } from './http/ops-auth.js';
import { TraceBuffer } from './explain/trace-buffer.js';
import { Recorder, openRecording } from './recording/recorder.js';
import { compileRedaction } from './recording/redact.js';
import { ShadowRunner } from './dispatch/shadow.js';
import { createWebhookApp } from './http/webhook-app.js';
import { createAuthorizer } from './dispatch/authorizer.js';
import { compileExclusions, exclusionsFor } from './authorization/exclusions.js';
import { drainServer } from './http/drain.js';
import { ByteBudget } from './http/byte-budget.js';
import { connectionOptions, watchConnections } from './http/connection-limits.js';
import { defaultInflightBytes, measureBaseline, memoryLimit } from './http/memory-limit.js';
import {
  ensureConfiguredCertificate,
  loadTlsMaterial,
  secureContextOptions,
  watchServingCertificate,
  type TlsMaterial,
} from './tls/serving-certificate.js';
import type { CertificateSource } from './tls/certificate-source.js';
import { startTracing } from './tracing/start-tracing.js';
import { availablePlugins } from '../plugins/index.js';
import { createLargeReviewLane, type LargeReviewLane } from './lane/large-review-lane.js';
import { createExceptionLabels } from './exceptions/exception-label.js';
import { loadExceptions, type WatchedExceptions } from './exceptions/watched-exceptions.js';
import type { GatewayException } from './exceptions/exception.js';
import type { SubjectAccessChecker } from './policy/authorizer-session.js';

export interface GatewayOptions {
  readonly config: GatewayConfig;
  readonly plugins: readonly AnyPlugin[];
  readonly log: BindableLogger;
  /** Defaults to a fresh Registry (one per gateway, so tests can run several). */
  readonly registry?: Registry;
  readonly namespaceLabels?: NamespaceLabelSource;
  /** Discovery backoff/refresh of remote providers (shortened in tests). */
  readonly discovery?: ProviderRuntimeDeps['discovery'];
  /** Called when a provider's status may have changed (for AdmissionProvider status). */
  readonly onProviderChange?: (runtime: ProviderRuntime) => void;
  /** Called once per object an opt-in extension served (cluster mode counts it into the provider's status). */
  readonly onExtensionServed?: (extension: string) => void;
  /** Called once per review per exception it used (cluster mode counts it into the exception's status). */
  readonly onExceptionUsed?: (exception: GatewayException) => void;
  /** More readiness conditions (e.g. the provider watch has synced). */
  readonly readiness?: readonly ReadinessCheck[];
  /**
   * It runs in cluster mode: the ops and health servers listen on every address unless server.opsHost and
   * server.healthHost say otherwise (the kubelet and Prometheus reach the Pod's address). Without a cluster they
   * listen on 127.0.0.1 only.
   */
  readonly inCluster?: boolean;
  /**
   * Where the serving certificate comes from instead of server.tls's files (cluster mode's managed Secret):
   * the initial material and every change, swapped in with setSecureContext.
   */
  readonly certificates?: CertificateSource;
  /**
   * Guard the ops port (server.opsAuth kube, from cluster mode): HTTPS with the serving certificate, and only
   * callers the apiserver authenticates and allows to `get` the path. Without it, the ops port is plain HTTP.
   */
  readonly opsAccess?: OpsAccessOptions;
  /** Where admission policies' authorization checks are asked (cluster mode); absent, every check is errored. */
  readonly accessChecker?: SubjectAccessChecker;
  /**
   * The module whose export `name` lists `plugins`, for the workers of the large-review lane to load them from
   * (server.largeReviews). Without it the lane runs only when `plugins` are the compiled-in ones.
   */
  readonly pluginsModule?: { readonly url: string; readonly name: string };
}

export interface Gateway {
  readonly metrics: Metrics;
  /** The exceptions in force: those of `exceptions.files`, and the cluster's as cluster mode sets them. */
  readonly exceptions: WatchedExceptions;
  readonly reviewer: Reviewer;
  /** https://host:port of the webhook server. */
  readonly webhookUrl: string;
  /** http://host:port of the ops server; https:// when it is guarded (opsAccess). */
  readonly opsUrl: string;
  /** http://host:port of the health server (/healthz, /readyz). */
  readonly healthUrl: string;
  chain(): Chain;
  /** Owns the chain: set dynamic providers here; reviews in flight finish on the chain they started with. */
  readonly chains: ProviderChains;
  /** The serving certificate in use. */
  tls(): TlsMaterial;
  /** Graceful: stop accepting, finish in-flight reviews (bounded), then close. */
  close(): Promise<void>;
}

/**
 * On shutdown, how long an idle keep-alive connection may still carry one more review (answered with
 * Connection: close) before the gateway closes it: a busy apiserver reuses its pooled connections within
 * milliseconds, so only connections idle for this long are closed under a client that might be writing.
 */
const DRAIN_IDLE_GRACE_MS = 2000;

/** The app's Koa request handler for node:http(s); it settles every request itself, errors included. */
function handlerOf<StateT, ContextT>(app: Koa<StateT, ContextT>): http.RequestListener {
  const handle = app.callback();
  return (req, res) => void handle(req, res);
}

function listen(server: http.Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

/** `0.0.0.0:8443`, `[::]:8443`: the address a server is bound to, from `server.address()`. */
function boundAddress({ address, family, port }: AddressInfo): string {
  return family === 'IPv6' ? `[${address}]:${port}` : `${address}:${port}`;
}

/** The host of a URL that reaches a server bound to `host` from this machine. */
function urlHost(host: string): string {
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return h.includes(':') ? `[${h}]` : h;
}

/**
 * The ops port's TLS: the serving certificate, without the webhook's client certificates (server.tls.clientCAFile):
 * its callers prove who they are with a bearer token.
 */
function opsTlsOptions(material: TlsMaterial): https.ServerOptions {
  return { cert: material.cert, key: material.key };
}

/** One listener for several, or none when there are none. */
function fanOut<T>(sinks: ReadonlyArray<(value: T) => void>): ((value: T) => void) | undefined {
  if (sinks.length === 0) return undefined;
  if (sinks.length === 1) return sinks[0];
  return (value) => {
    for (const sink of sinks) sink(value);
  };
}

/**
 * The large-review lane of `server.largeReviews`, when it can run: workers on, the configuration's text known
 * (a worker reads it again) and the plugins a module the workers can load.
 */
function largeReviewLane(
  options: GatewayOptions,
  deps: Omit<Parameters<typeof createLargeReviewLane>[0], 'config' | 'workerData' | 'defaultTimeoutMs'>,
): LargeReviewLane | undefined {
  const { config } = options;
  const plugins =
    options.pluginsModule ??
    (options.plugins === availablePlugins
      ? { url: new URL('../plugins/index.js', import.meta.url).href, name: 'availablePlugins' }
      : undefined);
  if (config.server.largeReviews.workers === 0 || !config.source || !plugins) return undefined;
  return createLargeReviewLane({
    ...deps,
    config: config.server.largeReviews,
    defaultTimeoutMs: config.server.defaultTimeoutSeconds * 1000,
    workerData: { config: { ...config.source, file: config.file }, plugins },
  });
}

/** Whether the providers are the configuration's own, which a lane worker calls (none registered from the cluster). */
function providersOfConfig(runtimes: readonly ProviderRuntime[], config: GatewayConfig): boolean {
  const entries = config.chain.filter((entry) => entry.kind === 'provider');
  const keys = new Set(entries.map((entry) => JSON.stringify(entry)));
  return runtimes.length === entries.length && runtimes.every((runtime) => keys.has(JSON.stringify(runtime.entry)));
}

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const { config, log } = options;
  const { server: serverConfig } = config;
  const registry = options.registry ?? new Registry();
  const metrics = createMetrics(registry);

  let lastSummary = '';
  const recordChain = (c: Chain) => {
    metrics.chainSteps.set({ phase: 'authorize' }, c.authorize.length);
    metrics.chainSteps.set({ phase: 'mutate' }, c.stepsOf('mutate').length);
    metrics.chainSteps.set({ phase: 'validate' }, c.stepsOf('validate').length);
    const summary = c.summary();
    const problems = c.problems.map((p) => p.message);
    const seen = [summary, ...problems].join('\n');
    if (seen !== lastSummary) {
      log.info({ chain: summary }, `chain order: ${summary}`);
      if (problems.length > 0)
        log.error({ problems }, 'step declarations set aside: those steps run one after another');
    }
    lastSummary = seen;
  };
  // Made once the chain is: told when a provider's breaker changes state.
  const made: { lane?: LargeReviewLane | undefined } = {};
  const chains = await createChainForConfig(config, options.plugins, {
    metrics,
    log,
    onChain: recordChain,
    ...(options.discovery ? { discovery: options.discovery } : {}),
    onProviderChange: (runtime) => {
      options.onProviderChange?.(runtime);
      // A breaker's state changed, maybe: the lane's workers fail fast behind an open one as this thread does.
      made.lane?.providersChanged();
    },
  });

  // Who hears of each review with its decision trace; with none, reviews make no trace.
  // A recording and the traces redact alike: a Secret's data always, and what record.redact names.
  const redaction = compileRedaction(config.record.redact);
  const { explain } = config;
  const traces = new TraceBuffer({
    size: explain.bufferSize,
    maxBytes: explain.maxBytes,
    includeObjects: explain.includeObjects,
    redaction,
    keep: explain.keep,
  });
  const reviewSinks: Array<(reviewed: ReviewedRequest) => void> = [];
  if (traces.size > 0) reviewSinks.push((reviewed) => traces.add(reviewed));
  const recorder = Recorder.enabled(config.record)
    ? new Recorder(config.record, { metrics, log, redaction })
    : undefined;
  if (recorder) await openRecording(recorder, config);
  if (recorder) reviewSinks.push((reviewed) => recorder.offer(reviewed));
  const onReviewed = fanOut(reviewSinks);

  const exceptionLabel = createExceptionLabels();
  const exceptions = await loadExceptions(config.exceptions, {
    onApplied: (step, exception) =>
      metrics.exceptionsApplied.inc({ step, exception: exceptionLabel(exception), mode: exception.mode }),
    ...(options.onExceptionUsed ? { onUsed: options.onExceptionUsed } : {}),
  });
  const tracing = await startTracing(config.tracing, { log, metrics });
  const reviewer = createReviewer({
    chain: () => chains.current(),
    metrics,
    log,
    tracing,
    namespaceLabels: options.namespaceLabels ?? standaloneNamespaceLabels,
    deadlineMarginMs: serverConfig.deadlineMarginMs,
    defaultTimeoutMs: serverConfig.defaultTimeoutSeconds * 1000,
    ...(options.onExtensionServed ? { onExtensionServed: options.onExtensionServed } : {}),
    ...(onReviewed ? { onReviewed } : {}),
    // The annotation names a kept trace: the reviews the buffer keeps get it.
    ...(config.explain.auditAnnotation && traces.size > 0 ? { annotateTrace: config.explain.keep } : {}),
    shadow: new ShadowRunner({ metrics, log, now: () => performance.now() }),
    exceptions,
    ...(options.accessChecker ? { accessChecker: options.accessChecker } : {}),
  });

  const authorizer = createAuthorizer({
    steps: () => chains.current().authorize,
    excluded: compileExclusions(exclusionsFor(serverConfig.service.namespace)),
    metrics,
    log,
    namespaceLabels: options.namespaceLabels ?? standaloneNamespaceLabels,
  });

  const { tls } = serverConfig;
  let material: TlsMaterial;
  if (options.certificates) {
    material = options.certificates.initial;
  } else {
    const { generated } = await ensureConfiguredCertificate(tls, log);
    material = await loadTlsMaterial(tls.certFile, tls.keyFile, tls.clientCAFile || undefined);
    log.info(
      { certFile: tls.certFile, generated, notAfter: material.notAfter.toISOString() },
      'serving certificate loaded',
    );
  }
  metrics.certificateExpiry.set(material.notAfter.getTime() / 1000);

  const lane = (made.lane = largeReviewLane(options, {
    exceptions,
    tracing,
    chain: () => chains.current(),
    // A worker has no SubjectAccessReview client: with one here, a chain with policy steps (which may ask
    // authorization checks) stays on the event loop rather than have its checks errored in a worker.
    chainOfConfig: () =>
      !chains.entryStepsSet() &&
      !(options.accessChecker && chains.current().steps.some((step) => step.source === 'policy')) &&
      providersOfConfig(chains.runtimes(), config),
    providers: () => chains.runtimes(),
    metrics,
    log,
    namespaceLabels: options.namespaceLabels ?? standaloneNamespaceLabels,
    ...(options.onExtensionServed ? { onExtensionServed: options.onExtensionServed } : {}),
    ...(traces.size > 0 ? { traces } : {}),
    ...(recorder ? { recorder } : {}),
  }));

  lane?.exceptionsChanged(exceptions.all());
  // What cluster mode's watcher sets reaches the lane's workers too.
  const watchedExceptions: WatchedExceptions = lane
    ? {
        ...exceptions,
        setWatched(watched) {
          exceptions.setWatched(watched);
          lane.exceptionsChanged(exceptions.all());
        },
      }
    : exceptions;

  const limit = memoryLimit();
  // Everything a review does not bring is loaded by now: chain, tracing, certificate; the lane's workers, which
  // start when the first large review comes, are counted at what each holds once started.
  const baseline = measureBaseline() + (lane?.workersBytes ?? 0);
  const budget = new ByteBudget(
    serverConfig.maxInflightBytes ?? defaultInflightBytes(limit, baseline, serverConfig.maxRequestBytes),
    (delta) => metrics.inflightBytes.inc(delta),
  );
  metrics.inflightBytesLimit.set(budget.limit);
  log.info(
    {
      maxInflightBytes: budget.limit,
      ...(serverConfig.maxInflightBytes === undefined
        ? { memoryLimit: limit.bytes, memoryLimitSource: limit.source, baseline }
        : {}),
      maxConnections: serverConfig.maxConnections,
    },
    'review memory and connections bounded',
  );

  const webhookServer = https.createServer(
    // Keep-alive beyond the apiserver's idle timeout (90 s) so pooled connections are not cut under it.
    { ...secureContextOptions(material), ...connectionOptions(serverConfig), keepAliveTimeout: 95_000 },
    handlerOf(
      createWebhookApp({
        reviewer,
        authorizer,
        metrics,
        log,
        maxRequestBytes: serverConfig.maxRequestBytes,
        bodyTiming: serverConfig,
        budget,
        draining: () => closing,
        ...(lane ? { lane } : {}),
      }),
    ),
  );
  watchConnections(webhookServer, 'webhook', serverConfig.maxConnections, metrics);
  let closing = false;
  const checks: ReadinessCheck[] = [
    { name: 'config', ready: () => true },
    {
      name: 'certificate',
      ready: () => material.notAfter.getTime() > Date.now(),
      detail: () => 'serving certificate expired',
    },
    { name: 'shutdown', ready: () => !closing, detail: () => 'shutting down' },
    ...(options.readiness ?? []),
  ];
  let openapi: Promise<object> | undefined;
  const opsApp = createOpsApp({
    registry,
    chain: () => {
      const chain = chains.current();
      return { order: chain.summary(), ...chain.describe(), providers: chains.runtimes().map((r) => r.status()) };
    },
    // Loaded on first read: the schema library costs start-up time no review needs.
    openapi: () => (openapi ??= import('./protocol/openapi.js').then((m) => m.openApiDocument())),
    ...(traces.size > 0 ? { traces } : {}),
    ...(options.opsAccess
      ? {
          guard: opsAuthMiddleware({
            access: createOpsAccess(options.opsAccess, (review, result) =>
              metrics.opsAuthLookups.inc({ review, result }),
            ),
            metrics,
            log,
          }),
        }
      : {}),
  });
  const opsServer = options.opsAccess
    ? https.createServer({ ...opsTlsOptions(material), ...connectionOptions(serverConfig) }, handlerOf(opsApp))
    : http.createServer(connectionOptions(serverConfig), handlerOf(opsApp));
  watchConnections(opsServer, 'ops', serverConfig.maxConnections, metrics);
  const healthServer = http.createServer(connectionOptions(serverConfig), handlerOf(createHealthApp(checks)));
  watchConnections(healthServer, 'health', HEALTH_CONNECTIONS.max, metrics, HEALTH_CONNECTIONS.perAddress);
  // New handshakes use the new context; established connections keep the one they negotiated.
  const swap = (next: TlsMaterial, message: string): void => {
    webhookServer.setSecureContext(secureContextOptions(next));
    if (opsServer instanceof https.Server) opsServer.setSecureContext(opsTlsOptions(next));
    material = next;
    metrics.certificateExpiry.set(next.notAfter.getTime() / 1000);
    log.info({ notAfter: next.notAfter.toISOString(), fingerprint: next.fingerprint256 }, message);
  };
  const watcher = options.certificates
    ? { close: options.certificates.onChange((next) => swap(next, 'serving certificate swapped')) }
    : watchServingCertificate({
        certFile: tls.certFile,
        keyFile: tls.keyFile,
        ...(tls.clientCAFile ? { clientCAFile: tls.clientCAFile } : {}),
        initial: material,
        log,
        onReload: (next) => swap(next, 'serving certificate reloaded'),
      });

  // Without a cluster nothing needs to reach the plain-HTTP servers from another host.
  const localHost = options.inCluster ? '0.0.0.0' : '127.0.0.1';
  const opsHost = serverConfig.opsHost ?? localHost;
  const healthHost = serverConfig.healthHost ?? localHost;
  const webhookAddress = await listen(webhookServer, serverConfig.port, serverConfig.host);
  const opsAddress = await listen(opsServer, serverConfig.opsPort, opsHost);
  const healthAddress = await listen(healthServer, serverConfig.healthPort, healthHost);
  const webhookUrl = `https://${urlHost(serverConfig.host)}:${webhookAddress.port}`;
  const opsUrl = `${options.opsAccess ? 'https' : 'http'}://${urlHost(opsHost)}:${opsAddress.port}`;
  const healthUrl = `http://${urlHost(healthHost)}:${healthAddress.port}`;
  // What each server is bound to, and a URL on this host that reaches it (for curl: the generated
  // certificate names 127.0.0.1 and localhost).
  log.info(
    {
      listening: {
        webhook: boundAddress(webhookAddress),
        ops: boundAddress(opsAddress),
        health: boundAddress(healthAddress),
      },
      webhook: webhookUrl,
      ops: opsUrl,
      health: healthUrl,
    },
    'admission-gateway serving',
  );
  let closed: Promise<void> | undefined;

  return {
    metrics,
    exceptions: watchedExceptions,
    reviewer,
    webhookUrl,
    opsUrl,
    healthUrl,
    chain: () => chains.current(),
    chains,
    tls: () => material,
    close() {
      // Idempotent: a second call (a second signal, a test's cleanup) waits for the same drain.
      closed ??= (async () => {
        closing = true;
        watcher.close();
        const boundMs = serverConfig.shutdownTimeoutSeconds * 1000;
        const boundAt = Date.now() + boundMs;
        // Readiness is 503 from here; answers carry Connection: close; in-flight reviews finish (drain.ts).
        await drainServer(webhookServer, {
          boundMs,
          idleGraceMs: DRAIN_IDLE_GRACE_MS,
          onBound: (connections) =>
            log.warn(
              { connections, boundSeconds: serverConfig.shutdownTimeoutSeconds },
              'shutdown bound reached: closing connections with reviews in flight',
            ),
        });
        // Provider pools close gracefully, i.e. wait for calls in flight; a call left over from a review cut
        // at the bound must not hold the process past it.
        const untilBound = () =>
          new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, boundAt - Date.now())).unref());
        await Promise.race([chains.close(), untilBound()]);
        await lane?.close();
        // The spans of the last reviews are exported within what is left of the bound.
        if (tracing) await Promise.race([tracing.shutdown().catch(() => undefined), untilBound()]);
        // The probes answer (readiness 503) until the very end.
        await Promise.all(
          [opsServer, healthServer].map(
            (server) =>
              new Promise<void>((resolve) => {
                server.close(() => resolve());
                server.closeAllConnections();
              }),
          ),
        );
        await recorder?.close();
      })();
      return closed;
    },
  };
}
