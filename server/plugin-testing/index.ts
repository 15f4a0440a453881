/**
 * Testing a plugin exactly as the gateway runs it. `runPlugin` puts the plugin in a one-entry chain read by
 * the gateway's own config reader, and reviews the request through the gateway's own reviewer: the same
 * step adapter, tracked working copy, rollback, computed JSON patch, failurePolicy and modes as in
 * production. What it returns is what the apiserver would get and store.
 *
 * ```ts
 * import { reviewOf, runPlugin } from '../../server/plugin-testing/index.js';
 * const result = await runPlugin(maxReplicas, reviewOf(deployment), { settings: { max: 10 } });
 * assert.deepEqual(result.denial, { message: 'max-replicas: spec.replicas: 12 is more than the 10 allowed', code: 403 });
 * ```
 */
import jsonpatch from 'fast-json-patch';
import pino from 'pino';
import { Registry } from 'prom-client';
import { requestForObject, type RequestForObjectOptions } from '../admission/request-for-object.js';
import { buildPluginEntries, buildPluginSteps, createChain } from '../chain/chain.js';
import { createAuthorizer } from '../dispatch/authorizer.js';
import { DEFAULT_EXCLUSIONS, compileExclusions } from '../authorization/exclusions.js';
import type { AuthorizeDecision } from '../authorization/authorize-step.js';
import type { Labels } from '../steps/label-selector.js';
import { compileMatch } from '../steps/match.js';
import { createPluginRegistry } from '../chain/plugin-registry.js';
import { createReviewer, type ReviewResult } from '../dispatch/reviewer.js';
import type { BindableLogger } from '../base/log.js';
import { validateConfig } from '../config/validate.js';
import { explainPolicyRun, type PolicyTrace } from '../policy/explain-policy.js';
import { policyRunOf } from '../policy/policy-runs.js';
import { createMetrics } from '../metrics/metrics.js';
import { toMatch, type MatchSpec } from '../plugin-api/match-builder.js';
import type {
  AdmissionRequest,
  FailurePolicy,
  JsonPatchOperation,
  KubeObject,
  Mode,
  Operation,
  Plugin,
  ReinvocationPolicy,
  SelectorRequirement,
} from '../plugin-api/types.js';

/** The chain entry the plugin runs as: what a `gateway.yaml` entry would say. */
export interface EntryOptions {
  /** The entry's `settings`, as they would be written in gateway.yaml (parsed by the plugin's `settings`). */
  readonly settings?: unknown;
  readonly mode?: Mode;
  readonly failurePolicy?: FailurePolicy;
  readonly timeoutSeconds?: number;
  readonly reinvocationPolicy?: ReinvocationPolicy;
  /** Replaces the plugin's own match, as an entry's `match` does (a builder or the literal shape). */
  readonly match?: MatchSpec<object>;
}

export interface RunOptions extends EntryOptions {
  /**
   * The labels of the request's namespace, for a `namespaceSelector` (default: only
   * `kubernetes.io/metadata.name`, as the gateway assumes without a cluster).
   */
  readonly namespaceLabels?: Labels;
  /** Which phases run (default both, as the apiserver calls them: mutate, then validate on its result). */
  readonly phases?: readonly ('mutate' | 'validate')[];
}

/** One step as the review's log line reports it. */
export interface StepRun {
  readonly phase: 'mutate' | 'validate';
  /** allowed, patched, denied, skipped, error or timeout. */
  readonly outcome: string;
  /** Why it was skipped, or the failure's reason. */
  readonly reason?: string;
  /** 1 for a reinvocation. */
  readonly round?: number;
  /** The failure was ignored (failurePolicy Ignore, or mode warn/audit). */
  readonly failedOpen?: boolean;
}

export interface PluginRun<T extends object = KubeObject> {
  readonly allowed: boolean;
  /** The refusal the user sees (the message prefixed with the plugin's name), when not allowed. */
  readonly denial?: { readonly message: string; readonly code: number };
  /** Warnings as the user sees them: prefixed with the plugin's name. */
  readonly warnings: readonly string[];
  /** Audit annotations as the apiserver records them: keys qualified as `<plugin>.<key>`. */
  readonly annotations: Readonly<Record<string, string>>;
  /** The mutate phase's one JSON patch, decoded; empty when nothing changed. */
  readonly patch: readonly JsonPatchOperation[];
  /**
   * The request's object with the patch applied: what the validate phase saw, and what the apiserver stores
   * when the request is allowed.
   */
  readonly object: T | undefined;
  readonly steps: readonly StepRun[];
}

/** The stored object for UPDATE (`oldObject`), and `namespace`, `userInfo`, `dryRun`, `subResource`. */
export type ReviewOfOptions = Omit<RequestForObjectOptions, 'operation'>;

/**
 * A request for `object` as the apiserver would send it: kind and resource from its apiVersion and kind,
 * namespace and name from its metadata (`default` for a namespaced built-in kind without one). DELETE
 * carries no object, only the stored one.
 */
export function reviewOf(
  object: KubeObject,
  operation: Operation = 'CREATE',
  options: ReviewOfOptions = {},
): AdmissionRequest {
  return requestForObject(object, { operation, ...options });
}

const silent: BindableLogger = pino({ level: 'silent' });

/** A gateway config holding only this plugin, read by the gateway's own reader. */
function chainFor(plugin: Plugin<unknown, object>, options: EntryOptions) {
  const entry: Record<string, unknown> = { plugin: plugin.name };
  for (const key of ['settings', 'mode', 'failurePolicy', 'timeoutSeconds', 'reinvocationPolicy'] as const) {
    if (options[key] !== undefined) entry[key] = options[key];
  }
  if (options.match) entry.match = toMatch(options.match);
  const config = validateConfig({ chain: [entry] }, 'gateway.yaml', process.cwd());
  return createChain(buildPluginSteps(config.chain, createPluginRegistry([plugin]), config.file));
}

/**
 * The plugin's parsed settings for `raw`, or the error the gateway would refuse its config with
 * (`gateway.yaml: chain[0].settings.max: expected a positive integer, got 0`).
 */
export function settingsOf<S, T extends object>(plugin: Plugin<S, T>, raw?: unknown): S {
  chainFor(plugin, { settings: raw });
  return (plugin.settings ? plugin.settings(raw) : undefined) as S;
}

/** Runs `request` through a chain of this plugin alone; see the module's header. */
export async function runPlugin<S, T extends object>(
  plugin: Plugin<S, T>,
  request: AdmissionRequest,
  options: RunOptions = {},
): Promise<PluginRun<T>> {
  return reviewThrough<T>(chainFor(plugin, options), request, options);
}

/** What `runPolicy` returns: what `runPlugin` does, and what decided the policy step. */
export interface PolicyRunResult<T extends object = KubeObject> extends PluginRun<T> {
  /**
   * The policy step's account, as `review --explain` gives it: the validation that refused (index, expression,
   * message, reason), the false matchCondition, or the expression that failed; the variables it read, with their
   * values; the audit annotations it made; its cost. Absent when its match rules skipped the request.
   */
  readonly policy?: PolicyTrace;
}

/**
 * Runs `request` through a chain of this `policy` entry alone, the object as written in gateway.yaml
 * (`{ policy: 'memory-limits', match: {...}, validations: [...] }`), read by the gateway's own config reader
 * (a mistake in an expression is the same ConfigError, naming the field and the position in it).
 */
export async function runPolicy<T extends object = KubeObject>(
  policy: Readonly<Record<string, unknown>>,
  request: AdmissionRequest,
  options: Pick<RunOptions, 'namespaceLabels' | 'phases'> = {},
): Promise<PolicyRunResult<T>> {
  const config = validateConfig({ chain: [policy] }, 'gateway.yaml', process.cwd());
  const entry = config.chain[0];
  const chain = createChain(buildPluginEntries(config.chain, createPluginRegistry([]), config.file).steps);
  let reviewed: AdmissionRequest | undefined;
  const result = await reviewThrough<T>(chain, request, options, (r) => (reviewed = r));
  const run = entry && reviewed ? policyRunOf(reviewed, entry.name) : undefined;
  return run ? { ...result, policy: explainPolicyRun(run, { values: true }) } : result;
}

/** Reviews `request` through `chain` as the apiserver calls it: mutate, then validate on the stored result. */
async function reviewThrough<T extends object>(
  chain: ReturnType<typeof createChain>,
  request: AdmissionRequest,
  options: Pick<RunOptions, 'namespaceLabels' | 'phases'>,
  onValidate?: (request: AdmissionRequest) => void,
): Promise<PluginRun<T>> {
  const { namespaceLabels } = options;
  const reviewer = createReviewer({
    chain: () => chain,
    metrics: createMetrics(new Registry()),
    log: silent,
    namespaceLabels: {
      labels: (namespace) => namespaceLabels ?? { 'kubernetes.io/metadata.name': namespace },
    },
    deadlineMarginMs: 0,
    defaultTimeoutMs: 30_000,
  });
  const phases = options.phases ?? ['mutate', 'validate'];
  const warnings: string[] = [];
  const annotations: Record<string, string> = {};
  const steps: StepRun[] = [];
  let patch: readonly JsonPatchOperation[] = [];
  let current = request;

  const record = (phase: 'mutate' | 'validate', result: ReviewResult) => {
    const { response } = result;
    for (const warning of response.warnings ?? []) if (!warnings.includes(warning)) warnings.push(warning);
    Object.assign(annotations, response.auditAnnotations);
    for (const { outcome, reason, round, failedOpen } of result.reports) {
      steps.push({
        phase,
        outcome,
        ...(reason !== undefined ? { reason } : {}),
        ...(round ? { round } : {}),
        ...(failedOpen ? { failedOpen } : {}),
      });
    }
    return response.allowed
      ? undefined
      : { message: response.status?.message ?? '', code: response.status?.code ?? 403 };
  };

  let denial: PluginRun['denial'];
  if (phases.includes('mutate')) {
    const result = await reviewer.review(current, { name: 'mutate', phase: 'mutate' });
    denial = record('mutate', result);
    if (result.decision.patch && current.object) {
      patch = result.decision.patch;
      const stored = jsonpatch.applyPatch(structuredClone(current.object), [...patch], true, false).newDocument;
      current = { ...current, object: stored };
    }
  }
  if (!denial && phases.includes('validate')) {
    onValidate?.(current);
    denial = record('validate', await reviewer.review(current, { name: 'validate', phase: 'validate' }));
  }
  return {
    allowed: !denial,
    ...(denial ? { denial } : {}),
    warnings,
    annotations,
    patch,
    object: (current.object ?? undefined) as T | undefined,
    steps,
  };
}

/**
 * Whether the plugin (or an entry `match` that replaces its own) would see `request`: the same rules and
 * selectors the gateway applies. `namespaceLabels` as for `runPlugin`.
 */
export function matches<S, T extends object>(
  plugin: Plugin<S, T>,
  request: AdmissionRequest,
  options: { readonly match?: MatchSpec<object>; readonly namespaceLabels?: Labels } = {},
): boolean {
  const labels =
    options.namespaceLabels ?? (request.namespace ? { 'kubernetes.io/metadata.name': request.namespace } : undefined);
  return compileMatch(options.match ? toMatch(options.match) : plugin.match).matches(request, labels) === undefined;
}

/**
 * A request as the apiserver's authorization webhook asks about it: a resource request (`resource`, with
 * `verb`, and `namespace`, `name`, `apiGroup`, `subresource` as they apply), or a non-resource one (`path`).
 */
export interface AuthorizeRequest {
  readonly verb: string;
  readonly resource?: string;
  readonly subresource?: string;
  readonly apiGroup?: string;
  readonly apiVersion?: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly path?: string;
  readonly user?: string;
  readonly groups?: readonly string[];
  /** A list's or watch's selectors, as the apiserver parsed them (1.34+). */
  readonly labelSelector?: readonly SelectorRequirement[];
  readonly fieldSelector?: readonly SelectorRequirement[];
}

/** What the authorize chain answered: the reason the user sees in the 403, or no opinion. */
export type AuthorizeRun = AuthorizeDecision;

/**
 * Asks a chain of this plugin alone about `request` (POST /authorize), through the gateway's own authorize
 * chain: its authorizeMatch, failurePolicy, timeout and the identities never asked about. `namespaceLabels`
 * as for `runPlugin`.
 */
export async function authorizeWith<S, T extends object>(
  plugin: Plugin<S, T>,
  request: AuthorizeRequest,
  options: EntryOptions & { readonly namespaceLabels?: Labels } = {},
): Promise<AuthorizeRun> {
  const entry: Record<string, unknown> = { plugin: plugin.name };
  for (const key of ['settings', 'mode', 'failurePolicy', 'timeoutSeconds'] as const) {
    if (options[key] !== undefined) entry[key] = options[key];
  }
  const config = validateConfig({ chain: [entry] }, 'gateway.yaml', process.cwd());
  const built = buildPluginEntries(config.chain, createPluginRegistry([plugin]), config.file);
  const chain = createChain(built.steps, built.authorize);
  const authorizer = createAuthorizer({
    steps: () => chain.authorize,
    excluded: compileExclusions(DEFAULT_EXCLUSIONS),
    metrics: createMetrics(new Registry()),
    log: silent,
    namespaceLabels: {
      labels: (namespace) => options.namespaceLabels ?? { 'kubernetes.io/metadata.name': namespace },
    },
  });
  const { verb, path } = request;
  const decision = await authorizer.authorize({
    user: request.user ?? 'jane',
    uid: '',
    groups: request.groups ?? ['system:authenticated'],
    extra: {},
    resource:
      path === undefined
        ? {
            verb,
            namespace: request.namespace ?? '',
            group: request.apiGroup ?? '',
            version: request.apiVersion ?? 'v1',
            resource: request.resource ?? '',
            subresource: request.subresource ?? '',
            name: request.name ?? '',
            labelSelector: request.labelSelector ?? [],
            fieldSelector: request.fieldSelector ?? [],
          }
        : undefined,
    nonResource: path === undefined ? undefined : { verb, path },
  });
  return decision.denied ? { denied: true, reason: decision.reason } : { denied: false };
}
