/**
 * One review, start to end: pick the route's steps from the current chain snapshot, set the deadline,
 * run the phase, and build the answer — plus its metrics and its one log line.
 */
import { performance } from 'node:perf_hooks';
import { allowed, denied } from '../admission/responses.js';
import { clip } from '../base/limits.js';
import type { AdmissionRequest, AdmissionResponse, JsonPatchOperation } from '../admission/types.js';
import type { Metrics } from '../metrics/metrics.js';
import type { BindableLogger, Logger } from '../base/log.js';
import { phaseOf, type Chain, type Route } from './chain.js';
import type { Labels } from './label-selector.js';
import { namespaceToLookUp } from './match.js';
import { runMutatePhase, type MutateOutcome } from './mutate.js';
import { ReviewNotes } from './notes.js';
import type { ReviewContext, StepReport } from './review-context.js';
import { runValidatePhase } from './validate.js';

/** Where namespaceSelector labels come from: an informer cache in cluster mode, a stand-in otherwise. */
export interface NamespaceLabelSource {
  /** Never throws: unknown namespaces give undefined (treated as no labels). */
  labels(namespace: string): Labels | undefined | Promise<Labels | undefined>;
}

/**
 * Without a cluster there is nothing to ask; every namespace carries the name label that Kubernetes
 * 1.21+ sets automatically (kubernetes.io/metadata.name), so selectors on it still work.
 */
export const standaloneNamespaceLabels: NamespaceLabelSource = {
  labels: (namespace) => ({ 'kubernetes.io/metadata.name': namespace }),
};

export interface ReviewerDeps {
  /** The current chain; read once per review. */
  readonly chain: () => Chain;
  readonly metrics: Metrics;
  readonly log: BindableLogger;
  readonly namespaceLabels: NamespaceLabelSource;
  readonly deadlineMarginMs: number;
  readonly defaultTimeoutMs: number;
  readonly now?: () => number;
}

export interface ReviewResult {
  readonly response: AdmissionResponse;
  readonly reports: readonly StepReport[];
  /** The decoded patch carried (base64) in the response. */
  readonly patch?: readonly JsonPatchOperation[];
}

export interface ReviewOptions {
  /** The apiserver's `?timeout`; the chain answers `deadlineMarginMs` before it. */
  readonly timeoutMs?: number;
  /**
   * A large object (many thousands of containers): the review lets other work run between its steps and
   * before its diff, so that an ordinary review arriving meanwhile waits for one step, not for all of it.
   */
  readonly large?: boolean;
}

export interface Reviewer {
  review(request: AdmissionRequest, route: Route, options?: ReviewOptions): Promise<ReviewResult>;
}

/** The time the chain may use: the apiserver's timeout minus the margin, never less than half of it. */
export function budgetMs(timeoutMs: number, marginMs: number): number {
  return Math.max(timeoutMs - marginMs, timeoutMs / 2);
}

export function createReviewer(deps: ReviewerDeps): Reviewer {
  const now = deps.now ?? (() => performance.now());
  const { metrics } = deps;

  return {
    async review(request, route, { timeoutMs, large = false } = {}) {
      const chain = deps.chain();
      const steps = chain.route(route);
      const phase = phaseOf(route);
      const started = now();
      const budget = budgetMs(timeoutMs ?? deps.defaultTimeoutMs, deps.deadlineMarginMs);

      let requestLog: BindableLogger | undefined;
      const log = (): BindableLogger => (requestLog ??= deps.log.child({ uid: request.uid }));
      const stepLogs = new Map<string, Logger>();
      const namespace = chain.needsNamespaceLabels(route) ? namespaceToLookUp(request) : undefined;
      // A cached namespace's labels come back as they are, without a microtask hop.
      const found = namespace ? deps.namespaceLabels.labels(namespace) : undefined;
      const ctx: ReviewContext = {
        request,
        phase,
        deadline: started + budget,
        namespaceLabels: found instanceof Promise ? await found : found,
        notes: new ReviewNotes(),
        reports: [],
        metrics,
        log,
        stepLog: (step) => {
          let l = stepLogs.get(step);
          if (!l) stepLogs.set(step, (l = log().child({ step })));
          return l;
        },
        now,
        large,
      };
      const { rejection, patch }: MutateOutcome =
        phase === 'mutate' ? await runMutatePhase(steps, ctx) : await runValidatePhase(steps, ctx);
      const response = rejection ? denied(request.uid, rejection.message, rejection.code) : allowed(request.uid);
      if (patch) {
        response.patchType = 'JSONPatch';
        response.patch = Buffer.from(JSON.stringify(patch)).toString('base64');
      }
      const warnings = ctx.notes.warnings();
      if (warnings) response.warnings = warnings;
      const annotations = ctx.notes.annotations();
      if (annotations) response.auditAnnotations = annotations;
      const dropped = ctx.notes.dropped();
      if (dropped) log().warn({ dropped }, 'warnings or audit annotations over a step limit were dropped');

      const seconds = (now() - started) / 1000;
      metrics.requests.inc({ phase, operation: request.operation, allowed: String(response.allowed) });
      metrics.requestDuration.observe({ phase }, seconds);
      deps.log.info(
        {
          uid: request.uid,
          route,
          operation: request.operation,
          // What the client named is its own to choose, of any length: the line stays bounded.
          kind: clip(
            `${request.kind.group ? `${request.kind.group}/` : ''}${request.kind.version}/${request.kind.kind}`,
          ),
          namespace: request.namespace === undefined ? undefined : clip(request.namespace),
          name: request.name === undefined ? undefined : clip(request.name),
          dryRun: request.dryRun === true,
          allowed: response.allowed,
          ...(response.status ? { code: response.status.code, message: response.status.message } : {}),
          patchOps: patch?.length ?? 0,
          ms: Math.round(seconds * 1e6) / 1000,
          steps: ctx.reports,
          ...(deps.log.isLevelEnabled?.('debug') && patch ? { patch } : {}),
        },
        'review',
      );
      return { response, reports: ctx.reports, ...(patch ? { patch } : {}) };
    },
  };
}
