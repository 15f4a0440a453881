/**
 * A real OTLP/gRPC trace endpoint on 127.0.0.1 (what kube-apiserver's tracing exports to: insecure gRPC,
 * TraceService/Export), served by @grpc/grpc-js with the protocol's messages loaded by @grpc/proto-loader from
 * test/fixtures/otlp/trace-service.proto. Each export is handed on in OTLP/JSON's shape (ids in hex), so the
 * OTLP/HTTP receiver keeps both kinds of span in one list.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const PROTO = fileURLToPath(new URL('../fixtures/otlp/trace-service.proto', import.meta.url));
/** Largest export accepted: the apiserver batches a few hundred spans at most. */
const MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/** OTLP/JSON's attribute value: one of these is set. */
export interface JsonAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
}
interface JsonKeyValue {
  key: string;
  value: JsonAnyValue;
}
/** One export in OTLP/JSON's shape: what the OTLP/HTTP exporters POST. */
export interface JsonTraceExport {
  resourceSpans?: {
    resource?: { attributes?: JsonKeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: JsonKeyValue[];
        status?: { code?: number; message?: string };
        events?: { name: string; attributes?: JsonKeyValue[] }[];
      }[];
    }[];
  }[];
}

/** The decoded protobuf messages (proto-loader with `longs: String`, `oneofs: true`; bytes as Buffers). */
interface ProtoKeyValue {
  key: string;
  value?: JsonAnyValue & { value?: string };
}
interface ProtoSpan {
  traceId: Buffer;
  spanId: Buffer;
  parentSpanId: Buffer;
  name: string;
  kind: number;
  attributes: ProtoKeyValue[];
  events: { name: string; attributes: ProtoKeyValue[] }[];
  status?: { code: number; message: string };
}
interface ProtoExport {
  resourceSpans: { resource?: { attributes: ProtoKeyValue[] }; scopeSpans: { spans: ProtoSpan[] }[] }[];
}

/** A value kind this subset of the protocol does not read (arrays, maps, bytes) is kept as a marker. */
const toJsonKeyValues = (list: readonly ProtoKeyValue[]): JsonKeyValue[] =>
  list.map(({ key, value }) => {
    const { stringValue, boolValue, intValue, doubleValue } = value ?? {};
    const known = { stringValue, boolValue, intValue, doubleValue };
    const set = Object.entries(known).filter(([, v]) => v !== undefined);
    return {
      key,
      value: set.length > 0 ? Object.fromEntries(set) : { stringValue: '(not read by the test receiver)' },
    };
  });

function toJson(request: ProtoExport): JsonTraceExport {
  return {
    resourceSpans: request.resourceSpans.map((rs) => ({
      resource: { attributes: toJsonKeyValues(rs.resource?.attributes ?? []) },
      scopeSpans: rs.scopeSpans.map((ss) => ({
        spans: ss.spans.map((span) => ({
          traceId: span.traceId.toString('hex'),
          spanId: span.spanId.toString('hex'),
          parentSpanId: span.parentSpanId.toString('hex'),
          name: span.name,
          kind: span.kind,
          attributes: toJsonKeyValues(span.attributes),
          status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
          events: span.events.map((e) => ({ name: e.name, attributes: toJsonKeyValues(e.attributes) })),
        })),
      })),
    })),
  };
}

export interface OtlpGrpcServer {
  /** `127.0.0.1:<port>`, as kube-apiserver's TracingConfiguration names an endpoint. */
  readonly endpoint: string;
  close(): Promise<void>;
}

interface TraceServiceDefinition {
  opentelemetry: { proto: { collector: { trace: { v1: { TraceService: grpc.ServiceClientConstructor } } } } };
}

export async function startOtlpGrpcServer(onExport: (body: JsonTraceExport) => void): Promise<OtlpGrpcServer> {
  const definition = await protoLoader.load(PROTO, { longs: String, defaults: true, arrays: true, oneofs: true });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as TraceServiceDefinition;
  const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_MESSAGE_BYTES });
  server.addService(loaded.opentelemetry.proto.collector.trace.v1.TraceService.service, {
    Export: (call: grpc.ServerUnaryCall<ProtoExport, object>, callback: grpc.sendUnaryData<object>) => {
      onExport(toJson(call.request));
      callback(null, {});
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) =>
      err ? reject(err) : resolve(bound),
    ),
  );
  return {
    endpoint: `127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        // Streams an exporter keeps open are cut rather than waited for.
        setTimeout(() => server.forceShutdown(), 1000).unref();
      }),
  };
}
