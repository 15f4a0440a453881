/**
 * One review, start to end: pick the selected steps from the current chain snapshot, set the deadline,
 * run the phase, and build the answer; its observer records the metrics and the log line.
 */
import { performance } from 'node:perf_hooks';
import type { Decision } from '../admission/decision.js';
import { answerTo } from '../admission/responses.js';
import type { AdmissionRequest, AdmissionResponse } from '../admission/types.js';
import type { BindableLogger } from '../base/log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Chain, StepSelection } from './chain.js';
import type { ExtensionReferences } from './extension-references.js';
import type { Labels } from './label-selector.js';
import { namespaceToLookUp } from './match.js';
import { runMutatePhase } from './mutate.js';
import { ReviewNotes } from './notes.js';
import type { ReviewContext } from './review-context.js';
import { ReviewObserver, type StepReport } from './review-observer.js';
import { runValidatePhase } from './validate.js';

/** Where namespaceSelector labels come from: an informer cache in cluster mode, a stand-in otherwise. */
export interface NamespaceLabelSource {
  /** Never throws: unknown namespaces give undefined (treated as no labels). */
  labels(namespace: string): Labels | undefined | Promise<Labels | undefined>;
  /**
   * The opt-in extensions the namespace references (its `admissiongateway.io/extensions` annotation), in
   * cluster mode; absent without a cluster. Never throws: an unknown namespace references none.
   */
  extensions?(namespace: string): ExtensionReferences | Promise<ExtensionReferences>;
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
  /** An opt-in extension ran for a review because the object or its namespace referenced it. */
  readonly onExtensionServed?: (extension: string) => void;
}

export interface ReviewResult {
  readonly decision: Decision;
  /** The decision as answered: with the warnings and audit annotations, and the patch in base64. */
  readonly response: AdmissionResponse;
  readonly reports: readonly StepReport[];
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
  review(request: AdmissionRequest, selection: StepSelection, options?: ReviewOptions): Promise<ReviewResult>;
}

/** The time the chain may use: the apiserver's timeout minus the margin, never less than half of it. */
export function budgetMs(timeoutMs: number, marginMs: number): number {
  return Math.max(timeoutMs - marginMs, timeoutMs / 2);
}

export function createReviewer(deps: ReviewerDeps): Reviewer {
  const now = deps.now ?? (() => performance.now());
  const { metrics } = deps;

  return {
    async review(request, selection, { timeoutMs, large = false } = {}) {
      const chain = deps.chain();
      const { phase, failurePolicy } = selection;
      const started = now();
      const budget = budgetMs(timeoutMs ?? deps.defaultTimeoutMs, deps.deadlineMarginMs);

      const observer = new ReviewObserver(metrics, deps.log, request, phase);
      const namespace = chain.needsNamespaceLabels(phase, failurePolicy) ? namespaceToLookUp(request) : undefined;
      // A cached namespace's labels come back as they are, without a microtask hop.
      const found = namespace ? deps.namespaceLabels.labels(namespace) : undefined;
      const ctx: ReviewContext = {
        request,
        phase,
        deadline: started + budget,
        namespaceLabels: found instanceof Promise ? await found : found,
        notes: new ReviewNotes(),
        observer,
        now,
        large,
      };
      const decision =
        phase === 'mutate'
          ? await runMutatePhase(chain.planOf(failurePolicy), ctx)
          : await runValidatePhase(chain.stepsOf(phase, failurePolicy), ctx);
      const response = answerTo(request.uid, decision);
      const warnings = ctx.notes.warnings();
      if (warnings) response.warnings = warnings;
      const annotations = ctx.notes.annotations();
      if (annotations) response.auditAnnotations = annotations;
      observer.notesDropped(ctx.notes.dropped());
      observer.reviewed(selection.name, response, decision.patch, (now() - started) / 1000);
      return { decision, response, reports: observer.reports };
    },
  };
}
