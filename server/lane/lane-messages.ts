/**
 * What the main thread and a worker of the large-review lane say to each other (worker_threads messages, by
 * structured clone). A job is one review: the main thread sends its body; the worker decodes it and says how
 * much it weighs; the main thread lets it proceed once the memory budget holds it (or drops it); the worker
 * answers with the encoded AdmissionReview, the metric updates, the kept trace and the recording line. Shadow
 * steps finish after the answer and send their entries and updates afterwards. The worker asks the main thread
 * what only it has (a namespace's labels, references and object), is sent the exceptions in force as they change
 * and says which it used, and its log lines are the main thread's to write. A remote provider's call crosses as
 * bytes: the worker's encoded request, the provider's answer, and the worker's verdict on it.
 */
import type { AdmissionApiVersion, KubeObject } from '../admission/types.js';
import type { ExtensionReferences } from '../extensions/extension-references.js';
import type { BreakerState } from '../providers/provider-breaker.js';
import type { Labels } from '../steps/label-selector.js';
import type { SpanRequest } from '../trace/review-trace.js';
import type { ShadowStepTrace } from '../trace/step-report.js';
import type { LogRecord } from './forwarded-log.js';
import type { TraceEvent } from './lane-trace.js';
import type { MetricCall } from './metric-calls.js';
import type { PortableException } from './portable-exceptions.js';
import type { PortableKept } from './portable-trace.js';

/** What a worker is started with (workerData). */
export interface LaneWorkerData {
  /** The configuration's text, file and folder: the worker reads it again (parseConfigText). */
  readonly config: { readonly text: string; readonly file: string; readonly baseDir: string };
  /** The module whose export `name` lists the plugins, as the main thread's chain has them. */
  readonly plugins: { readonly url: string; readonly name: string };
  /** The main thread hears of reviews (onReviewed has listeners: traces kept, or a recording). */
  readonly listens: boolean;
  /** The main thread's namespaces have references (cluster mode): ask it for them. */
  readonly namespaceReferences: boolean;
  /** The main thread reads namespaces whole (cluster mode's cache, for `namespaceObject`): ask it for them. */
  readonly namespaceObjects: boolean;
  /** Tracing is on: each review's hooks are recorded and sent back with its answer (lane-trace.ts). */
  readonly tracing: boolean;
}

/** A review handed to a worker. */
export interface ReviewJob {
  readonly type: 'review';
  readonly id: number;
  /** Its bytes, transferred (the main thread keeps none of them). */
  readonly body: Uint8Array;
  /** The webhook route (routes.ts). */
  readonly route: string;
  /** The request's query string (`?timeout=`). */
  readonly query: string;
  readonly traceparent?: string;
  readonly tracestate?: string;
  /** Date.now() when its body had been read: the time it waits counts against its deadline. */
  readonly receivedAt: number;
  /** The recorder sampled it: the worker makes its recording line. */
  readonly record: boolean;
}

export type ToWorker =
  | ReviewJob
  | { readonly type: 'drop'; readonly id: number }
  /** The review may go on; with tracing on, its trace's id (the main thread's span's). */
  | { readonly type: 'proceed'; readonly id: number; readonly traceId?: string }
  | { readonly type: 'reply'; readonly call: number; readonly value?: unknown; readonly error?: string }
  /** The exceptions in force, whole: sent to a worker before its first job and again whenever they change. */
  | { readonly type: 'exceptions'; readonly exceptions: readonly PortableException[] }
  | ProviderToWorker;

/**
 * A provider call of a worker (provider-host.ts, remote-provider.ts): the worker encodes the AdmissionReview and
 * verifies the answer, the main thread exchanges the bytes through the provider's one pool, inside its one breaker.
 */
export type ProviderToWorker =
  /** The 200's body of call `call`, transferred: the worker answers with a `provider-verdict`. */
  | { readonly type: 'provider-bytes'; readonly call: number; readonly body: Uint8Array }
  /** Call `call` failed (no answer, a status, the breaker open): its ProviderCallError's reason and message. */
  | { readonly type: 'provider-failed'; readonly call: number; readonly failure: ProviderFailure }
  /** The discovery document asked for by `provider-get` `call`. */
  | { readonly type: 'provider-json'; readonly call: number; readonly value: unknown }
  /** Each provider's breaker state, whole: sent before a worker's first job and again whenever one changes. */
  | { readonly type: 'breakers'; readonly states: Readonly<Record<string, BreakerState>> };

export interface ProviderFailure {
  readonly reason: string;
  readonly message: string;
}

export type ProviderFromWorker =
  | {
      readonly type: 'provider-call';
      readonly call: number;
      readonly provider: string;
      /** The request target, `?timeout=` included. */
      readonly path: string;
      /** The encoded AdmissionReview, transferred. */
      readonly body: Uint8Array;
      readonly timeoutMs: number;
      readonly traceHeaders?: readonly string[] | undefined;
    }
  /** Whether the bytes of call `call` were a valid answer (no failure) or not: the breaker counts it so. */
  | { readonly type: 'provider-verdict'; readonly call: number; readonly failure?: ProviderFailure }
  /** Call `call`'s deadline passed in the worker: the exchange is aborted. */
  | { readonly type: 'provider-cancel'; readonly call: number }
  /** A call failed fast in the worker behind the open breaker: counted into the breaker's rejects. */
  | { readonly type: 'provider-rejected'; readonly provider: string }
  /** A discovery GET of `path` under the provider's URL. */
  | {
      readonly type: 'provider-get';
      readonly call: number;
      readonly provider: string;
      readonly path: string;
      readonly timeoutMs: number;
    };

/** What the main thread answers for the worker (see LaneWorkerData.namespaceReferences). */
export type MainCall =
  | { readonly method: 'labels'; readonly namespace: string }
  | { readonly method: 'extensions'; readonly namespace: string }
  | { readonly method: 'object'; readonly namespace: string };

export type MainCallResult = Labels | undefined | ExtensionReferences | KubeObject;

/** A job's messages, in the order they come; `refused`, `failed` or `answer` ends it (shadow entries may follow). */
export type JobMessage =
  | {
      readonly type: 'decoded';
      readonly id: number;
      readonly uid: string;
      /** What the review's span says of its request. */
      readonly traced: SpanRequest;
      readonly apiVersion: AdmissionApiVersion;
      readonly containers: number;
    }
  | {
      /** Not a review (ReviewDecodeError): answered as readReview answers it. */
      readonly type: 'refused';
      readonly id: number;
      readonly message: string;
      readonly status: 400 | 408 | 413 | 415;
      readonly uid: string;
      readonly apiVersion: AdmissionApiVersion | undefined;
    }
  | {
      readonly type: 'answer';
      readonly id: number;
      /** The encoded AdmissionReview, transferred. */
      readonly body: Uint8Array;
      readonly metrics: readonly MetricCall[];
      readonly kept?: PortableKept;
      /** What its trace's hooks were told, when tracing is on. */
      readonly trace?: readonly TraceEvent[];
      /** The recording line, or why it could not be made. */
      readonly record?: { readonly line: string } | { readonly error: string };
    }
  | { readonly type: 'failed'; readonly id: number; readonly message: string; readonly metrics: readonly MetricCall[] }
  /** A shadow step's entry in the kept trace, finished after the answer (only for a job whose trace is kept). */
  | { readonly type: 'shadow'; readonly id: number; readonly entry: ShadowStepTrace };

export type FromWorker =
  | JobMessage
  | { readonly type: 'ready' }
  | { readonly type: 'broken'; readonly message: string }
  | { readonly type: 'metrics'; readonly metrics: readonly MetricCall[] }
  | { readonly type: 'log'; readonly record: LogRecord }
  | { readonly type: 'served'; readonly extension: string }
  /** An exception let a review's step off or warned of it: ExceptionSource.applied. */
  | { readonly type: 'exception-applied'; readonly step: string; readonly ref: string }
  /** A review used an exception (once per review): ExceptionSource.used. */
  | { readonly type: 'exception-used'; readonly ref: string }
  | ({ readonly type: 'call'; readonly call: number } & MainCall)
  | ProviderFromWorker;
