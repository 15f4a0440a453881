/**
 * The chain's tracer (trace/review-trace.ts) made with the OpenTelemetry SDK: a span per review, continued
 * from the caller's W3C `traceparent`, and a span per step invocation below it, whose trace context a provider
 * step sends on. Spans are batched (BatchSpanProcessor) and exported as OTLP/HTTP JSON. Loaded only when
 * tracing is configured (start-tracing.ts), so that a gateway without it never loads the SDK.
 *
 * Everything the SDK would otherwise read from OTEL_* environment variables (sampler, limits, batching,
 * timeout, compression) is set here from gateway.yaml; the exporter still adds the headers and TLS files
 * of OTEL_EXPORTER_OTLP_* variables to what gateway.yaml leaves unset (docs/configuration.md, "tracing").
 */
import { performance } from 'node:perf_hooks';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
  type Tracer,
} from '@opentelemetry/api';
import { ExportResultCode, W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { kindName } from '../admission/kind-name.js';
import type { AdmissionResponse, Phase } from '../admission/types.js';
import type { StepFailedError } from '../base/errors.js';
import { clip } from '../base/limits.js';
import type { Logger } from '../base/log.js';
import { packageVersion } from '../base/version.js';
import { shown } from '../steps/policy.js';
import type { StepReport } from '../trace/step-report.js';
import type { IncomingHeaders, ReviewTrace, ReviewTracer, SpanRequest } from '../trace/review-trace.js';
import type { Step } from '../steps/step.js';
import type { TracingConfig } from '../config/types.js';
import type { Metrics } from '../metrics/metrics.js';

/** A started tracer and its exporter: `shutdown` exports what is still queued, within the export timeout. */
export interface GatewayTracing extends ReviewTracer {
  /** Exports the spans ended so far (tests, and before stopping). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

export interface TracingDeps {
  readonly log: Logger;
  /** Counts exported and failed spans; absent in the provider SDK without metrics. */
  readonly metrics?: Metrics;
}

/** The exporter's compression enum, which its package does not export: its values are `none` and `gzip`. */
type Compression = NonNullable<NonNullable<ConstructorParameters<typeof OTLPTraceExporter>[0]>['compression']>;

/** Span limits, so that nothing of a review's size reaches the exporter: every value is bounded already. */
const SPAN_LIMITS = {
  attributeValueLengthLimit: 4096,
  attributeCountLimit: 64,
  linkCountLimit: 0,
  eventCountLimit: 128,
  attributePerEventCountLimit: 8,
  attributePerLinkCountLimit: 0,
};

/** Reads a header of node's IncomingHttpHeaders (lowercase names; a repeated one is a list). */
const headerGetter: TextMapGetter<IncomingHeaders> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key] as string | string[] | undefined,
};

const headerSetter: TextMapSetter<Record<string, string>> = {
  set: (carrier, key, value) => void (carrier[key] = value),
};

/** Writes the trace context as flat header name/value pairs, as the provider client sends headers. */
function injected(propagator: W3CTraceContextPropagator, context: Context): readonly string[] {
  const carrier: Record<string, string> = {};
  propagator.inject(context, carrier, headerSetter);
  const headers: string[] = [];
  for (const [name, value] of Object.entries(carrier)) headers.push(name, value);
  return headers;
}

function kindOf(request: SpanRequest): string {
  return clip(kindName(request.kind));
}

function reviewAttributes(request: SpanRequest, phase: Phase, route: string): Attributes {
  const attributes: Attributes = {
    'admission.uid': clip(request.uid),
    'admission.operation': request.operation,
    'admission.kind': kindOf(request),
    'admission.phase': phase,
    'admission.route': route,
    'admission.dry_run': request.dryRun === true,
  };
  if (request.namespace !== undefined) attributes['admission.namespace'] = clip(request.namespace);
  if (request.name !== undefined) attributes['admission.name'] = clip(request.name);
  return attributes;
}

function stepAttributes(step: Step): Attributes {
  return {
    'admission.step.name': step.name,
    'admission.step.source': step.source,
    'admission.step.extension': step.extension,
    'admission.step.phase': step.phase,
    'admission.step.failure_policy': step.failurePolicy,
    'admission.step.mode': step.mode,
  };
}

/** What ends a step's span: its outcome, and for a failure the reason and an ERROR status. */
function endStepSpan(span: Span, report: StepReport, failure: StepFailedError | undefined, at?: number): void {
  span.setAttribute('admission.step.outcome', report.outcome);
  span.setAttribute('admission.step.round', report.round ?? 0);
  if (report.failedOpen) span.setAttribute('admission.step.failed_open', true);
  if (failure) {
    span.setAttribute('admission.step.failure_reason', failure.reason);
    span.setStatus({ code: SpanStatusCode.ERROR, message: shown(failure.message) });
  }
  span.end(at);
}

class OtelReviewTrace implements ReviewTrace {
  readonly traceId: string;
  private readonly context: Context;
  /** Each step's span from its start to its report: a step never runs twice at once within a review. */
  private readonly open = new Map<Step, Span>();
  /** An unsampled review records nothing: its steps get no spans, and pass on the review's context. */
  private readonly recording: boolean;
  private reviewHeaders: readonly string[] | undefined;

  constructor(
    private readonly tracer: Tracer,
    private readonly propagator: W3CTraceContextPropagator,
    private readonly span: Span,
  ) {
    this.traceId = span.spanContext().traceId;
    this.context = trace.setSpan(ROOT_CONTEXT, span);
    this.recording = span.isRecording();
  }

  stepStarted(step: Step, at?: number): readonly string[] {
    // Unsampled: a provider still learns the trace, and that it is not sampled.
    if (!this.recording) return (this.reviewHeaders ??= injected(this.propagator, this.context));
    const span = this.startStep(step, at);
    this.open.set(step, span);
    return injected(this.propagator, trace.setSpan(this.context, span));
  }

  /**
   * `startTime`: a performance.now() value (OpenTelemetry dates it from the time origin), or milliseconds since the
   * epoch (larger than the time origin, so taken as such); undefined: now.
   */
  private startStep(step: Step, startTime: number | undefined): Span {
    return this.tracer.startSpan(
      'admission.step',
      {
        kind: step.source === 'provider' ? SpanKind.CLIENT : SpanKind.INTERNAL,
        attributes: stepAttributes(step),
        ...(startTime !== undefined ? { startTime } : {}),
      },
      this.context,
    );
  }

  stepSettled(step: Step, report: StepReport, failure: StepFailedError | undefined, at?: number): void {
    if (!this.recording) return;
    let span = this.open.get(step);
    if (span) this.open.delete(step);
    // A step that never asked for its trace context (a plugin), or failed before it ran: dated from its start.
    else span = this.startStep(step, (at ?? performance.now()) - report.ms);
    endStepSpan(span, report, failure, at);
  }

  stepSkipped(step: Step, reason: string, at?: number): void {
    if (!this.recording) return;
    this.span.addEvent(
      'step skipped',
      { 'admission.step.name': step.name, 'admission.step.skip_reason': clip(reason) },
      at,
    );
  }

  reviewed(response: AdmissionResponse, patchOps: number, at?: number): void {
    const { span } = this;
    if (!this.recording) {
      span.end(at);
      return;
    }
    // A step of a concurrent level that answered after an earlier one ended the review: never settled.
    for (const open of this.open.values()) {
      open.setAttribute('admission.step.outcome', 'unsettled');
      open.end(at);
    }
    this.open.clear();
    span.setAttribute('admission.allowed', response.allowed);
    span.setAttribute('admission.patch_ops', patchOps);
    if (response.status?.code !== undefined) span.setAttribute('admission.code', response.status.code);
    span.end(at);
  }
}

/** Counts what each export came to, and says once when exporting starts failing (and when it works again). */
class CountingExporter implements SpanExporter {
  private failing = false;

  constructor(
    private readonly inner: SpanExporter,
    private readonly deps: TracingDeps,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      const ok = result.code === ExportResultCode.SUCCESS;
      this.deps.metrics?.tracingSpans.inc({ result: ok ? 'exported' : 'failed' }, spans.length);
      if (ok === this.failing) {
        this.failing = !ok;
        if (ok) this.deps.log.info({}, 'trace export works again');
        else this.deps.log.warn({ err: shown(result.error?.message ?? 'unknown error') }, 'trace export failed');
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

export function createOtelTracing(config: TracingConfig, deps: TracingDeps): GatewayTracing {
  const exporter = new OTLPTraceExporter({
    url: config.otlpEndpoint,
    headers: { ...config.headers },
    compression: config.compression as Compression,
    timeoutMillis: config.exportTimeoutMs,
  });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: config.serviceName,
      [ATTR_SERVICE_VERSION]: packageVersion(),
    }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sampleRatio) }),
    spanLimits: SPAN_LIMITS,
    generalLimits: { attributeValueLengthLimit: SPAN_LIMITS.attributeValueLengthLimit, attributeCountLimit: 64 },
    spanProcessors: [
      new BatchSpanProcessor(new CountingExporter(exporter, deps), {
        maxQueueSize: config.maxQueueSize,
        maxExportBatchSize: config.maxExportBatchSize,
        scheduledDelayMillis: config.exportDelayMs,
        exportTimeoutMillis: config.exportTimeoutMs,
      }),
    ],
  });
  const tracer = provider.getTracer('admission-gateway', packageVersion());
  const propagator = new W3CTraceContextPropagator();

  return {
    startReview(request, phase, route, incoming) {
      // An absent or malformed traceparent leaves the root context: the review starts a trace of its own.
      const parent = incoming ? propagator.extract(ROOT_CONTEXT, incoming, headerGetter) : ROOT_CONTEXT;
      // The sampler decides on the trace id alone: the attributes are made only for a span that records.
      const span = tracer.startSpan('admission.review', { kind: SpanKind.SERVER }, parent);
      if (span.isRecording()) span.setAttributes(reviewAttributes(request, phase, route));
      return new OtelReviewTrace(tracer, propagator, span);
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
