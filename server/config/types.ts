/**
 * The validated configuration (gateway.yaml; docs/configuration.md), with every default applied but a chain
 * entry's step options: absent, those fall back to the plugin's own defaults when its steps are built.
 */
import type { ReviewVersion } from '../protocol/versions.js';
import type { Match } from '../admission/types.js';
import type { LogLevel } from '../base/log.js';
import type { LocateField } from './field-positions.js';
import type { StepFields } from './entry-fields.js';
import type { AuthorizeMatch } from '../authorization/authorize-match.js';
import type { PolicySpec } from '../policy/policy-spec.js';
import type { ExceptionsConfig } from './exceptions.js';

export interface TlsConfig {
  /** Serving certificate (PEM). Default `certs/tls.crt`, relative to the config file. */
  readonly certFile: string;
  /** Serving key (PEM). Default `certs/tls.key`. */
  readonly keyFile: string;
  /** When set, clients must present a certificate signed by this CA (mTLS from the apiserver). */
  readonly clientCAFile: string;
  /** Generate a CA and serving certificate next to certFile when both files are missing. Default true. */
  readonly generate: boolean;
  /** SANs for a generated certificate. Default: the Service DNS names, localhost, 127.0.0.1, ::1. */
  readonly dnsNames: readonly string[];
  readonly ipAddresses: readonly string[];
}

/**
 * How many connections a server keeps and how fast a request must arrive (server's fields in gateway.yaml, the
 * provider SDK's options of the same names).
 */
export interface ConnectionBounds {
  /** Open connections; more are closed on accept. Default 512. */
  readonly maxConnections: number;
  /** Time for a client to complete its TLS handshake and send a request's headers. Default 10 s. */
  readonly headersTimeoutSeconds: number;
  /** Time for a client to send a whole request, body included. Default 30 s. */
  readonly requestTimeoutSeconds: number;
  /**
   * Time for a request's body to arrive, once its headers have: one second more for every
   * minBodyBytesPerSecond bytes received. Default 10 s.
   */
  readonly bodyTimeoutSeconds: number;
  /** See bodyTimeoutSeconds. Default 64 KiB. */
  readonly minBodyBytesPerSecond: number;
}

/**
 * Who may read the ops port: `kube` — HTTPS, and every request carries a bearer token the apiserver authenticates
 * (TokenReview) and authorizes on the request's path (SubjectAccessReview); `none` — plain HTTP, anyone who reaches
 * the port.
 */
export type OpsAuth = 'kube' | 'none';

export interface ServerConfig extends ConnectionBounds {
  /** Webhook (HTTPS) listen address. Default 0.0.0.0:8443. */
  readonly host: string;
  readonly port: number;
  /**
   * Operations (plain HTTP: /metrics, /chain, /openapi/v3, /explain) listen address; undefined (the default):
   * every address (0.0.0.0) in cluster mode, 127.0.0.1 without a cluster.
   */
  readonly opsHost: string | undefined;
  /** Default 9090. */
  readonly opsPort: number;
  /** Undefined (the default): `kube` in cluster mode, `none` without a cluster (where ops binds 127.0.0.1). */
  readonly opsAuth: OpsAuth | undefined;
  /** Probes (plain HTTP: /healthz, /readyz only) listen address; undefined: by mode, as opsHost. */
  readonly healthHost: string | undefined;
  /** Default 8081. */
  readonly healthPort: number;
  readonly tls: TlsConfig;
  /** Largest accepted request body. Default 7 MiB. */
  readonly maxRequestBytes: number;
  /**
   * Bytes of reviews held at once (bodies, then answers); past it reviews are answered 429 unread.
   * Undefined: derived at start from the memory the process may use (see http/memory-limit.ts).
   */
  readonly maxInflightBytes: number | undefined;
  /** Kept back from the apiserver's `?timeout` so the answer arrives in time. Default 250 ms. */
  readonly deadlineMarginMs: number;
  /** Budget when a request carries no `?timeout`. Default 10 s (the apiserver's default). */
  readonly defaultTimeoutSeconds: number;
  /** Longest graceful shutdown before in-flight requests are abandoned. Default 25 s. */
  readonly shutdownTimeoutSeconds: number;
  /** Reviews whose body is this large run in worker threads, off the event loop (server/lane/). */
  readonly largeReviews: LargeReviewsConfig;
  /** The Service the gateway is reached through (SANs, rendered manifests). */
  readonly service: { readonly name: string; readonly namespace: string };
}

/** `server.largeReviews`: the lane of worker threads that large reviews run in. */
export interface LargeReviewsConfig {
  /** A review whose body has more bytes than this runs in a worker. Default 64 KiB. */
  readonly thresholdBytes: number;
  /** Worker threads at most, started when the first large review comes; 0: no lane. Default 1. */
  readonly workers: number;
  /** Large reviews waiting for a worker at most; past them a large review is answered 429. Default 8. */
  readonly queue: number;
  /** The workers' niceness (Linux): 0–19, higher yields the core to the event loop sooner. Default 10. */
  readonly niceness: number;
  /** The young generation of each worker's heap, MiB; 0 leaves it to V8. Default 48. */
  readonly youngGenerationMiB: number;
}

export interface KubeConfigSection {
  /** `auto` = on when a kubeconfig or in-cluster service account exists. */
  readonly enabled: 'auto' | boolean;
  readonly watchProviders: boolean;
  /** Explicit kubeconfig path; default: KUBECONFIG, ~/.kube/config, then the in-cluster service account. */
  readonly kubeconfig: string;
  /** The serving certificate kept in a Secret and rotated by the gateway (cluster mode only). */
  readonly certificate: ManagedCertificateConfig;
  /** The Lease whose holder does what one replica does for all (cluster mode, with such work configured). */
  readonly leaderElection: LeaderElectionConfig;
  /** What the watches of `fromCluster` entries' params may hold (server/kube/param-bounds.ts). */
  readonly policyParams: PolicyParamsConfig;
}

/**
 * `kube.policyParams`: bounds on the params `admissionPolicies` entries with `fromCluster: true` watch, since
 * whoever may create objects of a paramKind chooses how many match a paramRef's selector.
 */
export interface PolicyParamsConfig {
  /** Objects one paramRef's watch may hold. Default 256. */
  readonly maxObjects: number;
  /** Bytes (as JSON) one paramRef's watch may hold. Default 4 MiB. */
  readonly maxBytes: number;
  /** Objects all params watches of the process may hold together. Default 2048. */
  readonly maxTotalObjects: number;
  /** Bytes all params watches of the process may hold together. Default 8 MiB. */
  readonly maxTotalBytes: number;
}

/**
 * `kube.leaderElection`: the replicas elect one leader with a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection does; the leader alone runs the periodic audit.
 */
export interface LeaderElectionConfig {
  /** Default `admission-gateway`. */
  readonly leaseName: string;
  /** Default server.service.namespace. */
  readonly leaseNamespace: string;
  /** How long others wait after the leader's last renewal they saw before taking the Lease over. Default 15. */
  readonly leaseDurationSeconds: number;
  /** The leader stops leading when it could not renew for this long. Default 10. */
  readonly renewDeadlineSeconds: number;
  /** Time between two tries (to acquire, to renew). Default 2. */
  readonly retryPeriodSeconds: number;
}

/** `kube.certificate`: the gateway keeps its serving certificate in a Secret (instead of server.tls files). */
export interface ManagedCertificateConfig {
  /** The Secret (type kubernetes.io/tls). `''` (default) = off: server.tls files as in standalone mode. */
  readonly secretName: string;
  /** Default server.service.namespace. */
  readonly secretNamespace: string;
  /** Webhook configurations whose every webhook gets the CA bundle as caBundle. Default [admission-gateway]. */
  readonly mutatingWebhookConfigurations: readonly string[];
  readonly validatingWebhookConfigurations: readonly string[];
  /** CA lifetime. Default 5 years. */
  readonly caValiditySeconds: number;
  /** Serving certificate lifetime (never past its CA's). Default 1 year. */
  readonly certValiditySeconds: number;
  /** Start a CA rotation this long before the CA expires. Default a third of caValiditySeconds. */
  readonly caRenewBeforeSeconds: number;
  /** Reissue the serving certificate this long before it expires. Default a third of certValiditySeconds. */
  readonly certRenewBeforeSeconds: number;
  /** Wait after the webhooks carry a new bundle before serving from the new CA. Default 60. */
  readonly propagationSeconds: number;
  /** Keep trusting the old CA this long after the switch. Default 900. */
  readonly overlapSeconds: number;
  /** Re-read the Secret and re-check the webhooks' caBundle this often (repairs drift). Default 30. */
  readonly resyncSeconds: number;
}

/** `audit`: `admission-gateway audit` and its periodic run in cluster mode (README "Auditing existing objects"). */
export interface AuditConfig {
  /** Cluster mode runs the audit this often, the first run one interval after start. 0 (default) = off. */
  readonly intervalSeconds: number;
  /** One audit run gives up after this long and says so in its summary. Default 300. */
  readonly timeoutSeconds: number;
  /** Objects listed of one resource, at most. Default 5000. */
  readonly maxObjectsPerResource: number;
  /** Objects audited in one run, at most. Default 20000. */
  readonly maxObjects: number;
  /** Objects reviewed at once. Default 4. */
  readonly concurrency: number;
  /** Results one PolicyReport carries, at most (its summary still counts all). Default 1000. */
  readonly maxResultsPerReport: number;
}

export interface LogConfig {
  readonly level: LogLevel;
}

/** OpenTelemetry tracing (README "Tracing"): on only with an `otlpEndpoint`. */
export interface TracingConfig {
  /** Where spans are POSTed as OTLP/HTTP (JSON), the whole URL: `http://collector:4318/v1/traces`. */
  readonly otlpEndpoint: string;
  /** The `service.name` of the spans' resource. Default `admission-gateway`. */
  readonly serviceName: string;
  /** The share of new traces recorded (0 to 1); a caller's sampled flag decides for a trace it continues. Default 1. */
  readonly sampleRatio: number;
  /** Headers sent with each export (a collector's credentials). */
  readonly headers: Readonly<Record<string, string>>;
  readonly compression: 'none' | 'gzip';
  /** One export's time, after which it is given up. Default 10 s. */
  readonly exportTimeoutMs: number;
  /** How long ended spans wait to be exported together. Default 5 s. */
  readonly exportDelayMs: number;
  /** Ended spans held for export; beyond it new ones are dropped. Default 2048. */
  readonly maxQueueSize: number;
  /** Spans per export. Default 512. */
  readonly maxExportBatchSize: number;
}

/** Options every chain entry accepts (absent step options: the plugin's default, then the gateway's). */
export interface EntryCommon extends StepFields {
  /** Step name; defaults to the plugin or provider name. Needed to run one plugin twice. */
  readonly name: string;
  readonly match?: Match;
  readonly settings?: unknown;
  /** Where the entry sits: 10 × its position in `chain` (dynamic providers use spec.order). */
  readonly order: number;
  /** Field path of the entry, for error messages. */
  readonly path: string;
}

export type { Attach } from './attachment.js';

export interface PluginEntry extends EntryCommon {
  readonly kind: 'plugin';
  readonly plugin: string;
}

export interface CircuitBreakerConfig {
  /** Failure percentage over the rolling window that opens the breaker. Default 50. */
  readonly errorThresholdPercentage: number;
  /** Calls in the window before the breaker may open. Default 5. */
  readonly volumeThreshold: number;
  /** Time open before a half-open probe. Default 30 s. */
  readonly resetTimeoutMs: number;
  /** Rolling statistics window. Default 10 s. */
  readonly rollingWindowMs: number;
}

/** A provider's Service as the gateway calls it, port and path resolved (provider-sdk's is as written). */
export interface ResolvedServiceReference {
  readonly namespace: string;
  readonly name: string;
  readonly port: number;
  readonly path: string;
}

/** What a remote provider is called for: the admission phases, and the authorize chain (POST /authorize). */
export type ProviderPhase = 'mutate' | 'validate' | 'authorize';

export interface ProviderEntry extends EntryCommon {
  readonly kind: 'provider';
  readonly provider: string;
  readonly url?: string;
  readonly service?: ResolvedServiceReference;
  readonly phases: readonly ProviderPhase[];
  /** The requests its authorize phase sees (with `authorize` in phases). */
  readonly authorizeMatch?: AuthorizeMatch;
  /** base64 PEM bundle trusted for the provider's certificate. */
  readonly caBundle?: string;
  readonly clientCert?: { readonly certFile: string; readonly keyFile: string };
  readonly circuitBreaker: CircuitBreakerConfig;
  readonly discovery: boolean;
  readonly discoveryPath: string;
  /** The AdmissionReview versions the provider speaks, preferred first. Default [v1, v1beta1]. */
  readonly admissionReviewVersions: readonly ReviewVersion[];
}

/** A validation written in CEL (README "Policies in CEL"): its expressions compiled when the file loads. */
export interface PolicyEntry extends EntryCommon {
  readonly kind: 'policy';
  readonly policy: string;
  readonly spec: PolicySpec;
}

/**
 * Native admission policies and their bindings as the apiserver takes them, read from files and (fromCluster) the
 * cluster (README "Native admission policies"): each binding a step at the entry's place.
 */
export interface NativePoliciesEntry extends EntryCommon {
  readonly kind: 'admissionPolicies';
  /** The entry's name (also `name`): its steps are `<name>/<policy>/<binding>`. */
  readonly admissionPolicies: string;
  /** Absolute paths of the YAML files and folders (a folder's `*.yaml`, `*.yml` and `*.json` files). */
  readonly files: readonly string[];
  /**
   * In cluster mode, the cluster's policies and bindings join the files' (a name in both: the file's), and
   * bindings' params are read from the cluster too. Without a cluster, nothing is read from it.
   */
  readonly fromCluster: boolean;
}

export type ChainEntry = PluginEntry | ProviderEntry | PolicyEntry | NativePoliciesEntry;

export interface GatewayConfig {
  /** The file it was read from ('(embedded default)' when none). */
  readonly file: string;
  /** Where a field path is written in `file`, for errors found after validation (plugin settings). */
  readonly locateField?: LocateField;
  /** The text it was read from and the folder its paths resolve against: what a worker thread reads it from again. */
  readonly source?: { readonly text: string; readonly baseDir: string };
  readonly server: ServerConfig;
  readonly kube: KubeConfigSection;
  readonly log: LogConfig;
  readonly explain: ExplainConfig;
  readonly record: RecordConfig;
  readonly chain: readonly ChainEntry[];
  readonly audit: AuditConfig;
  /** Absent: tracing is off (no `tracing.otlpEndpoint`). */
  readonly tracing?: TracingConfig;
  /** Exceptions (README "Exceptions"): which steps accept them, their longest life, files of them. */
  readonly exceptions: ExceptionsConfig;
}

/** The decision traces of recent reviews (README "Explaining a decision"). */
export interface ExplainConfig {
  /** Recent reviews whose traces `GET /explain/<uid>` serves; 0 keeps none (and makes no traces). */
  readonly bufferSize: number;
  /** Which reviews' traces are kept: `notable` (refused, warned or annotated: see README), or `all`. */
  readonly keep: 'notable' | 'all';
  /** What the kept traces may hold together, in bytes (as counted); the oldest make room. */
  readonly maxBytes: number;
  /** Keep the values of patch operations in the traces (object content); off: operations and paths only. */
  readonly includeObjects: boolean;
  /** Answer every review whose trace is kept with the `decision-trace` audit annotation (uid and trace id). */
  readonly auditAnnotation: boolean;
}

/** Sampled reviews written as NDJSON for `admission-gateway replay` (README "Recording and replaying reviews"). */
export interface RecordConfig {
  /** The NDJSON file (absolute, resolved against the config file's folder); `''`: no recording. */
  readonly path: string;
  /** The share of reviews recorded, 0..1; 0 (default) records none. */
  readonly sampleRate: number;
  /** JSON pointers (a `*` segment matches any key or index) redacted in objects, besides a Secret's data. */
  readonly redact: readonly string[];
  /** The recording stops growing at this size (later reviews are counted as `file_full`). */
  readonly maxFileBytes: number;
  /** The webhook routes recorded; default all. */
  readonly routes: readonly string[];
}
