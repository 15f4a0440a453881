/**
 * The lane of large reviews (`server.largeReviews`): a review whose body is over the threshold is decoded, run
 * through the chain and encoded in a worker thread (worker-pool.ts, lane-worker.ts), so that the event loop
 * serving ordinary reviews, probes and metrics is held by it only to hand it over and write its answer. What
 * the review does is the main lane's: the same reviewer on the same configuration's chain; its memory weighed
 * against the same budget (its body while it waits, then its objects once the worker has decoded it: a review
 * the budget cannot hold is shed as the main lane sheds it); its metric updates, decision trace, recording
 * line and shadow entries brought back to the main thread's registry, trace buffer and recorder. A remote
 * provider's calls cross back too: the worker encodes and verifies, the main thread exchanges the bytes through the
 * provider's one breaker and connection pool (provider-host.ts).
 */
import { encodeReview } from '../admission/codec.js';
import { errored } from '../admission/responses.js';
import { ReviewDecodeError } from '../admission/review-decode-error.js';
import { ADMISSION_V1 } from '../admission/types.js';
import type { BindableLogger } from '../base/log.js';
import type { Chain } from '../chain/chain.js';
import type { LargeReviewsConfig } from '../config/types.js';
import type { NamespaceLabelSource } from '../dispatch/reviewer.js';
import type { GatewayException } from '../exceptions/exception.js';
import type { ExceptionSource } from '../exceptions/exception-source.js';
import type { TraceBuffer } from '../explain/trace-buffer.js';
import { WEIGHT_PER_CONTAINER } from '../http/byte-budget.js';
import { selectionOf, type Route } from '../http/routes.js';
import {
  SHED_RETRY_AFTER_SECONDS,
  answer,
  timeoutParam,
  type ReviewKoaContext,
  type ReviewLane,
} from '../http/review-middleware.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Recorder } from '../recording/recorder.js';
import type { ReviewTrace, ReviewTracer } from '../trace/review-trace.js';
import type { ShadowStepTrace } from '../trace/step-report.js';
import { logRecord } from './forwarded-log.js';
import type { FromWorker, JobMessage, LaneWorkerData, MainCall, ToWorker } from './lane-messages.js';
import { replayMetricCalls } from './metric-calls.js';
import { portableExceptions } from './portable-exceptions.js';
import { ownedBytes } from './owned-bytes.js';
import { restoredKept } from './portable-trace.js';
import { replayTrace } from './lane-trace.js';
import { createProviderHost, type HostedProvider } from './provider-host.js';
import { WorkerPool } from './worker-pool.js';

const MIB = 1024 * 1024;

/**
 * What one started worker holds: its own heap with the gateway's modules and chain loaded (measured;
 * docs/decisions.md, "Large reviews in worker threads"). The default memory budget leaves room for it.
 */
export const WORKER_BYTES = 40 * MIB;

/**
 * What the lane's started workers may hold besides their reviews, for the default memory budget: each worker's
 * own, and its young generation counted whole (a review's garbage may fill it at any time).
 */
export function laneWorkersBytes(config: Pick<LargeReviewsConfig, 'workers' | 'youngGenerationMiB'>): number {
  return config.workers * (WORKER_BYTES + config.youngGenerationMiB * MIB);
}

/**
 * How long past its own timeout a review may run in a worker before the worker is stopped: the apiserver has
 * given up on it by then, and a step computing without end would otherwise hold the worker for good.
 */
const STOP_AFTER_TIMEOUT_MS = 1000;

/** A review's timeout as the worker will read it: `?timeout`, else the default (an unreadable one is refused there). */
function timeoutOf(querystring: string, defaultMs: number): number {
  try {
    return timeoutParam(querystring) ?? defaultMs;
  } catch {
    return defaultMs;
  }
}

/** Kept traces whose shadow entries may still come: the oldest are let go past this many. */
const MAX_SHADOW_PENDING = 1024;

export interface LargeReviewLaneDeps {
  readonly config: LargeReviewsConfig;
  /** server.defaultTimeoutSeconds, in ms: a review's time without `?timeout`. */
  readonly defaultTimeoutMs: number;
  /** What the workers start with: the configuration's source and the plugins' module. */
  readonly workerData: Omit<LaneWorkerData, 'listens' | 'namespaceReferences' | 'namespaceObjects' | 'tracing'>;
  readonly chain: () => Chain;
  /**
   * Whether the chain is still the one the configuration makes, which a worker builds again, and runs as this
   * thread would: false once the cluster has set an entry's steps (ChainManager.entryStepsSet), whose objects only
   * the main thread's watcher holds, or when its policies' authorization checks need this thread's client.
   */
  readonly chainOfConfig: () => boolean;
  readonly metrics: Metrics;
  readonly log: BindableLogger;
  readonly namespaceLabels: NamespaceLabelSource;
  readonly onExtensionServed?: (extension: string) => void;
  /** Where kept traces go (absent: none are kept). */
  readonly traces?: TraceBuffer;
  /** Where sampled reviews are recorded (absent: none are). */
  readonly recorder?: Recorder;
  /** The exceptions in force (their set in force is sent to the workers by `exceptionsChanged`). */
  readonly exceptions: ExceptionSource;
  /** Traces each review (absent: tracing is off); a lane review's spans are made here from what its worker saw. */
  readonly tracing?: ReviewTracer | undefined;
  /** The remote providers of the chain, whose breakers and pools the workers' calls go through. */
  readonly providers: () => readonly HostedProvider[];
}

export interface LargeReviewLane extends ReviewLane {
  /** What its workers hold once all are started, besides the reviews in them. */
  readonly workersBytes: number;
  /** The exceptions in force are now `exceptions` (WatchedExceptions.all): the workers judge by them from now on. */
  exceptionsChanged(exceptions: readonly GatewayException[]): void;
  /** A provider's status may have changed: the workers are told of any breaker that changed state. */
  providersChanged(): void;
  /** Stops the workers (reviews still in them are lost). */
  close(): Promise<void>;
}

export function createLargeReviewLane(deps: LargeReviewLaneDeps): LargeReviewLane {
  const { config, metrics, log } = deps;
  const shadowPending = new Map<number, { entries: ShadowStepTrace[]; left: number }>();
  /** The exceptions in force as the workers were last told, and by reference (a later one of a ref wins). */
  let exceptionsMessage: ToWorker = { type: 'exceptions', exceptions: [] };
  let exceptionsByRef = new Map<string, GatewayException>();

  /** The traces of the jobs running, for the spans of their provider steps, started as each calls out. */
  const traced = new Map<number, ReviewTrace>();
  const providers = createProviderHost({
    providers: deps.providers,
    stepStarted(job, phase, name) {
      const trace = traced.get(job);
      const step =
        trace &&
        deps
          .chain()
          .stepsOf(phase)
          .find((s) => s.name === name);
      return step && trace.stepStarted(step);
    },
  });

  const answerCall = async (call: MainCall): Promise<unknown> => {
    const source = deps.namespaceLabels;
    if (call.method === 'labels') return source.labels(call.namespace);
    if (call.method === 'object') return source.object?.(call.namespace);
    return source.extensions?.(call.namespace);
  };

  const onMessage = (message: FromWorker, reply: (message: ToWorker) => void): void => {
    switch (message.type) {
      case 'metrics':
        return replayMetricCalls(metrics, message.metrics);
      case 'log':
        return logRecord(log, message.record);
      case 'served':
        return deps.onExtensionServed?.(message.extension);
      case 'exception-applied': {
        const exception = exceptionsByRef.get(message.ref);
        return exception && deps.exceptions.applied(message.step, exception);
      }
      case 'exception-used': {
        const exception = exceptionsByRef.get(message.ref);
        return exception && deps.exceptions.used(exception);
      }
      case 'call':
        return void answerCall(message).then(
          (value) => reply({ type: 'reply', call: message.call, value }),
          (err: unknown) => reply({ type: 'reply', call: message.call, error: String(err) }),
        );
      case 'provider-call':
      case 'provider-verdict':
      case 'provider-cancel':
      case 'provider-rejected':
      case 'provider-get':
        return providers.handle(message, reply);
    }
  };

  const pool = new WorkerPool({
    workers: config.workers,
    queue: config.queue,
    // A large review's objects live until its answer: in a young generation of V8's sizing under the pod's heap
    // limit, each is copied by scavenge after scavenge (docs/decisions.md, "Large reviews in worker threads").
    resourceLimits: config.youngGenerationMiB > 0 ? { maxYoungGenerationSizeMb: config.youngGenerationMiB } : undefined,
    workerData: {
      ...deps.workerData,
      listens: deps.traces !== undefined || deps.recorder !== undefined,
      namespaceReferences: deps.namespaceLabels.extensions !== undefined,
      namespaceObjects: deps.namespaceLabels.object !== undefined,
      tracing: deps.tracing !== undefined,
    },
    message: onMessage,
    greeting: () => [exceptionsMessage, providers.states()],
    broken: (err) => log.error({ err: err.message }, 'large-review lane stopped: large reviews run on the event loop'),
  });

  /** The trace the worker kept, into the buffer; its later shadow entries are awaited. */
  const keepTrace = (id: number, message: Extract<JobMessage, { type: 'answer' }>): void => {
    if (!message.kept || !deps.traces) return;
    const restored = restoredKept(message.kept, deps.chain());
    if (!restored) return;
    deps.traces.addKept(restored.kept);
    const { shadow } = restored;
    const left = (message.kept.input.shadowSteps ?? 0) - (shadow?.length ?? 0);
    if (!shadow || left <= 0) return pool.forget(id);
    shadowPending.set(id, { entries: shadow, left });
    if (shadowPending.size > MAX_SHADOW_PENDING) {
      const oldest = shadowPending.keys().next().value!;
      shadowPending.delete(oldest);
      pool.forget(oldest);
    }
  };

  const addShadow = (id: number, entry: ShadowStepTrace): void => {
    const pending = shadowPending.get(id);
    if (!pending) return;
    pending.entries.push(entry);
    if (--pending.left > 0) return;
    shadowPending.delete(id);
    pool.forget(id);
  };

  let nextId = 0;

  return {
    takes(bodyBytes) {
      if (bodyBytes <= config.thresholdBytes || config.workers === 0 || pool.broken) return false;
      return deps.chainOfConfig();
    },

    run(ctx: ReviewKoaContext, body: Buffer): Promise<void> {
      const id = nextId++;
      const route = ctx.path.slice(1);
      const { lease } = ctx.state;
      const { traceparent, tracestate } = ctx.req.headers;
      let trace: ReviewTrace | undefined;
      return new Promise<void>((resolve, reject) => {
        const fail = (err: Error) => {
          traced.delete(id);
          pool.forget(id);
          reject(err);
        };
        const handle = pool.submit(
          {
            type: 'review',
            id,
            body: ownedBytes(body),
            route,
            query: ctx.querystring,
            ...(typeof traceparent === 'string' ? { traceparent } : {}),
            ...(typeof tracestate === 'string' ? { tracestate } : {}),
            receivedAt: Date.now(),
            record: deps.recorder?.samples(route) ?? false,
          },
          {
            lost: fail,
            message(message) {
              switch (message.type) {
                case 'decoded': {
                  ctx.state.echo = { uid: message.uid, apiVersion: message.apiVersion };
                  try {
                    lease.take(message.containers * WEIGHT_PER_CONTAINER);
                  } catch (err) {
                    handle?.send({ type: 'drop', id });
                    // Its body is let go now, as readReview lets a shed review's go.
                    lease.release();
                    return fail(err as Error);
                  }
                  // Started where the main lane starts it: once the review is decoded, before its chain.
                  trace = deps.tracing?.startReview(message.traced, selectionOf(route as Route).phase, route, {
                    traceparent,
                    tracestate,
                  });
                  if (trace) traced.set(id, trace);
                  return handle?.send({ type: 'proceed', id, ...(trace ? { traceId: trace.traceId } : {}) });
                }
                case 'refused':
                  traced.delete(id);
                  lease.release();
                  return fail(new ReviewDecodeError(message.message, message.status, message.uid, message.apiVersion));
                case 'failed':
                  replayMetricCalls(metrics, message.metrics);
                  return fail(new Error(message.message));
                case 'answer': {
                  traced.delete(id);
                  replayMetricCalls(metrics, message.metrics);
                  const answered = Buffer.from(message.body.buffer, message.body.byteOffset, message.body.byteLength);
                  lease.force(answered.length);
                  answer(ctx, 200, answered);
                  if (message.record) {
                    const { record } = message;
                    const uid = ctx.state.echo?.uid ?? '';
                    deps.recorder?.append(uid, () => {
                      if ('line' in record) return record.line;
                      throw new Error(record.error);
                    });
                  }
                  keepTrace(id, message);
                  if (trace && message.trace) {
                    const phase = selectionOf(route as Route).phase;
                    const steps = new Map(
                      deps
                        .chain()
                        .stepsOf(phase)
                        .map((step) => [step.name, step]),
                    );
                    replayTrace(trace, message.trace, ctx.state.echo?.uid ?? '', (name) => steps.get(name));
                  }
                  if (!shadowPending.has(id)) pool.forget(id);
                  return resolve();
                }
                case 'shadow':
                  return addShadow(id, message.entry);
              }
            },
          },
          timeoutOf(ctx.querystring, deps.defaultTimeoutMs) + STOP_AFTER_TIMEOUT_MS,
        );
        if (handle) {
          metrics.largeReviewLaneReviews.inc({ route });
          return;
        }
        // Full: shed as the memory budget sheds, the body let go at once.
        lease.release();
        metrics.shedReviews.inc({ reason: 'large_review_lane' });
        log.warn(
          { route, jobs: pool.jobs, workers: config.workers, queue: config.queue },
          'large review shed: every large-review worker busy and the queue full (answered 429, the apiserver retries)',
        );
        answer(
          ctx,
          429,
          encodeReview(
            ADMISSION_V1,
            errored('', 429, 'the gateway runs as many large reviews as it may (server.largeReviews); retry'),
          ),
        );
        ctx.set('Retry-After', String(SHED_RETRY_AFTER_SECONDS));
        resolve();
      });
    },

    workersBytes: laneWorkersBytes(config),
    exceptionsChanged(exceptions) {
      exceptionsByRef = new Map(exceptions.map((e) => [e.ref, e]));
      exceptionsMessage = { type: 'exceptions', exceptions: portableExceptions(exceptions) };
      pool.broadcast(exceptionsMessage);
    },
    providersChanged() {
      const changed = providers.changedStates();
      if (changed) pool.broadcast(changed);
    },
    close: () => pool.close(),
  };
}
