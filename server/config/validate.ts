/**
 * Turns parsed YAML into a GatewayConfig: every field checked, every default applied in one place (a chain
 * entry's step options excepted: step-options.ts).
 * Errors name the file and the field path (exit code 2 at start).
 */
import { closestName, didYouMean } from '../base/did-you-mean.js';
import { REVIEW_VERSIONS } from '../protocol/versions.js';
import { readReviewVersions } from './review-versions.js';
import { DECLARATION_FIELDS } from './step-declarations.js';
import { STEP_FIELDS, readStepFields, type StepFieldsContext } from './entry-fields.js';
import type { AuthorizeMatch } from '../authorization/authorize-match.js';
import path from 'node:path';
import { DEFAULT_SERVICE, defaultSans } from '../../certs/generate.js';
import { DEFAULT_MAX_REQUEST_BYTES } from '../admission/codec.js';
import { CONNECTION_FIELDS, readConnectionBounds } from './connection-bounds.js';
import { readMatch } from './match-schema.js';
import { isDnsLabel, isDnsSubdomain } from './names.js';
import { Reader, childPath, urlForMessage } from './reader.js';
import { readTracing } from './tracing.js';
import { readPolicyParams } from './policy-params.js';
import { readExceptionsConfig } from './exceptions.js';
import { POLICY_FIELDS, readPolicySpec } from './policy-entry.js';
import { readNativePoliciesEntry } from './native-policies-entry.js';
import type {
  AuditConfig,
  ChainEntry,
  CircuitBreakerConfig,
  EntryCommon,
  GatewayConfig,
  KubeConfigSection,
  LargeReviewsConfig,
  LeaderElectionConfig,
  ExplainConfig,
  LogConfig,
  RecordConfig,
  ManagedCertificateConfig,
  OpsAuth,
  ProviderEntry,
  ProviderPhase,
  ServerConfig,
  ResolvedServiceReference,
} from './types.js';

export const CONFIG_API_VERSION = 'admissiongateway.io/v1alpha1';

export const CONFIG_KIND = 'GatewayConfig';

const ENTRY_FIELDS = ['name', 'match', 'settings', ...STEP_FIELDS];
/** A policy takes no settings and has no side effects; only one with `mutations` writes, and may say what. */
const NOT_FOR_POLICIES: readonly string[] = ['settings', 'sideEffects', 'reinvocationPolicy', ...DECLARATION_FIELDS];
const NOT_FOR_MUTATING_POLICIES: readonly string[] = ['settings', 'sideEffects'];
/** The key that makes a chain entry a plugin, a provider or a policy. */
const ENTRY_KINDS = ['plugin', 'provider', 'policy', 'admissionPolicies'];
const PROVIDER_FIELDS = [
  ...ENTRY_FIELDS,
  'provider',
  'url',
  'service',
  'phases',
  'caBundle',
  'clientCert',
  'circuitBreaker',
  'discovery',
  'discoveryPath',
  'admissionReviewVersions',
  'authorizeMatch',
];

/** Every relative path in the file resolves against the file's folder; `''` (none) stays `''`. */
function resolveFile(baseDir: string, file: string): string {
  return file === '' ? '' : path.resolve(baseDir, file);
}

function readServer(r: Reader, value: unknown, baseDir: string): ServerConfig {
  const p = 'server';
  const m = r.map(value, p, [
    'host',
    'port',
    'opsHost',
    'opsPort',
    'opsAuth',
    'healthHost',
    'healthPort',
    'tls',
    'maxRequestBytes',
    'maxInflightBytes',
    ...CONNECTION_FIELDS,
    'deadlineMarginMs',
    'defaultTimeoutSeconds',
    'shutdownTimeoutSeconds',
    'service',
    'largeReviews',
  ]);
  const tls = r.map(m.tls, `${p}.tls`, ['certFile', 'keyFile', 'clientCAFile', 'generate', 'dnsNames', 'ipAddresses']);
  const svc = r.map(m.service, `${p}.service`, ['name', 'namespace']);
  const service = {
    name: r.string(svc.name, `${p}.service.name`) ?? DEFAULT_SERVICE.name,
    namespace: r.string(svc.namespace, `${p}.service.namespace`) ?? DEFAULT_SERVICE.namespace,
  };
  const sans = defaultSans(service);
  const file = (key: string, fallback: string): string =>
    resolveFile(baseDir, r.string(tls[key], `${p}.tls.${key}`) ?? fallback);
  const port = r.integer(m.port, `${p}.port`, 0, 65535) ?? 8443;
  const opsPort = r.integer(m.opsPort, `${p}.opsPort`, 0, 65535) ?? 9090;
  if (port !== 0 && port === opsPort) r.fail(`${p}.opsPort`, `must differ from server.port (${port})`);
  const healthPort = r.integer(m.healthPort, `${p}.healthPort`, 0, 65535) ?? 8081;
  for (const [other, taken] of [
    ['port', port],
    ['opsPort', opsPort],
  ] as const) {
    if (healthPort !== 0 && healthPort === taken) {
      r.fail(`${p}.healthPort`, `must differ from server.${other} (${taken})`);
    }
  }
  const certFile = file('certFile', 'certs/tls.crt');
  const keyFile = file('keyFile', 'certs/tls.key');
  if (!certFile) r.fail(`${p}.tls.certFile`, 'is required');
  if (!keyFile) r.fail(`${p}.tls.keyFile`, 'is required');
  const defaultTimeoutSeconds = r.integer(m.defaultTimeoutSeconds, `${p}.defaultTimeoutSeconds`, 1, 30) ?? 10;
  const maxRequestBytes =
    r.integer(m.maxRequestBytes, `${p}.maxRequestBytes`, 1024, 64 * 1024 * 1024) ?? DEFAULT_MAX_REQUEST_BYTES;
  // A review weighs at least its body (more: http/byte-budget.ts); below that, none of the largest could be answered.
  const maxInflightBytes = r.integer(m.maxInflightBytes, `${p}.maxInflightBytes`, maxRequestBytes, 2 ** 40);
  const deadlineMarginMs = r.integer(m.deadlineMarginMs, `${p}.deadlineMarginMs`, 0, 5000) ?? 250;
  return {
    host: r.string(m.host, `${p}.host`) ?? '0.0.0.0',
    port,
    opsHost: r.string(m.opsHost, `${p}.opsHost`),
    opsPort,
    opsAuth: r.oneOf(m.opsAuth, `${p}.opsAuth`, OPS_AUTH),
    healthHost: r.string(m.healthHost, `${p}.healthHost`),
    healthPort,
    tls: {
      certFile,
      keyFile,
      clientCAFile: file('clientCAFile', ''),
      generate: r.boolean(tls.generate, `${p}.tls.generate`) ?? true,
      dnsNames: r.stringList(tls.dnsNames, `${p}.tls.dnsNames`) ?? sans.dnsNames,
      ipAddresses: r.stringList(tls.ipAddresses, `${p}.tls.ipAddresses`) ?? sans.ipAddresses,
    },
    maxRequestBytes,
    maxInflightBytes,
    ...readConnectionBounds(r, m, p),
    deadlineMarginMs,
    defaultTimeoutSeconds,
    shutdownTimeoutSeconds: r.integer(m.shutdownTimeoutSeconds, `${p}.shutdownTimeoutSeconds`, 1, 300) ?? 25,
    service,
    largeReviews: readLargeReviews(r, m.largeReviews, `${p}.largeReviews`),
  };
}

/** Defaults of `server.largeReviews` (docs/decisions.md, "Large reviews in worker threads"). */
export const DEFAULT_LARGE_REVIEWS: LargeReviewsConfig = {
  thresholdBytes: 64 * 1024,
  workers: 1,
  queue: 8,
  niceness: 10,
  youngGenerationMiB: 48,
};

function readLargeReviews(r: Reader, value: unknown, p: string): LargeReviewsConfig {
  const m = r.map(value, p, ['thresholdBytes', 'workers', 'queue', 'niceness', 'youngGenerationMiB']);
  const d = DEFAULT_LARGE_REVIEWS;
  return {
    thresholdBytes: r.integer(m.thresholdBytes, `${p}.thresholdBytes`, 1024, 64 * 1024 * 1024) ?? d.thresholdBytes,
    workers: r.integer(m.workers, `${p}.workers`, 0, 16) ?? d.workers,
    queue: r.integer(m.queue, `${p}.queue`, 0, 1024) ?? d.queue,
    niceness: r.integer(m.niceness, `${p}.niceness`, 0, 19) ?? d.niceness,
    youngGenerationMiB: r.integer(m.youngGenerationMiB, `${p}.youngGenerationMiB`, 0, 1024) ?? d.youngGenerationMiB,
  };
}

function readKube(r: Reader, value: unknown, serviceNamespace: string, baseDir: string): KubeConfigSection {
  const m = r.map(value, 'kube', [
    'enabled',
    'watchProviders',
    'kubeconfig',
    'certificate',
    'leaderElection',
    'policyParams',
  ]);
  let enabled: KubeConfigSection['enabled'] = 'auto';
  if (m.enabled !== undefined && m.enabled !== 'auto') {
    enabled = r.boolean(m.enabled, 'kube.enabled') ?? 'auto';
  }
  const certificate = readManagedCertificate(r, m.certificate, serviceNamespace);
  if (certificate.secretName && enabled === false) {
    r.fail('kube.certificate.secretName', 'needs cluster mode, but kube.enabled is false');
  }
  return {
    enabled,
    watchProviders: r.boolean(m.watchProviders, 'kube.watchProviders') ?? true,
    kubeconfig: resolveFile(baseDir, r.string(m.kubeconfig, 'kube.kubeconfig') ?? ''),
    certificate,
    leaderElection: readLeaderElection(r, m.leaderElection, serviceNamespace),
    policyParams: readPolicyParams(r, m.policyParams),
  };
}

/**
 * client-go's leaderelection rules (NewLeaderElector): the leader gives up before others may take over
 * (renewDeadline < leaseDuration), and a renewal can be tried more than once before its deadline
 * (renewDeadline > 1.2 × retryPeriod, the jitter factor). Unset, the timings scale from leaseDuration as
 * kube-controller-manager's 15/10/2 do.
 */
function readLeaderElection(r: Reader, value: unknown, serviceNamespace: string): LeaderElectionConfig {
  const p = 'kube.leaderElection';
  const m = r.map(value, p, [
    'leaseName',
    'leaseNamespace',
    'leaseDurationSeconds',
    'renewDeadlineSeconds',
    'retryPeriodSeconds',
  ]);
  const leaseName = r.string(m.leaseName, `${p}.leaseName`) ?? 'admission-gateway';
  if (!isDnsSubdomain(leaseName)) r.fail(`${p}.leaseName`, 'expected a DNS subdomain name', leaseName);
  const leaseNamespace = r.string(m.leaseNamespace, `${p}.leaseNamespace`) ?? serviceNamespace;
  if (!isDnsLabel(leaseNamespace)) r.fail(`${p}.leaseNamespace`, 'expected a namespace name', leaseNamespace);
  // The Lease stores it as an integer.
  const leaseDurationSeconds = r.integer(m.leaseDurationSeconds, `${p}.leaseDurationSeconds`, 1, 3600) ?? 15;
  const renewDeadlineSeconds =
    r.number(m.renewDeadlineSeconds, `${p}.renewDeadlineSeconds`, 0.1, 3600) ?? (leaseDurationSeconds * 2) / 3;
  if (renewDeadlineSeconds >= leaseDurationSeconds) {
    r.fail(
      `${p}.renewDeadlineSeconds`,
      `must be less than leaseDurationSeconds (${leaseDurationSeconds})`,
      renewDeadlineSeconds,
    );
  }
  const retryPeriodSeconds =
    r.number(m.retryPeriodSeconds, `${p}.retryPeriodSeconds`, MIN_RETRY_PERIOD_SECONDS, 600) ??
    Math.max(MIN_RETRY_PERIOD_SECONDS, renewDeadlineSeconds / 5);
  if (renewDeadlineSeconds <= RETRY_JITTER * retryPeriodSeconds) {
    r.fail(
      `${p}.renewDeadlineSeconds`,
      `must exceed ${RETRY_JITTER} × retryPeriodSeconds (${RETRY_JITTER * retryPeriodSeconds})`,
      renewDeadlineSeconds,
    );
  }
  return { leaseName, leaseNamespace, leaseDurationSeconds, renewDeadlineSeconds, retryPeriodSeconds };
}

/** Every replica reads the Lease once per retry period: no shorter, so a large Deployment stays a light load. */
const MIN_RETRY_PERIOD_SECONDS = 0.2;
/** client-go's JitterFactor: a try waits between one and 1 + this many retry periods. */
export const RETRY_JITTER = 1.2;

const OPS_AUTH: readonly OpsAuth[] = ['kube', 'none'];

const YEAR_SECONDS = 365 * 24 * 60 * 60;

function readManagedCertificate(r: Reader, value: unknown, serviceNamespace: string): ManagedCertificateConfig {
  const p = 'kube.certificate';
  const m = r.map(value, p, [
    'secretName',
    'secretNamespace',
    'mutatingWebhookConfigurations',
    'validatingWebhookConfigurations',
    'caValiditySeconds',
    'certValiditySeconds',
    'caRenewBeforeSeconds',
    'certRenewBeforeSeconds',
    'propagationSeconds',
    'overlapSeconds',
    'resyncSeconds',
  ]);
  const name = (v: unknown, field: string): string => {
    const s = r.string(v, field) ?? '';
    if (s !== '' && !isDnsSubdomain(s)) r.fail(field, 'expected a DNS subdomain name', s);
    return s;
  };
  const names = (v: unknown, field: string): string[] => {
    const list = r.stringList(v, field) ?? ['admission-gateway'];
    list.forEach((item, i) => {
      if (item === '') r.fail(`${field}[${i}]`, 'is required (a non-empty string)');
      name(item, `${field}[${i}]`);
    });
    return list;
  };
  const secretName = name(m.secretName, `${p}.secretName`);
  const secretNamespace = name(m.secretNamespace, `${p}.secretNamespace`) || serviceNamespace;
  const caValiditySeconds =
    r.integer(m.caValiditySeconds, `${p}.caValiditySeconds`, 10, 100 * YEAR_SECONDS) ?? 5 * YEAR_SECONDS;
  const certValiditySeconds =
    r.integer(m.certValiditySeconds, `${p}.certValiditySeconds`, 10, 100 * YEAR_SECONDS) ??
    Math.min(YEAR_SECONDS, caValiditySeconds);
  if (certValiditySeconds > caValiditySeconds) {
    r.fail(`${p}.certValiditySeconds`, `must not exceed caValiditySeconds (${caValiditySeconds})`, certValiditySeconds);
  }
  const caRenewBeforeSeconds =
    r.integer(m.caRenewBeforeSeconds, `${p}.caRenewBeforeSeconds`, 1, caValiditySeconds - 1) ??
    Math.floor(caValiditySeconds / 3);
  const certRenewBeforeSeconds =
    r.integer(m.certRenewBeforeSeconds, `${p}.certRenewBeforeSeconds`, 1, certValiditySeconds - 1) ??
    Math.floor(certValiditySeconds / 3);
  const propagationSeconds = r.number(m.propagationSeconds, `${p}.propagationSeconds`, 0, 86_400) ?? 60;
  const overlapSeconds = r.number(m.overlapSeconds, `${p}.overlapSeconds`, 0, 30 * 86_400) ?? 900;
  const resyncSeconds = r.number(m.resyncSeconds, `${p}.resyncSeconds`, 0.1, 86_400) ?? 30;
  // A rotation must be able to finish before the old CA (and the certificates it signed) expires.
  if (caRenewBeforeSeconds <= propagationSeconds + resyncSeconds) {
    r.fail(
      `${p}.caRenewBeforeSeconds`,
      `must exceed propagationSeconds + resyncSeconds (${propagationSeconds + resyncSeconds})`,
      caRenewBeforeSeconds,
    );
  }
  // A replica whose watch is down learns of the new certificate at its next resync: keep the old CA until then.
  if (overlapSeconds < resyncSeconds) {
    r.fail(`${p}.overlapSeconds`, `must be at least resyncSeconds (${resyncSeconds})`, overlapSeconds);
  }
  return {
    secretName,
    secretNamespace,
    mutatingWebhookConfigurations: names(m.mutatingWebhookConfigurations, `${p}.mutatingWebhookConfigurations`),
    validatingWebhookConfigurations: names(m.validatingWebhookConfigurations, `${p}.validatingWebhookConfigurations`),
    caValiditySeconds,
    certValiditySeconds,
    caRenewBeforeSeconds,
    certRenewBeforeSeconds,
    propagationSeconds,
    overlapSeconds,
    resyncSeconds,
  };
}

const WEEK_SECONDS = 7 * 86_400;

function readAudit(r: Reader, value: unknown): AuditConfig {
  const p = 'audit';
  const m = r.map(value, p, [
    'intervalSeconds',
    'timeoutSeconds',
    'maxObjectsPerResource',
    'maxObjects',
    'concurrency',
    'maxResultsPerReport',
  ]);
  const intervalSeconds = r.integer(m.intervalSeconds, `${p}.intervalSeconds`, 0, WEEK_SECONDS) ?? 0;
  const timeoutSeconds = r.integer(m.timeoutSeconds, `${p}.timeoutSeconds`, 1, 86_400) ?? 300;
  const maxObjects = r.integer(m.maxObjects, `${p}.maxObjects`, 1, 1_000_000) ?? 20_000;
  return {
    intervalSeconds,
    timeoutSeconds,
    maxObjectsPerResource:
      r.integer(m.maxObjectsPerResource, `${p}.maxObjectsPerResource`, 1, 1_000_000) ?? Math.min(5000, maxObjects),
    maxObjects,
    concurrency: r.integer(m.concurrency, `${p}.concurrency`, 1, 64) ?? 4,
    // A result is under about 1 KiB (server/audit/reports.ts): 1500 stay within etcd's 1.5 MiB per object.
    maxResultsPerReport: r.integer(m.maxResultsPerReport, `${p}.maxResultsPerReport`, 1, 1500) ?? 1000,
  };
}

function readLog(r: Reader, value: unknown): LogConfig {
  const m = r.map(value, 'log', ['level']);
  return { level: r.oneOf(m.level, 'log.level', ['debug', 'info', 'warn', 'error', 'silent'] as const) ?? 'info' };
}

/** Traces kept at most: each is a few kilobytes without object content. */
const MAX_EXPLAIN_BUFFER = 100_000;
/** What the kept decision traces hold together when `explain.maxBytes` is not set. */
export const DEFAULT_EXPLAIN_BYTES = 8 * 1024 * 1024;

function readExplain(r: Reader, value: unknown): ExplainConfig {
  const m = r.map(value, 'explain', ['bufferSize', 'maxBytes', 'keep', 'includeObjects', 'auditAnnotation']);
  return {
    bufferSize: r.integer(m.bufferSize, 'explain.bufferSize', 0, MAX_EXPLAIN_BUFFER) ?? 1000,
    maxBytes: r.integer(m.maxBytes, 'explain.maxBytes', 1024 * 1024, 2 ** 32) ?? DEFAULT_EXPLAIN_BYTES,
    keep: r.oneOf(m.keep, 'explain.keep', ['notable', 'all'] as const) ?? 'notable',
    includeObjects: r.boolean(m.includeObjects, 'explain.includeObjects') ?? false,
    auditAnnotation: r.boolean(m.auditAnnotation, 'explain.auditAnnotation') ?? true,
  };
}

/** Redaction pointers and recorded routes at most: far more than any policy needs. */
const MAX_RECORD_LIST = 256;
/** The recording's size when `record.maxFileBytes` is not set. */
export const DEFAULT_RECORD_FILE_BYTES = 256 * 1024 * 1024;
/** The routes `record.routes` may name (http/routes.ts; config/ does not import http/). */
const RECORD_ROUTES = ['mutate', 'mutate/fail', 'mutate/ignore', 'validate', 'validate/fail', 'validate/ignore'];

function readRecord(r: Reader, value: unknown, baseDir: string): RecordConfig {
  const p = 'record';
  const m = r.map(value, p, ['path', 'sampleRate', 'redact', 'maxFileBytes', 'routes']);
  const sampleRate = r.number(m.sampleRate, `${p}.sampleRate`, 0, 1) ?? 0;
  const file = resolveFile(baseDir, r.string(m.path, `${p}.path`) ?? '');
  if (sampleRate > 0 && !file) r.fail(`${p}.path`, 'is required when record.sampleRate is above 0');
  const redact = r.stringList(m.redact, `${p}.redact`) ?? [];
  if (redact.length > MAX_RECORD_LIST)
    r.fail(`${p}.redact`, `expected at most ${MAX_RECORD_LIST} entries`, redact.length);
  redact.forEach((pointer, i) => {
    if (!pointer.startsWith('/') || pointer.length > 1024) {
      r.fail(
        `${p}.redact[${i}]`,
        'expected a JSON pointer such as /spec/password (a * segment matches any key)',
        pointer,
      );
    }
  });
  const routes = r.stringList(m.routes, `${p}.routes`) ?? RECORD_ROUTES;
  routes.forEach((route, i) => r.oneOf(route, `${p}.routes[${i}]`, RECORD_ROUTES));
  return {
    path: file,
    sampleRate,
    redact,
    maxFileBytes: r.integer(m.maxFileBytes, `${p}.maxFileBytes`, 1024, 2 ** 40) ?? DEFAULT_RECORD_FILE_BYTES,
    routes: [...new Set(routes)],
  };
}

function readEntryCommon(
  r: Reader,
  m: Record<string, unknown>,
  p: string,
  name: string,
  order: number,
  context: StepFieldsContext = {},
): EntryCommon {
  const stepName = r.string(m.name, childPath(p, 'name')) ?? name;
  // Step names become metric labels, annotation keys and URL-safe identifiers.
  if (!isDnsLabel(stepName)) {
    r.fail(
      m.name === undefined ? p : childPath(p, 'name'),
      'expected a lower-case DNS-1123 label as the step name',
      stepName,
    );
  }
  const match = readMatch(r, m.match, childPath(p, 'match'));
  return {
    name: stepName,
    order,
    path: p,
    ...(match ? { match } : {}),
    ...readStepFields(r, m, p, context),
    ...(m.settings !== undefined ? { settings: m.settings } : {}),
  };
}

/** An https URL without query or fragment, as the apiserver requires of a webhook clientConfig.url. */
export function readWebhookUrl(r: Reader, value: unknown, p: string): string {
  const raw = r.requiredString(value, p);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return r.fail(p, 'expected an absolute https:// URL', urlForMessage(raw));
  }
  if (url.protocol !== 'https:') r.fail(p, 'expected an https:// URL', urlForMessage(raw));
  if (url.search || url.hash || raw.includes('?') || raw.includes('#'))
    r.fail(p, 'must not have a query or fragment', urlForMessage(raw));
  if (url.username || url.password) r.fail(p, 'must not carry credentials', urlForMessage(raw));
  return raw;
}

export function readCircuitBreaker(r: Reader, value: unknown, p: string): CircuitBreakerConfig {
  const m = r.map(value, p, [
    'errorThresholdPercentage',
    'volumeThreshold',
    'resetTimeoutSeconds',
    'rollingWindowSeconds',
  ]);
  return {
    errorThresholdPercentage: r.number(m.errorThresholdPercentage, `${p}.errorThresholdPercentage`, 1, 100) ?? 50,
    volumeThreshold: r.integer(m.volumeThreshold, `${p}.volumeThreshold`, 1, 10_000) ?? 5,
    resetTimeoutMs: (r.number(m.resetTimeoutSeconds, `${p}.resetTimeoutSeconds`, 0.01, 3600) ?? 30) * 1000,
    rollingWindowMs: (r.number(m.rollingWindowSeconds, `${p}.rollingWindowSeconds`, 0.1, 3600) ?? 10) * 1000,
  };
}

function readService(r: Reader, value: unknown, p: string): ResolvedServiceReference {
  const m = r.map(value, p, ['namespace', 'name', 'port', 'path'], false);
  const servicePath = r.string(m.path, `${p}.path`) ?? '/';
  if (!servicePath.startsWith('/') || servicePath.includes('?') || servicePath.includes('#')) {
    r.fail(`${p}.path`, 'expected an absolute path without query or fragment', servicePath);
  }
  return {
    namespace: r.requiredString(m.namespace, `${p}.namespace`),
    name: r.requiredString(m.name, `${p}.name`),
    port: r.integer(m.port, `${p}.port`, 1, 65535) ?? 443,
    path: servicePath,
  };
}

const PROVIDER_PHASES = ['mutate', 'validate', 'authorize'] as const;
const AUTHORIZE_MATCH_FIELDS = ['verbs', 'apiGroups', 'resources', 'namespaces', 'nonResourceURLs'] as const;
/** Entries in one list of an authorizeMatch: far more than any rule needs. */
const MAX_AUTHORIZE_MATCH_ITEMS = 256;

/** An authorize step's match, written as an RBAC rule (authorization/authorize-match.ts). */
export function readAuthorizeMatch(r: Reader, value: unknown, p: string): AuthorizeMatch | undefined {
  if (value === undefined || value === null) return undefined;
  const m = r.map(value, p, [...AUTHORIZE_MATCH_FIELDS]);
  const match: Record<string, readonly string[]> = {};
  for (const field of AUTHORIZE_MATCH_FIELDS) {
    const list = r.stringList(m[field], `${p}.${field}`);
    if (list === undefined) continue;
    if (list.length > MAX_AUTHORIZE_MATCH_ITEMS) {
      r.fail(`${p}.${field}`, `expected at most ${MAX_AUTHORIZE_MATCH_ITEMS} entries`, list.length);
    }
    match[field] = [...new Set(list)];
  }
  if (!match.resources && !match.nonResourceURLs) r.fail(p, 'expected resources and/or nonResourceURLs');
  return match;
}

/** Fields of a remote provider, shared by gateway.yaml entries and AdmissionProvider specs. */
export function readProviderFields(
  r: Reader,
  m: Record<string, unknown>,
  p: string,
): Omit<ProviderEntry, keyof EntryCommon | 'kind' | 'provider'> {
  if ((m.url === undefined) === (m.service === undefined)) r.fail(p, 'expected exactly one of url or service');
  const phases = r.stringList(m.phases, `${p}.phases`) ?? ['mutate', 'validate'];
  if (phases.length === 0) r.fail(`${p}.phases`, 'expected mutate, validate and/or authorize');
  phases.forEach((phase, i) => r.oneOf(phase, `${p}.phases[${i}]`, PROVIDER_PHASES));
  const authorizeMatch = readAuthorizeMatch(r, m.authorizeMatch, `${p}.authorizeMatch`);
  if (phases.includes('authorize') && !authorizeMatch) {
    r.fail(`${p}.authorizeMatch`, 'expected the requests the authorize phase sees (verbs, apiGroups, resources, …)');
  }
  const clientCert =
    m.clientCert === undefined ? undefined : r.map(m.clientCert, `${p}.clientCert`, ['certFile', 'keyFile']);
  const versions = readReviewVersions(r, m.admissionReviewVersions, `${p}.admissionReviewVersions`) ?? REVIEW_VERSIONS;
  const caBundle = r.string(m.caBundle, `${p}.caBundle`);
  if (caBundle !== undefined && !/^[A-Za-z0-9+/=\s]*$/.test(caBundle))
    r.fail(`${p}.caBundle`, 'expected base64-encoded PEM');
  const discoveryPath = r.string(m.discoveryPath, `${p}.discoveryPath`) ?? 'discovery';
  return {
    ...(m.url !== undefined ? { url: readWebhookUrl(r, m.url, `${p}.url`) } : {}),
    ...(m.service !== undefined ? { service: readService(r, m.service, `${p}.service`) } : {}),
    phases: [...new Set(phases as ProviderPhase[])],
    ...(authorizeMatch ? { authorizeMatch } : {}),
    ...(caBundle ? { caBundle: caBundle.replace(/\s+/g, '') } : {}),
    ...(clientCert
      ? {
          clientCert: {
            certFile: r.requiredString(clientCert.certFile, `${p}.clientCert.certFile`),
            keyFile: r.requiredString(clientCert.keyFile, `${p}.clientCert.keyFile`),
          },
        }
      : {}),
    circuitBreaker: readCircuitBreaker(r, m.circuitBreaker, `${p}.circuitBreaker`),
    discovery: r.boolean(m.discovery, `${p}.discovery`) ?? false,
    discoveryPath,
    admissionReviewVersions: versions,
  };
}

function readEntry(r: Reader, value: unknown, index: number, baseDir: string): ChainEntry {
  const p = `chain[${index}]`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) r.fail(p, 'expected a map', value);
  const raw = value as Record<string, unknown>;
  const order = 10 * (index + 1);
  const kinds = ENTRY_KINDS.filter((kind) => raw[kind] !== undefined);
  if (kinds.length !== 1) {
    // With none, a misspelt `plugin:`, `provider:` or `policy:` is the likely cause: name it.
    const misspelt =
      kinds.length === 0
        ? Object.keys(raw).find(
            (key) => !PROVIDER_FIELDS.includes(key) && !POLICY_FIELDS.includes(key) && closestName(key, ENTRY_KINDS),
          )
        : undefined;
    if (misspelt !== undefined) r.fail(childPath(p, misspelt), `unknown field${didYouMean(misspelt, ENTRY_KINDS)}`);
    r.fail(
      p,
      'expected exactly one of plugin (an in-process plugin name), provider (a remote provider name), policy (a policy written in CEL) or admissionPolicies (ValidatingAdmissionPolicies from files)',
    );
  }
  if (raw.admissionPolicies !== undefined) return readNativePoliciesEntry(r, raw, p, order, baseDir);
  if (raw.policy !== undefined) {
    const notFor = raw.mutations === undefined ? NOT_FOR_POLICIES : NOT_FOR_MUTATING_POLICIES;
    const m = r.map(raw, p, [...POLICY_FIELDS, ...ENTRY_FIELDS.filter((f) => !notFor.includes(f))]);
    const policy = r.requiredString(m.policy, `${p}.policy`);
    if (m.match === undefined) r.fail(`${p}.match`, 'is required (the requests the policy is for)');
    return { kind: 'policy', policy, ...readEntryCommon(r, m, p, policy, order), spec: readPolicySpec(r, m, p) };
  }
  if (raw.plugin !== undefined) {
    const m = r.map(raw, p, ['plugin', ...ENTRY_FIELDS]);
    const plugin = r.requiredString(m.plugin, `${p}.plugin`);
    return { kind: 'plugin', plugin, ...readEntryCommon(r, m, p, plugin, order) };
  }
  const m = r.map(raw, p, PROVIDER_FIELDS);
  const provider = r.requiredString(m.provider, `${p}.provider`);
  if (m.settings !== undefined) r.stringMap(m.settings, `${p}.settings`);
  const fields = readProviderFields(r, m, p);
  const { clientCert } = fields;
  return {
    kind: 'provider',
    provider,
    ...readEntryCommon(r, m, p, provider, order, { phases: fields.phases }),
    ...fields,
    ...(clientCert
      ? {
          clientCert: {
            certFile: resolveFile(baseDir, clientCert.certFile),
            keyFile: resolveFile(baseDir, clientCert.keyFile),
          },
        }
      : {}),
  };
}

/** The fields of gateway.yaml's top level (docs/configuration.md has a section for each but the first two). */
export const TOP_LEVEL_FIELDS = [
  'apiVersion',
  'kind',
  'server',
  'kube',
  'log',
  'explain',
  'record',
  'chain',
  'audit',
  'tracing',
  'exceptions',
] as const;

/** Validates a parsed config document; relative file paths resolve against `baseDir`. */
export function validateConfig(doc: unknown, file: string, baseDir: string): GatewayConfig {
  const r = new Reader(file);
  const m = r.map(doc, '', TOP_LEVEL_FIELDS);
  if (m.apiVersion !== undefined && m.apiVersion !== CONFIG_API_VERSION) {
    r.fail('apiVersion', `expected ${CONFIG_API_VERSION}`, m.apiVersion);
  }
  if (m.kind !== undefined && m.kind !== CONFIG_KIND) r.fail('kind', `expected ${CONFIG_KIND}`, m.kind);
  const chain = (r.list(m.chain, 'chain') ?? []).map((entry, i) => readEntry(r, entry, i, baseDir));
  const names = new Map<string, string>();
  for (const entry of chain) {
    const earlier = names.get(entry.name);
    if (earlier)
      r.fail(
        entry.path,
        `step name "${entry.name}" is already used by ${earlier}; set a distinct name: on one of them`,
      );
    names.set(entry.name, entry.path);
  }
  const server = readServer(r, m.server, baseDir);
  const kube = readKube(r, m.kube, server.service.namespace, baseDir);
  // The apiserver is who checks callers: without a cluster there is nobody to ask.
  if (server.opsAuth === 'kube' && kube.enabled === false) {
    r.fail('server.opsAuth', 'kube needs cluster mode, but kube.enabled is false');
  }
  const tracing = readTracing(r, m.tracing, 'tracing');
  return {
    file,
    server,
    kube,
    log: readLog(r, m.log),
    explain: readExplain(r, m.explain),
    record: readRecord(r, m.record, baseDir),
    chain,
    audit: readAudit(r, m.audit),
    ...(tracing ? { tracing } : {}),
    exceptions: readExceptionsConfig(r, m.exceptions, 'exceptions', baseDir),
  };
}
