/**
 * Everything the gateway keeps for one remote provider: its connection pool, its circuit breaker, its
 * discovered handlers and its status. It produces the provider's steps for the chain and says when they
 * change. Discovery failures never throw: the provider is reported not ready, retried with backoff, and
 * its steps fail through their failurePolicy until it is discovered.
 */
import type { Dispatcher } from 'undici';
import type { Match, Phase } from '../admission/types.js';
import { placeEntry } from '../steps/placement.js';
import { effectiveFailurePolicy } from '../steps/policy.js';
import type { StepSource } from '../steps/step-source.js';
import type { Step } from '../steps/step.js';
import type { ProviderEntry } from '../config/types.js';
import { loadTlsMaterial } from '../tls/serving-certificate.js';
import { ConfigError, ProviderCallError, StepFailedError, errorMessage, type FailureReason } from '../base/errors.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../base/log.js';
import { parseDiscovery, type DiscoveredHandler } from './discovery.js';
import { createProviderBreaker, type BreakerState, type ProviderBreaker } from './provider-breaker.js';
import { createProviderClient, type ProviderClient, type ProviderTarget } from './provider-client.js';
import { chooseReviewVersion, reviewApiVersion, type ReviewVersion } from '../protocol/versions.js';
import { createDeprecationReport, type StepVersion } from './deprecation-report.js';
import { createProviderStep } from './provider-step.js';
import { createProviderAuthorizeStep } from './provider-authorize-step.js';
import type { AuthorizeStep } from '../authorization/authorize-step.js';

/** What a provider without its own `match` sees: every main resource (the webhook configuration filters first). */
export const MATCH_EVERYTHING: Match = {
  rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }],
};

export interface ProviderStatus {
  readonly name: string;
  /** Steps are usable: no discovery needed, or discovery succeeded at least once. */
  readonly ready: boolean;
  readonly discovered: boolean | undefined;
  readonly handlers: readonly DiscoveredHandler[];
  readonly breaker: BreakerState;
  /** The version each admission step is called in; none while discovery is pending. */
  readonly versions: readonly StepVersion[];
  readonly lastError?: string;
}

export interface ProviderRuntimeDeps {
  readonly metrics: Metrics;
  readonly log: Logger;
  /** The provider's steps or status changed (discovery, breaker): rebuild the chain / write status. */
  readonly onChange: (runtime: ProviderRuntime) => void;
  /** Discovery retry backoff and refresh; shortened in tests. */
  readonly discovery?: { initialBackoffMs?: number; maxBackoffMs?: number; refreshMs?: number };
  /** What the provider's calls go through instead of a connection pool of its own (provider-transport.ts). */
  readonly dispatcher?: Dispatcher | undefined;
  /**
   * The client and breaker to call the provider through instead of a pool and a breaker of the runtime's own: a
   * large-review lane worker's, which stand in for the main thread's (lane/remote-provider.ts).
   */
  readonly parts?: ProviderParts | undefined;
}

/** How a runtime's client and breaker are made in place of its own. */
export interface ProviderParts {
  client(entry: ProviderEntry, target: ProviderTarget): ProviderClient;
  breaker(entry: ProviderEntry): ProviderBreaker;
}

/** A provider as a source of the chain's steps, with its status (`/chain`, the AdmissionProvider's status). */
export interface ProviderRuntime extends StepSource {
  readonly entry: ProviderEntry;
  /** The provider's client and breaker: the lane's workers call through them too (lane/provider-host.ts). */
  readonly client: ProviderClient;
  readonly breaker: ProviderBreaker;
  steps(): Step[];
  status(): ProviderStatus;
}

function resolveUrl(entry: ProviderEntry): string {
  if (entry.url) return entry.url;
  const s = entry.service!;
  return `https://${s.name}.${s.namespace}.svc:${s.port}${s.path}`;
}

function decodeCaBundle(entry: ProviderEntry): string | undefined {
  if (!entry.caBundle) return undefined;
  const pem = Buffer.from(entry.caBundle, 'base64').toString('utf8');
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new ConfigError('provider', `${entry.path}.caBundle`, 'expected base64 of PEM certificates');
  }
  return pem;
}

/**
 * The client certificate and key, read and checked as the serving pair is (bounded regular files, parseable,
 * the key the certificate's): a mistake stops the start instead of failing every call with `connection`.
 */
async function loadClientCert(entry: ProviderEntry): Promise<{ cert: string; key: string } | undefined> {
  if (!entry.clientCert) return undefined;
  try {
    const { cert, key } = await loadTlsMaterial(entry.clientCert.certFile, entry.clientCert.keyFile);
    return { cert: cert.toString('utf8'), key: key.toString('utf8') };
  } catch (err) {
    throw new ConfigError('provider', `${entry.path}.clientCert`, errorMessage(err));
  }
}

export async function createProviderRuntime(entry: ProviderEntry, deps: ProviderRuntimeDeps): Promise<ProviderRuntime> {
  const url = resolveUrl(entry);
  const ca = decodeCaBundle(entry);
  const clientCert = await loadClientCert(entry);
  const settings = entry.settings as Record<string, string> | undefined;
  const entryVersion = chooseReviewVersion(entry.admissionReviewVersions);
  const target: ProviderTarget = {
    url,
    apiVersion: reviewApiVersion(entryVersion),
    ...(ca ? { ca } : {}),
    ...(clientCert ? { clientCert } : {}),
    ...(settings ? { settings } : {}),
  };
  const client: ProviderClient =
    deps.parts?.client(entry, target) ?? createProviderClient(target, { dispatcher: deps.dispatcher });

  const breaker: ProviderBreaker =
    deps.parts?.breaker(entry) ??
    createProviderBreaker(entry.name, entry.circuitBreaker, {
      metrics: deps.metrics,
      log: deps.log,
      // `runtime` is defined below; the breaker cannot change state before the first call.
      onStateChange: () => deps.onChange(runtime),
    });

  const initialBackoff = deps.discovery?.initialBackoffMs ?? 1000;
  const maxBackoff = deps.discovery?.maxBackoffMs ?? 60_000;
  const refreshMs = deps.discovery?.refreshMs ?? 300_000;
  let handlers: DiscoveredHandler[] | undefined;
  let lastError: { reason: FailureReason; message: string } | undefined;
  let backoff = initialBackoff;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  /** Aborts a discovery request in flight on close (the pool's graceful close would wait for its timeout). */
  const stopDiscovery = new AbortController();
  let steps: Step[] = [];
  let versions: StepVersion[] = [];
  const deprecation = createDeprecationReport(entry.name, deps);

  const common = { provider: entry.name, url, client, breaker };
  const entryMatch = entry.match ?? MATCH_EVERYTHING;
  const entryPlacement = placeEntry(entry, { match: entryMatch });

  /** A step for one of the entry's phases, as configured (no discovery). */
  const entryStep = (phase: Phase): Step =>
    createProviderStep({ ...common, ...entryPlacement, phase, apiVersion: reviewApiVersion(entryVersion) });

  /** Until discovery succeeds, the entry's phases are steps that fail with the discovery error. */
  const placeholder = (phase: Phase): Step => {
    const step = entryStep(phase);
    return {
      ...step,
      invoke: () => {
        const why = lastError ?? { reason: 'connection' as const, message: 'discovery has not completed yet' };
        throw new StepFailedError(why.reason, `provider "${entry.name}" is not discovered yet: ${why.message}`);
      },
      describe: () => ({ ...step.describe(), discovered: false, lastError: lastError?.message }),
    };
  };

  const admissionPhases = entry.phases.filter((phase): phase is Phase => phase !== 'authorize');
  /** The steps as the entry and discovery say, and the version each is called in (reported once built). */
  const build = (): Step[] => {
    const built = buildSteps();
    versions =
      handlers || !entry.discovery
        ? built.map(({ step, version }) => ({ step: step.name, phase: step.phase, version }))
        : [];
    deprecation.report(versions);
    return built.map((s) => s.step);
  };
  const buildSteps = (): Array<{ step: Step; version: ReviewVersion }> => {
    if (!entry.discovery) return admissionPhases.map((phase) => ({ step: entryStep(phase), version: entryVersion }));
    if (!handlers) return admissionPhases.map((phase) => ({ step: placeholder(phase), version: entryVersion }));
    return handlers.map((h) => {
      const match = h.match ?? entryMatch;
      const version = chooseReviewVersion(h.admissionReviewVersions ?? entry.admissionReviewVersions);
      const step = createProviderStep({
        ...common,
        ...placeEntry(entry, { match, handler: h }),
        phase: h.phase,
        path: h.path,
        apiVersion: reviewApiVersion(version),
      });
      return { step, version };
    });
  };

  const schedule = (ms: number) => {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(() => void runtime.discover(), ms);
    timer.unref();
  };

  // The authorize phase is called at the entry's URL; discovery does not apply to it.
  const authorizeSteps: AuthorizeStep[] =
    entry.phases.includes('authorize') && entry.authorizeMatch
      ? [
          createProviderAuthorizeStep({
            name: entry.name,
            order: entry.order,
            url,
            // A step that may not block (warn, audit) fails open here too.
            failurePolicy: effectiveFailurePolicy(entryPlacement),
            timeoutMs: entryPlacement.timeoutMs,
            matchSpec: entry.authorizeMatch,
            client,
            breaker,
          }),
        ]
      : [];

  const runtime: ProviderRuntime = {
    name: entry.name,
    entry,
    client,
    breaker,
    steps: () => steps,
    authorizeSteps: () => authorizeSteps,
    status: () => ({
      name: entry.name,
      ready: !entry.discovery || handlers !== undefined,
      discovered: entry.discovery ? handlers !== undefined : undefined,
      handlers: handlers ?? [],
      breaker: breaker.state(),
      versions,
      ...(lastError ? { lastError: lastError.message } : {}),
    }),
    async discover() {
      if (!entry.discovery || closed) return;
      try {
        const doc = await client.getJson(entry.discoveryPath, entryPlacement.timeoutMs, stopDiscovery.signal);
        const next = parseDiscovery(doc, entry.name, new URL(url).pathname);
        const changed = JSON.stringify(next) !== JSON.stringify(handlers) || lastError !== undefined;
        handlers = next;
        lastError = undefined;
        backoff = initialBackoff;
        if (changed) {
          deps.log.info(
            { provider: entry.name, handlers: next.map((h) => `${h.name}(${h.phase})`) },
            'provider discovered',
          );
          steps = build();
          deps.onChange(runtime);
        }
        schedule(refreshMs);
      } catch (err) {
        if (closed) return;
        const reason: FailureReason = err instanceof ProviderCallError ? err.reason : 'invalid_response';
        const message = errorMessage(err);
        const changed = lastError?.message !== message;
        lastError = { reason, message };
        deps.log.warn({ provider: entry.name, reason, err: message, retryInMs: backoff }, 'provider discovery failed');
        schedule(backoff);
        backoff = Math.min(backoff * 2, maxBackoff);
        if (changed) deps.onChange(runtime);
      }
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      stopDiscovery.abort();
      deprecation.close();
      breaker.shutdown();
      await client.close();
    },
  };
  steps = build();
  return runtime;
}
