/**
 * The gateway's metrics (README "Metrics reference"), defined once on an injected Registry with typed label names.
 * Label values are bounded: phases, operations, step names from config, outcomes — never a uid, name or
 * namespace.
 */
import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from 'prom-client';
import { HotCounter } from './hot-metrics.js';

export const METRIC_PREFIX = 'admission_gateway_';

/** Outcome of one step call. */
export const STEP_OUTCOMES = [
  'allowed',
  'denied',
  'patched',
  'skipped',
  'error',
  'timeout',
  'circuit_open',
  'no_opinion',
] as const;
export type StepOutcome = (typeof STEP_OUTCOMES)[number];

const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function createMetrics(registry: Registry, options: { defaultMetrics?: boolean } = {}) {
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
  const registers = [registry];
  return {
    registry,
    requests: new HotCounter({
      name: `${METRIC_PREFIX}requests_total`,
      help: 'AdmissionReviews answered, by phase, operation and verdict.',
      labelNames: ['phase', 'operation', 'allowed'] as const,
      registers,
    }),
    requestDuration: new Histogram({
      name: `${METRIC_PREFIX}request_duration_seconds`,
      help: 'Time from a decoded AdmissionReview to its answer, by phase.',
      labelNames: ['phase'] as const,
      buckets: DURATION_BUCKETS,
      registers,
    }),
    authorizeRequests: new HotCounter({
      name: `${METRIC_PREFIX}authorize_requests_total`,
      help: 'SubjectAccessReviews answered (POST /authorize), by decision: denied, no_opinion, or excluded (a system identity the chain never sees).',
      labelNames: ['decision'] as const,
      registers,
    }),
    authorizeDuration: new Histogram({
      name: `${METRIC_PREFIX}authorize_duration_seconds`,
      help: 'Time from a decoded SubjectAccessReview to its answer, for reviews at least one step matched.',
      buckets: DURATION_BUCKETS,
      registers,
    }),
    invalidRequests: new Counter({
      name: `${METRIC_PREFIX}invalid_requests_total`,
      help: 'Requests answered without running the chain: bad input (400/413/415) or an internal error (500).',
      labelNames: ['code'] as const,
      registers,
    }),
    stepCalls: new HotCounter({
      name: `${METRIC_PREFIX}step_calls_total`,
      help: 'Step outcomes: allowed, denied, patched, skipped, error, timeout, circuit_open.',
      labelNames: ['step', 'phase', 'outcome'] as const,
      registers,
    }),
    stepDuration: new Histogram({
      name: `${METRIC_PREFIX}step_duration_seconds`,
      help: 'Time spent in one step call.',
      labelNames: ['step', 'phase'] as const,
      buckets: DURATION_BUCKETS,
      registers,
    }),
    writesOutsideSupplies: new Counter({
      name: `${METRIC_PREFIX}writes_outside_supplies_total`,
      help: 'Calls of a step that declares supplies which wrote outside them (the step failed; failurePolicy applied).',
      labelNames: ['step'] as const,
      registers,
    }),
    extensionReviews: new Counter({
      name: `${METRIC_PREFIX}extension_reviews_total`,
      help: 'Reviews an opt-in extension (attach: OptIn) ran for because the object or its namespace referenced it, by extension and the phase it is counted in.',
      labelNames: ['extension', 'phase'] as const,
      registers,
    }),
    exceptionsApplied: new Counter({
      name: `${METRIC_PREFIX}exceptions_applied_total`,
      help: 'Steps an exception let off (mode Exempt) or whose denial it turned into a warning (mode Warn), by step and exception (namespace/name; _other past the first 100 exceptions).',
      labelNames: ['step', 'exception', 'mode'] as const,
      registers,
    }),
    failOpen: new Counter({
      name: `${METRIC_PREFIX}fail_open_total`,
      help: 'Step failures that were ignored (failurePolicy Ignore, or a step in warn/audit mode).',
      labelNames: ['step'] as const,
      registers,
    }),
    breakerState: new Gauge({
      name: `${METRIC_PREFIX}breaker_state`,
      help: 'Circuit breaker state per provider: 0 closed, 1 half-open, 2 open.',
      labelNames: ['provider'] as const,
      registers,
    }),
    providerDeprecatedVersion: new Gauge({
      name: `${METRIC_PREFIX}provider_deprecated_version`,
      help: 'Steps of a provider called in a deprecated AdmissionReview version, by provider and version (absent: none).',
      labelNames: ['provider', 'version'] as const,
      registers,
    }),
    breakerTransitions: new Counter({
      name: `${METRIC_PREFIX}breaker_transitions_total`,
      help: 'Circuit breaker state changes per provider, by the state entered.',
      labelNames: ['provider', 'state'] as const,
      registers,
    }),
    patchConflicts: new Counter({
      name: `${METRIC_PREFIX}patch_conflicts_total`,
      help: 'Times a step rewrote or removed a path an earlier step wrote in the same review.',
      labelNames: ['step'] as const,
      registers,
    }),
    inflight: new Gauge({
      name: `${METRIC_PREFIX}inflight_requests`,
      help: 'AdmissionReviews being processed.',
      registers,
    }),
    inflightBytes: new Gauge({
      name: `${METRIC_PREFIX}inflight_bytes`,
      help: 'Bytes of reviews held: bodies being read or reviewed, and answers being written (server.maxInflightBytes bounds it).',
      registers,
    }),
    inflightBytesLimit: new Gauge({
      name: `${METRIC_PREFIX}inflight_bytes_limit`,
      help: 'server.maxInflightBytes: past it, reviews are answered 429 unread.',
      registers,
    }),
    shedReviews: new Counter({
      name: `${METRIC_PREFIX}shed_reviews_total`,
      help: 'Reviews answered 429 without being read: the in-flight byte budget was full (inflight_bytes), or every large-review worker was busy and their queue full (large_review_lane); the apiserver retries them.',
      labelNames: ['reason'] as const,
      registers,
    }),
    largeReviewLaneReviews: new Counter({
      name: `${METRIC_PREFIX}large_review_lane_reviews_total`,
      help: 'Large reviews handed to a worker of the large-review lane (server.largeReviews), by route; those it could not take are counted in shed_reviews_total.',
      labelNames: ['route'] as const,
      registers,
    }),
    connectionsClosed: new Counter({
      name: `${METRIC_PREFIX}connections_closed_total`,
      help: 'Connections closed without serving a request: over server.maxConnections, a failed or timed-out TLS handshake, a request not received in time, a malformed request.',
      labelNames: ['server', 'reason'] as const,
      registers,
    }),
    opsAuthDecisions: new Counter({
      name: `${METRIC_PREFIX}ops_auth_decisions_total`,
      help: 'Requests to the ops port under server.opsAuth kube, by decision: allowed, unauthenticated (401), forbidden (403), unavailable (503: the apiserver did not answer).',
      labelNames: ['decision'] as const,
      registers,
    }),
    opsAuthLookups: new Counter({
      name: `${METRIC_PREFIX}ops_auth_lookups_total`,
      help: 'Answers the ops port access check needed, by review (token: TokenReview, access: SubjectAccessReview) and result: cached (no new call), asked (the apiserver answered), failed.',
      labelNames: ['review', 'result'] as const,
      registers,
    }),
    chainSteps: new Gauge({
      name: `${METRIC_PREFIX}chain_steps`,
      help: 'Steps in the resolved chain, by phase.',
      labelNames: ['phase'] as const,
      registers,
    }),
    kubeWatchConnected: new Gauge({
      name: `${METRIC_PREFIX}kube_watch_connected`,
      help: 'Cluster mode: 1 while the list/watch of a resource is connected, 0 while it reconnects (the cache is kept).',
      labelNames: ['resource'] as const,
      registers,
    }),
    policyParamQueries: new Gauge({
      name: `${METRIC_PREFIX}policy_param_queries`,
      help: 'Cluster mode, fromCluster: the paramRef queries watched (state "watched"), and of them those over kube.policyParams (state "over_bound": dropped, their bindings failing).',
      labelNames: ['state'] as const,
      registers,
    }),
    policyParamsObjects: new Gauge({
      name: `${METRIC_PREFIX}policy_params_objects`,
      help: 'Cluster mode, fromCluster: objects the params watches hold together (bounded by kube.policyParams.maxTotalObjects).',
      registers,
    }),
    policyParamsBytes: new Gauge({
      name: `${METRIC_PREFIX}policy_params_bytes`,
      help: 'Cluster mode, fromCluster: bytes (as JSON) the params watches hold together (bounded by kube.policyParams.maxTotalBytes).',
      registers,
    }),
    certificateExpiry: new Gauge({
      name: `${METRIC_PREFIX}serving_certificate_expiry_timestamp_seconds`,
      help: 'notAfter of the serving certificate in use.',
      registers,
    }),
    recordedReviews: new Counter({
      name: `${METRIC_PREFIX}recorded_reviews_total`,
      help: 'Sampled reviews for the recording (record:), by result: written, queue_full, file_full, too_large, error (dropped, never slowing a review).',
      labelNames: ['result'] as const,
      registers,
    }),
    recordingFailing: new Gauge({
      name: `${METRIC_PREFIX}recording_failing`,
      help: 'Recording (record:): 1 while its file cannot be opened or written (reviews are dropped as error, and it is retried with a growing wait), else 0.',
      registers,
    }),
    shadowCalls: new Counter({
      name: `${METRIC_PREFIX}shadow_calls_total`,
      help: 'Calls of shadow steps (shadow: true) after the answer, by step and outcome; dropped: over the bound of shadow calls at once.',
      labelNames: ['step', 'outcome'] as const,
      registers,
    }),
    shadowDisagreements: new Counter({
      name: `${METRIC_PREFIX}shadow_disagreements_total`,
      help: 'Reviews a shadow step disagreed with the answer on, by step and kind: would_deny, would_allow, patch_differs.',
      labelNames: ['step', 'kind'] as const,
      registers,
    }),
    certificateRotationSteps: new Counter({
      name: `${METRIC_PREFIX}certificate_rotation_steps_total`,
      help: 'Cluster mode: certificate Secret writes by this replica, by step (create, stage, promote, prune, reissue, regenerate).',
      labelNames: ['step'] as const,
      registers,
    }),
    leader: new Gauge({
      name: `${METRIC_PREFIX}leader`,
      help: 'Cluster mode with work only one replica does (the periodic audit): 1 while this replica holds the Lease and does it, else 0.',
      labelNames: ['lease'] as const,
      registers,
    }),
    auditResults: new Gauge({
      name: `${METRIC_PREFIX}audit_results`,
      help: 'Periodic audit: objects of the last run by step and result (pass, fail, error): fail is what enforcing the step would refuse.',
      labelNames: ['step', 'result'] as const,
      registers,
    }),
    auditLastRun: new Gauge({
      name: `${METRIC_PREFIX}audit_last_run_timestamp_seconds`,
      help: 'Periodic audit: when the last run ended, by outcome (complete, cut_short, failed).',
      labelNames: ['outcome'] as const,
      registers,
    }),
    auditDuration: new Gauge({
      name: `${METRIC_PREFIX}audit_duration_seconds`,
      help: 'Periodic audit: how long the last run took.',
      registers,
    }),
    tracingSpans: new Counter({
      name: `${METRIC_PREFIX}tracing_spans_total`,
      help: 'Tracing on: spans handed to the OTLP exporter, by result (exported, failed).',
      labelNames: ['result'] as const,
      registers,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
