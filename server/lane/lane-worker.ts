/**
 * A worker thread of the large-review lane: it reads the gateway's configuration again, builds the same chain
 * with the compiled-in plugins, and runs the reviews the main thread hands it one at a time — decode, the
 * chain, encode — with the main lane's reviewer, so that a large review holds this thread, not the event loop
 * that serves ordinary reviews and probes. What is the main thread's stays there: metric updates, log lines,
 * kept traces, recording lines and shadow entries go back to it (lane-messages.ts), and it answers what only
 * it knows (a namespace's labels and references, in cluster mode).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { Registry } from 'prom-client';
import { decodeReview, encodeReview, type DecodedReview } from '../admission/codec.js';
import { ReviewDecodeError } from '../admission/review-decode-error.js';
import { errorMessage } from '../base/errors.js';
import type { AnyPlugin } from '../chain/plugin-registry.js';
import { parseConfigText } from '../config/load.js';
import type { GatewayConfig } from '../config/types.js';
import { createReviewer, type NamespaceLabelSource, type ReviewedRequest } from '../dispatch/reviewer.js';
import { ShadowRunner, type ShadowRun } from '../dispatch/shadow.js';
import { keptInput } from '../explain/kept-trace.js';
import { keepsTrace } from '../explain/trace-buffer.js';
import type { KubeObject } from '../admission/types.js';
import { createExceptionStore } from '../exceptions/exception-source.js';
import type { ExtensionReferences } from '../extensions/extension-references.js';
import { ROUTES, selectionOf, type Route } from '../http/routes.js';
import { timeoutParam } from '../http/review-middleware.js';
import { createMetrics } from '../metrics/metrics.js';
import { createChainForConfig } from '../providers/configured-chain.js';
import { recordedReviewOf } from '../recording/recorded-review.js';
import { compileRedaction } from '../recording/redact.js';
import type { Labels } from '../steps/label-selector.js';
import type { ShadowStepTrace } from '../trace/step-report.js';
import { forwardingLogger } from './forwarded-log.js';
import type {
  FromWorker,
  JobMessage,
  LaneWorkerData,
  MainCall,
  MainCallResult,
  ProviderToWorker,
  ReviewJob,
  ToWorker,
} from './lane-messages.js';
import { recordMetricCalls, type MetricCall } from './metric-calls.js';
import { recordingTracer, type TraceEvent } from './lane-trace.js';
import { ownedBytes } from './owned-bytes.js';
import { restoredExceptions } from './portable-exceptions.js';
import { createRemoteProviders } from './remote-provider.js';
import { portableKept, type PortableKept } from './portable-trace.js';
import { lowerThreadPriority } from './thread-priority.js';

const port = parentPort!;
const data = workerData as LaneWorkerData;

const post = (message: FromWorker, transfer?: ArrayBuffer[]): void => port.postMessage(message, transfer);

let pendingMetrics: MetricCall[] = [];
let flushScheduled = false;
/** The updates made since the last message that carried them. */
const takeMetrics = (): MetricCall[] => {
  const calls = pendingMetrics;
  pendingMetrics = [];
  return calls;
};
/** Updates made after a job's answer (its shadow steps) go in a message of their own, a turn later. */
const recordCall = (call: MetricCall): void => {
  pendingMetrics.push(call);
  if (flushScheduled) return;
  flushScheduled = true;
  setImmediate(() => {
    flushScheduled = false;
    if (pendingMetrics.length > 0) post({ type: 'metrics', metrics: takeMetrics() });
  });
};

let nextCall = 0;
const calls = new Map<number, { resolve(value: MainCallResult): void; reject(err: Error): void }>();
/** Asks the main thread. */
function ask(call: MainCall): Promise<MainCallResult> {
  const id = nextCall++;
  return new Promise((resolve, reject) => {
    calls.set(id, { resolve, reject });
    post({ type: 'call', call: id, ...call });
  });
}

/** Jobs waiting for the main thread to say whether they proceed (and their trace's id, tracing on). */
const admissions = new Map<number, (proceed: { traceId?: string | undefined } | undefined) => void>();
/** Jobs whose trace was sent: how many more shadow entries each expects. */
const shadowExpected = new Map<number, number>();

/** The job being reviewed (one at a time), for the reviewer's listener and shadow runs. */
let current:
  | {
      readonly job: Omit<ReviewJob, 'body'>;
      readonly traceId: string;
      readonly trace: TraceEvent[];
      kept?: PortableKept;
      record?: { line: string } | { error: string };
    }
  | undefined;

function readConfig(): GatewayConfig {
  const { text, file, baseDir } = data.config;
  return parseConfigText(text, file, baseDir);
}

/** The providers' calls go through the main thread's pools and breakers; its answers about them come any time. */
const providers = createRemoteProviders(post);
port.on('message', (message: ToWorker) => {
  if (message.type.startsWith('provider-') || message.type === 'breakers')
    providers.received(message as ProviderToWorker);
});

async function start() {
  const config = readConfig();
  const module = (await import(data.plugins.url)) as Record<string, unknown>;
  const plugins = module[data.plugins.name] as readonly AnyPlugin[];
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
  recordMetricCalls(metrics, recordCall);
  const log = forwardingLogger(config.log.level, (record) => {
    try {
      post({ type: 'log', record });
    } catch {
      // A field that does not clone (a function, an error object): the line as JSON has what pino would write.
      post({ type: 'log', record: JSON.parse(JSON.stringify(record)) as typeof record });
    }
  });
  const { niceness } = config.server.largeReviews;
  const notLowered = lowerThreadPriority(niceness);
  if (notLowered) log.warn({ niceness, reason: notLowered }, "large-review worker runs at the event loop's priority");
  const chains = await createChainForConfig(config, plugins, {
    metrics,
    log,
    onChain: () => undefined,
    providerParts: {
      client: (entry, target) => providers.client(entry.name, target),
      breaker: (entry) => providers.breaker(entry.name),
    },
  });
  // The discovered handlers are the chain's steps: a worker takes reviews once its providers have been asked.
  await Promise.all(chains.runtimes().map((runtime) => runtime.discover()));
  const namespaceLabels: NamespaceLabelSource = {
    labels: (namespace) => ask({ method: 'labels', namespace }) as Promise<Labels | undefined>,
    ...(data.namespaceReferences
      ? { extensions: (namespace) => ask({ method: 'extensions', namespace }) as Promise<ExtensionReferences> }
      : {}),
    ...(data.namespaceObjects
      ? { object: (namespace) => ask({ method: 'object', namespace }) as Promise<KubeObject | undefined> }
      : {}),
  };
  // Empty until the main thread sends the set in force, which it does before the first job.
  const exceptions = createExceptionStore({
    allowedSteps: config.exceptions.allowedSteps,
    onApplied: (step, exception) => post({ type: 'exception-applied', step, ref: exception.ref }),
    onUsed: (exception) => post({ type: 'exception-used', ref: exception.ref }),
  });
  const { explain } = config;
  const redaction = compileRedaction(config.record.redact);
  const heard = (reviewed: ReviewedRequest): void => {
    if (!current) return;
    if (keepsTrace(explain.bufferSize, explain.keep, reviewed.notable)) {
      const kept = keptInput(reviewed.traceInput, { includeObjects: explain.includeObjects, redaction });
      current.kept = portableKept(kept);
    }
    if (current.job.record) {
      try {
        current.record = { line: JSON.stringify(recordedReviewOf(reviewed, redaction)) };
      } catch (err) {
        current.record = { error: errorMessage(err) };
      }
    }
  };
  const runner = new ShadowRunner({ metrics, log, now: () => performance.now() });
  const shadow = {
    run(run: ShadowRun): void {
      const id = current?.job.id;
      const traced = run.traced;
      if (traced && id !== undefined) {
        const push = traced.push.bind(traced);
        // Entries pushed before the answer travel with its trace; those after it follow as messages.
        traced.push = (...entries: ShadowStepTrace[]) => {
          const left = shadowExpected.get(id);
          if (left !== undefined) {
            for (const entry of entries) post({ type: 'shadow', id, entry });
            if (left - entries.length <= 0) shadowExpected.delete(id);
            else shadowExpected.set(id, left - entries.length);
          }
          return push(...entries);
        };
      }
      runner.run(run);
    },
  };
  const reviewer = createReviewer({
    chain: () => chains.current(),
    metrics,
    log,
    namespaceLabels,
    deadlineMarginMs: config.server.deadlineMarginMs,
    defaultTimeoutMs: config.server.defaultTimeoutSeconds * 1000,
    ...(data.namespaceReferences ? { onExtensionServed: (extension) => post({ type: 'served', extension }) } : {}),
    ...(data.listens ? { onReviewed: heard } : {}),
    ...(config.explain.auditAnnotation && explain.bufferSize > 0 ? { annotateTrace: explain.keep } : {}),
    shadow,
    exceptions,
    ...(data.tracing
      ? {
          tracing: recordingTracer(
            () => current?.traceId ?? '',
            (event) => current?.trace.push(event),
            () => current?.job.id,
          ),
        }
      : {}),
  });
  return { reviewer, log, exceptions };
}

type Lane = Awaited<ReturnType<typeof start>>;

const sendJob = (message: JobMessage, transfer?: ArrayBuffer[]) => post(message, transfer);

/** The answer as bytes the main thread takes over without a copy (a string is made bytes here, not there). */
function transferable(body: string | Buffer): { body: Uint8Array; transfer: ArrayBuffer[] } {
  const bytes = ownedBytes(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
  return { body: bytes, transfer: [bytes.buffer] };
}

/** The text of a job's body, which `body` holds no more. */
function textOf(body: { bytes?: Uint8Array | undefined }): string {
  const { bytes } = body;
  body.bytes = undefined;
  return bytes ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8') : '';
}

/**
 * Runs one job. Its body is taken from `body` (and let go) as it is decoded: the objects, not the text, are what
 * the review holds from then on.
 */
async function review(lane: Lane, job: Omit<ReviewJob, 'body'>, body: { bytes?: Uint8Array }): Promise<void> {
  const { id } = job;
  let decoded: DecodedReview;
  try {
    decoded = decodeReview(textOf(body));
  } catch (err) {
    if (!(err instanceof ReviewDecodeError)) throw err;
    const { message, status, uid, apiVersion } = err;
    return sendJob({ type: 'refused', id, message, status, uid, apiVersion });
  }
  const { request, apiVersion, containers } = decoded;
  const { uid, operation, kind, namespace, name, dryRun } = request;
  const traced = { uid, operation, kind, namespace, name, dryRun };
  sendJob({ type: 'decoded', id, uid, traced, apiVersion, containers });
  const proceed = await new Promise<{ traceId?: string | undefined } | undefined>((resolve) =>
    admissions.set(id, resolve),
  );
  if (!proceed) return;
  let timeoutMs: number | undefined;
  try {
    timeoutMs = timeoutParam(job.query);
  } catch (err) {
    if (!(err instanceof ReviewDecodeError)) throw err;
    return sendJob({ type: 'refused', id, message: err.message, status: err.status, uid: request.uid, apiVersion });
  }
  current = { job, traceId: proceed.traceId ?? '', trace: [] };
  try {
    const { response } = await lane.reviewer.review(request, selectionOf(job.route as Route), {
      timeoutMs,
      incoming: {
        ...(job.traceparent ? { traceparent: job.traceparent } : {}),
        ...(job.tracestate ? { tracestate: job.tracestate } : {}),
      },
      waitedMs: Math.max(0, Date.now() - job.receivedAt),
    });
    const { body, transfer } = transferable(encodeReview(apiVersion, response));
    const { kept, record, trace } = current;
    if (kept?.input.shadowSteps) {
      const left = kept.input.shadowSteps - (kept.input.shadow?.length ?? 0);
      if (left > 0) shadowExpected.set(id, left);
    }
    sendJob(
      {
        type: 'answer',
        id,
        body,
        metrics: takeMetrics(),
        ...(kept ? { kept } : {}),
        ...(record ? { record } : {}),
        ...(data.tracing ? { trace } : {}),
      },
      transfer,
    );
  } finally {
    current = undefined;
  }
}

async function main(): Promise<void> {
  let lane: Lane;
  try {
    lane = await start();
  } catch (err) {
    post({ type: 'broken', message: errorMessage(err) });
    return;
  }
  let queue = Promise.resolve();
  port.on('message', (message: ToWorker) => {
    switch (message.type) {
      case 'review': {
        if (!(ROUTES as readonly string[]).includes(message.route)) return;
        const { body: bytes, ...job } = message;
        const body = { bytes };
        // One at a time: a job starts when the one before has answered.
        queue = queue.then(() =>
          review(lane, job, body).catch((err: unknown) =>
            sendJob({ type: 'failed', id: job.id, message: errorMessage(err), metrics: takeMetrics() }),
          ),
        );
        return;
      }
      case 'proceed':
      case 'drop': {
        const admit = admissions.get(message.id);
        admissions.delete(message.id);
        admit?.(message.type === 'proceed' ? { traceId: message.traceId } : undefined);
        return;
      }
      case 'exceptions':
        return lane.exceptions.set(restoredExceptions(message.exceptions));
      case 'reply': {
        const waiting = calls.get(message.call);
        calls.delete(message.call);
        if (message.error !== undefined) waiting?.reject(new Error(message.error));
        else waiting?.resolve(message.value as MainCallResult);
        return;
      }
    }
  });
  post({ type: 'ready' });
}

void main();
