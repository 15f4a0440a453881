/**
 * One review, start to end: pick the selected steps from the current chain snapshot, set the deadline,
 * run the phase, and build the answer; its observer records the metrics and the log line.
 */
import { performance } from 'node:perf_hooks';
import type { Decision, Denial } from '../admission/decision.js';
import { answerTo } from '../admission/responses.js';
import type { AdmissionRequest, AdmissionResponse, KubeObject, Phase } from '../admission/types.js';
import { namespaceFromLabels } from '../admission/namespace-object.js';
import { provideNamespaceObject } from '../policy/review-cel.js';
import { provideAccessChecker, type SubjectAccessChecker } from '../policy/authorizer-session.js';
import type { BindableLogger } from '../base/log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Chain, StepSelection } from '../chain/chain.js';
import { ReviewedRequest, TRACE_ANNOTATION, traceAnnotation, traceIdOf } from '../trace/decision-trace.js';
import { EXTENSIONS_ANNOTATION, NO_REFERENCES, type ExtensionReferences } from '../extensions/extension-references.js';
import type { Labels } from '../steps/label-selector.js';
import { namespaceToLookUp } from '../steps/match.js';
import { runMutatePhase } from './mutate.js';
import { ReviewNotes } from './notes.js';
import type { ReviewContext } from './review-context.js';
import { ReviewObserver } from './review-observer.js';
import type { ShadowStepTrace, StepReport } from '../trace/step-report.js';
import { incomingTraceId, type IncomingHeaders, type ReviewTracer } from '../trace/review-trace.js';
import {
  namespaceOfReferences,
  objectReferenceValue,
  objectReferences,
  resolveReferences,
  type ReviewExtensions,
} from '../extensions/review-references.js';
import type { ShadowRun } from './shadow.js';
import type { Step } from '../steps/step.js';
import { runValidatePhase } from './validate.js';
import { reviewExceptions } from './review-exceptions.js';
import type { ExceptionSource } from '../exceptions/exception-source.js';

/** Where namespaceSelector labels come from: an informer cache in cluster mode, a stand-in otherwise. */
export interface NamespaceLabelSource {
  /** Never throws: unknown namespaces give undefined (treated as no labels). */
  labels(namespace: string): Labels | undefined | Promise<Labels | undefined>;
  /**
   * The opt-in extensions the namespace references (its `admissiongateway.io/extensions` annotation), in
   * cluster mode; absent without a cluster. Never throws: an unknown namespace references none.
   */
  extensions?(namespace: string): ExtensionReferences | Promise<ExtensionReferences>;
  /**
   * The namespace as a policy's `namespaceObject` reads it (admission/namespace-object.ts), in cluster mode. Never
   * throws: undefined when it cannot be read. Absent: made of its name and labels (lookUpNamespaceObject).
   */
  object?(namespace: string): KubeObject | undefined | Promise<KubeObject | undefined>;
}

/**
 * The review's `namespaceObject`, as the apiserver gives its policies: null for a cluster-scoped object and for a
 * Namespace itself (whose request names itself as its namespace), and when the namespace cannot be read.
 */
export function lookUpNamespaceObject(
  source: NamespaceLabelSource,
  request: AdmissionRequest,
): KubeObject | null | Promise<KubeObject | null> {
  const name = request.namespace;
  const { group, version, kind } = request.kind;
  if (!name || (kind === 'Namespace' && version === 'v1' && group === '')) return null;
  if (source.object) {
    const found = source.object(name);
    return found instanceof Promise ? found.then((o) => o ?? null) : (found ?? null);
  }
  const labels = source.labels(name);
  return labels instanceof Promise
    ? labels.then((l) => namespaceFromLabels(name, l))
    : namespaceFromLabels(name, labels);
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
  /** Hears of every review with its decision trace (the explain buffer, the recorder); none: no trace is made. */
  readonly onReviewed?: (reviewed: ReviewedRequest) => void;
  /**
   * Adds the `decision-trace` audit annotation (uid and trace id) to every traced answer (`all`), or to those
   * whose trace is kept by default (`notable`: see ReviewedRequest.notable).
   */
  readonly annotateTrace?: 'all' | 'notable' | undefined;
  /** Runs the chain's shadow steps after each answer (shadow.ts); none: they do not run. */
  readonly shadow?: { run(run: ShadowRun): void };
  /** Traces each review and its steps (README "Tracing"); absent, tracing costs a review nothing. */
  readonly tracing?: ReviewTracer | undefined;
  /** The exceptions in force (README "Exceptions"); absent or empty, they cost a review one check. */
  readonly exceptions?: ExceptionSource | undefined;
  /**
   * Where admission policies' authorization checks (`authorizer`) are asked, in cluster mode; absent, every check
   * is errored (policy/authorizer-session.ts).
   */
  readonly accessChecker?: SubjectAccessChecker | undefined;
}

export { ReviewedRequest };

export interface ReviewResult {
  readonly decision: Decision;
  /** The decision as answered: with the warnings and audit annotations, and the patch in base64. */
  readonly response: AdmissionResponse;
  readonly reports: readonly StepReport[];
  /** The review with its decision trace (built when first read), when the reviewer makes them (`onReviewed`). */
  readonly reviewed?: ReviewedRequest;
}

export interface ReviewOptions {
  /** The review's W3C trace id (an incoming traceparent's, or the tracer's); else one is made from the uid. */
  readonly traceId?: string;
  /** The apiserver's `?timeout`; the chain answers `deadlineMarginMs` before it. */
  readonly timeoutMs?: number;
  /**
   * A large object (many thousands of containers): the review lets other work run between its steps and
   * before its diff, so that an ordinary review arriving meanwhile waits for one step, not for all of it.
   */
  readonly large?: boolean;
  /** The webhook request's headers: its `traceparent` and `tracestate` are continued when tracing is on. */
  readonly incoming?: IncomingHeaders;
  /**
   * How long the review already waited before it reached the reviewer (for a worker of the large-review lane,
   * server/lane/): its deadline is that much nearer.
   */
  readonly waitedMs?: number;
}

export interface Reviewer {
  review(request: AdmissionRequest, selection: StepSelection, options?: ReviewOptions): Promise<ReviewResult>;
}

/** The time the chain may use: the apiserver's timeout minus the margin, never less than half of it. */
export function budgetMs(timeoutMs: number, marginMs: number): number {
  return Math.max(timeoutMs - marginMs, timeoutMs / 2);
}

/**
 * Whether an answer is one an operator asks about: refused, or carrying warnings or audit annotations (a step
 * that failed open, would have denied, overwrote another's write, or annotated). Its trace is kept by default.
 */
const isNotable = (response: AdmissionResponse): boolean =>
  !response.allowed || response.warnings !== undefined || response.auditAnnotations !== undefined;

/** Whether references name anything, readable or not. */
const nameAnything = (references: ExtensionReferences): boolean =>
  references.names.length > 0 || references.invalid.length > 0;

/**
 * Whether this route gives the warnings about a review's references. The apiserver shows the mutating and the
 * validating webhooks' warnings together, so they are given once: by the mutate phase, or by the validate
 * phase when no mutate step's rules select the request (a mutating webhook rendered from them is not called
 * for it); and of a phase split by failure policy, by its `Fail` half, or by its `Ignore` half when no `Fail`
 * step's rules select the request.
 */
export function givesReferenceWarnings(chain: Chain, request: AdmissionRequest, selection: StepSelection): boolean {
  const selects = (steps: readonly Step[]) => steps.some((step) => step.match.rulesMatch(request));
  if (selection.phase === 'validate' && selects(chain.stepsOf('mutate'))) return false;
  return selection.failurePolicy !== 'Ignore' || !selects(chain.stepsOf(selection.phase, 'Fail'));
}

/**
 * Whether this route runs the phase's shadow steps: a phase split by failure policy runs them once, with its
 * `Fail` half, or with its `Ignore` half when no `Fail` step's rules select the request (no `Fail` webhook is
 * then called for it).
 */
export function runsShadow(chain: Chain, request: AdmissionRequest, selection: StepSelection): boolean {
  if (chain.shadowOf(selection.phase).length === 0) return false;
  return (
    selection.failurePolicy !== 'Ignore' ||
    !chain.stepsOf(selection.phase, 'Fail').some((step) => step.match.rulesMatch(request))
  );
}

/** What a review looks up before its phase runs (createReviewer's lookUp). */
interface Lookups {
  readonly namespaceLabels: Labels | undefined;
  /** Undefined when neither the chain nor the object has references. */
  readonly extensions: ReviewExtensions | undefined;
  /** The references refuse the review (review-references.ts). */
  readonly refusal: Denial | undefined;
}

const NO_LOOKUPS: Lookups = Object.freeze({ namespaceLabels: undefined, extensions: undefined, refusal: undefined });

const labelsOnly = (namespaceLabels: Labels | undefined): Lookups =>
  namespaceLabels ? { namespaceLabels, extensions: undefined, refusal: undefined } : NO_LOOKUPS;

/** A review once answered, as its trace needs it (createReviewer's tracedEnd). */
interface ReviewEnd {
  readonly route: string;
  readonly decision: Decision;
  readonly response: AdmissionResponse;
  readonly seconds: number;
  /** Date.now() when the review started. */
  readonly startedAt: number;
  readonly traceId: string | undefined;
  readonly incoming: IncomingHeaders | undefined;
  readonly shadow: ShadowStepTrace[] | undefined;
  readonly shadowSteps: number | undefined;
}

export function createReviewer(deps: ReviewerDeps): Reviewer {
  const now = deps.now ?? (() => performance.now());
  const { metrics } = deps;
  // An exception's namespaceSelector needs the labels as a step's does.
  const phaseNeedsLabels = (chain: Chain, selection: StepSelection): boolean =>
    chain.needsNamespaceLabels(selection.phase, selection.failurePolicy) ||
    deps.exceptions?.current().needsNamespaceLabels === true;

  /**
   * The references of a review, resolved (review-references.ts), and the namespace's labels: its references
   * and labels come from one lookup, both asked for before either is awaited.
   */
  const lookUpReferences = async (
    request: AdmissionRequest,
    chain: Chain,
    selection: StepSelection,
    value: unknown,
    notes: ReviewNotes,
  ): Promise<Lookups> => {
    const object = objectReferences(value);
    const unchanged =
      value !== undefined && request.operation === 'UPDATE' && request.oldObject
        ? objectReferences(request.oldObject.metadata?.annotations?.[EXTENSIONS_ANNOTATION])
        : undefined;
    const source = deps.namespaceLabels;
    const namespaceName = chain.extensions.usesReferences ? namespaceOfReferences(request) : undefined;
    const fromNamespace = namespaceName && source.extensions ? source.extensions(namespaceName) : NO_REFERENCES;
    const needLabels = (references: ExtensionReferences) =>
      references.names.some((name) => chain.extensions.get(name)?.needsNamespaceLabels);
    // On a cache miss the namespace's references are not known yet: its labels are asked for at once if any
    // extension could need them, so that one GET serves both.
    const needsLabels =
      phaseNeedsLabels(chain, selection) ||
      needLabels(object) ||
      (fromNamespace instanceof Promise ? chain.extensions.needsNamespaceLabels : needLabels(fromNamespace));
    const labelsOf = needsLabels ? namespaceToLookUp(request) : undefined;
    const foundLabels = labelsOf ? source.labels(labelsOf) : undefined;
    const namespace = fromNamespace instanceof Promise ? await fromNamespace : fromNamespace;
    const labels = foundLabels instanceof Promise ? await foundLabels : foundLabels;
    const warn = (nameAnything(object) || nameAnything(namespace)) && givesReferenceWarnings(chain, request, selection);
    const resolved = resolveReferences({
      request,
      chain: chain.extensions,
      sources: { object, unchanged, namespaceName, namespace },
      namespaceLabels: labels,
      warn,
    });
    for (const warning of resolved.warnings) notes.warn(EXTENSIONS_ANNOTATION, warning);
    const extensions: ReviewExtensions = {
      chain: chain.extensions,
      failurePolicy: selection.failurePolicy,
      referenced: resolved.referenced,
      setAside: resolved.setAside,
    };
    return { namespaceLabels: labels, extensions, refusal: resolved.refusal };
  };

  /**
   * What a review looks up before its phase runs: its references resolved with its namespace's labels when the
   * object or the chain has references (lookUpReferences), else the namespace's labels alone when some step's
   * selector needs them. A cached namespace's labels come back as they are, without a microtask hop.
   */
  const lookUp = (
    request: AdmissionRequest,
    chain: Chain,
    selection: StepSelection,
    notes: ReviewNotes,
  ): Lookups | Promise<Lookups> => {
    // A chain without OptIn steps or conflict groups costs a review one annotation read, and no lookup.
    const value = objectReferenceValue(request);
    if (value !== undefined || chain.extensions.usesReferences)
      return lookUpReferences(request, chain, selection, value, notes);
    const namespace = phaseNeedsLabels(chain, selection) ? namespaceToLookUp(request) : undefined;
    const found = namespace ? deps.namespaceLabels.labels(namespace) : undefined;
    return found instanceof Promise ? found.then(labelsOnly) : labelsOnly(found);
  };

  /**
   * Counts each `OptIn` extension a step was called for once per review: one with mutate steps in the mutate
   * phase, one with validate steps only in the validate phase, so that one object counts once.
   */
  const served = (chain: Chain, observer: ReviewObserver, phase: Phase) => {
    for (const name of observer.calledOptIn()) {
      if (chain.extensions.get(name)?.mutates !== (phase === 'mutate')) continue;
      metrics.extensionReviews.inc({ extension: name, phase });
      deps.onExtensionServed?.(name);
    }
  };

  /**
   * A traced review's end: the ReviewedRequest (its trace built when first read), the `decision-trace` audit
   * annotation when the answer gets one, the review's log line, and the listeners told.
   */
  const tracedEnd = (
    ctx: ReviewContext,
    end: ReviewEnd,
    listener: (reviewed: ReviewedRequest) => void,
  ): ReviewResult => {
    const { request, phase, observer } = ctx;
    const { decision, response, seconds } = end;
    const notable = isNotable(response);
    const reviewed = new ReviewedRequest(request, response, decision, notable, {
      request,
      response,
      decision,
      route: end.route,
      phase,
      // With tracing on, the decision trace carries the OpenTelemetry trace's id: one id finds both.
      traceId: end.traceId ?? observer.trace?.traceId ?? incomingTraceId(end.incoming),
      startedAt: end.startedAt,
      ms: Math.round(seconds * 1e6) / 1000,
      reports: observer.reports,
      details: observer.details!,
      namespaceLabels: ctx.namespaceLabels,
      writes: observer.writes,
      conflicts: observer.conflicts,
      shadow: end.shadow,
      shadowSteps: end.shadowSteps,
    });
    if (deps.annotateTrace === 'all' || (deps.annotateTrace === 'notable' && notable)) {
      // The notes' own map, made for this answer: added to in place.
      (response.auditAnnotations ??= {})[TRACE_ANNOTATION] = traceAnnotation(
        request.uid,
        traceIdOf(reviewed.traceInput),
      );
    }
    observer.reviewed(end.route, response, decision.patch, seconds);
    listener(reviewed);
    return { decision, response, reports: observer.reports, reviewed };
  };

  return {
    async review(request, selection, { timeoutMs, large = false, traceId, incoming, waitedMs = 0 } = {}) {
      const chain = deps.chain();
      const { phase, failurePolicy } = selection;
      const started = now();
      const budget = budgetMs(timeoutMs ?? deps.defaultTimeoutMs, deps.deadlineMarginMs) - waitedMs;
      const listener = deps.onReviewed;
      const startedAt = listener ? Date.now() : 0;

      const observer = new ReviewObserver(
        metrics,
        deps.log,
        request,
        phase,
        listener ? { deadline: started + budget, now } : undefined,
        deps.tracing?.startReview(request, phase, selection.name, incoming),
      );
      const notes = new ReviewNotes();
      if (deps.accessChecker) provideAccessChecker(request, deps.accessChecker);
      // Asked for before the labels are awaited, so that a namespace not yet cached is read once for both.
      const namespaceObject = chain.needsNamespaceObject(phase, failurePolicy)
        ? lookUpNamespaceObject(deps.namespaceLabels, request)
        : null;
      const found = lookUp(request, chain, selection, notes);
      const { namespaceLabels, extensions, refusal } = found instanceof Promise ? await found : found;
      if (namespaceObject !== null)
        provideNamespaceObject(request, namespaceObject instanceof Promise ? await namespaceObject : namespaceObject);
      const ctx: ReviewContext = {
        request,
        phase,
        deadline: started + budget,
        namespaceLabels,
        extensions,
        notes,
        observer,
        now,
        large,
        exceptions: reviewExceptions(deps.exceptions, request, namespaceLabels, notes),
      };
      const decision =
        refusal ??
        (phase === 'mutate'
          ? await runMutatePhase(chain.planOf(failurePolicy), ctx)
          : await runValidatePhase(chain.stepsOf(phase, failurePolicy), ctx));
      if (extensions) served(chain, observer, phase);
      const response = answerTo(request.uid, decision);
      const warnings = ctx.notes.warnings();
      if (warnings) response.warnings = warnings;
      const annotations = ctx.notes.annotations();
      if (annotations) response.auditAnnotations = annotations;
      observer.notesDropped(ctx.notes.dropped());
      const seconds = (now() - started) / 1000;
      const shadow = deps.shadow && runsShadow(chain, request, selection) ? deps.shadow : undefined;
      const shadowTraced: ShadowStepTrace[] | undefined = shadow && listener ? [] : undefined;
      shadow?.run({
        request,
        phase,
        steps: chain.shadowOf(phase),
        decision,
        namespaceLabels,
        exceptions: deps.exceptions,
        ...(shadowTraced ? { traced: shadowTraced } : {}),
      });
      if (!listener) {
        observer.reviewed(selection.name, response, decision.patch, seconds);
        return { decision, response, reports: observer.reports };
      }
      const end: ReviewEnd = {
        route: selection.name,
        decision,
        response,
        seconds,
        startedAt,
        traceId,
        incoming,
        shadow: shadowTraced,
        shadowSteps: shadowTraced ? chain.shadowOf(phase).length : undefined,
      };
      return tracedEnd(ctx, end, listener);
    },
  };
}
