/**
 * A real OTLP/HTTP trace receiver on 127.0.0.1: it accepts what an OpenTelemetry exporter POSTs to
 * `/v1/traces` as JSON (the encoding of @opentelemetry/exporter-trace-otlp-http, gzip or not), answers as a
 * collector does, and keeps each span flattened: its service, ids, kind, attributes, status and events. With
 * `{ grpc: true }` it also takes OTLP/gRPC exports (kube-apiserver's) on `grpcEndpoint`, into the same list.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { startOtlpGrpcServer, type JsonAnyValue, type JsonTraceExport, type OtlpGrpcServer } from './otlp-grpc.js';
import { conditions } from './wait.js';

export type AttributeValue = string | number | boolean;

export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  /** OTLP's status code (0 unset, 1 ok, 2 error) and message. */
  readonly status: { readonly code: number; readonly message?: string };
  readonly events: readonly { readonly name: string; readonly attributes: Readonly<Record<string, AttributeValue>> }[];
}

export interface OtlpReceiver {
  /** http://127.0.0.1:<port>/v1/traces */
  readonly endpoint: string;
  /** `127.0.0.1:<port>` of the OTLP/gRPC endpoint, with `{ grpc: true }`. */
  readonly grpcEndpoint: string | undefined;
  readonly spans: readonly ReceivedSpan[];
  /** Export requests received (of any content). */
  readonly requests: number;
  /** The headers of the last export request. */
  readonly lastHeaders: http.IncomingHttpHeaders | undefined;
  /** Resolves once `check()` holds, re-checked after every export; rejects after `timeoutMs`. */
  until(what: string, check: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

type OtlpAnyValue = JsonAnyValue;
type OtlpExport = JsonTraceExport;
type OtlpKeyValue = { key: string; value: OtlpAnyValue };

/** Largest export accepted: a test's spans are a few kilobytes. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

function valueOf(value: OtlpAnyValue): AttributeValue {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  throw new Error(`unexpected attribute value ${JSON.stringify(value)}`);
}

function attributesOf(list: OtlpKeyValue[] | undefined): Record<string, AttributeValue> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]));
}

function flatten(body: OtlpExport): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of body.resourceSpans ?? []) {
    const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '');
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        spans.push({
          service,
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? '',
          name: span.name,
          kind: span.kind,
          attributes: attributesOf(span.attributes),
          status: {
            code: span.status?.code ?? 0,
            ...(span.status?.message ? { message: span.status.message } : {}),
          },
          events: (span.events ?? []).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
        });
      }
    }
  }
  return spans;
}

export async function startOtlpReceiver(options: { readonly grpc?: boolean } = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  let requests = 0;
  let lastHeaders: http.IncomingHttpHeaders | undefined;
  const waits = conditions(10_000);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) req.destroy();
      else chunks.push(chunk);
    });
    req.on('end', () => {
      requests++;
      lastHeaders = req.headers;
      let raw = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !req.headers['content-type']?.includes('json')) {
        res.writeHead(415).end();
        return;
      }
      spans.push(...flatten(JSON.parse(raw.toString('utf8')) as OtlpExport));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      waits.notify();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let grpc: OtlpGrpcServer | undefined;
  if (options.grpc) {
    grpc = await startOtlpGrpcServer((body) => {
      requests++;
      spans.push(...flatten(body));
      waits.notify();
    });
  }
  return {
    endpoint: `http://127.0.0.1:${port}/v1/traces`,
    grpcEndpoint: grpc?.endpoint,
    spans,
    get requests() {
      return requests;
    },
    get lastHeaders() {
      return lastHeaders;
    },
    until: waits.until,
    close: async () => {
      await Promise.all([
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
        grpc?.close(),
      ]);
    },
  };
}
