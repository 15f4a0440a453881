/**
 * The `tracing` section of gateway.yaml (also the provider SDK's `tracing` option): where spans are exported,
 * how many traces are recorded, and the bounds of the export queue. Without `otlpEndpoint` tracing is off.
 */
import { childPath, urlForMessage, type Reader } from './reader.js';
import type { TracingConfig } from './types.js';

export const TRACING_FIELDS = [
  'otlpEndpoint',
  'serviceName',
  'sampleRatio',
  'headers',
  'compression',
  'exportTimeoutSeconds',
  'exportDelaySeconds',
  'maxQueueSize',
  'maxExportBatchSize',
] as const;

export const DEFAULT_TRACING_SERVICE_NAME = 'admission-gateway';

/** The `tracing` section as written (gateway.yaml's fields; the provider SDK's `tracing` option). */
export interface TracingSettings {
  readonly otlpEndpoint?: string;
  readonly serviceName?: string;
  readonly sampleRatio?: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly compression?: 'none' | 'gzip';
  readonly exportTimeoutSeconds?: number;
  readonly exportDelaySeconds?: number;
  readonly maxQueueSize?: number;
  readonly maxExportBatchSize?: number;
}

const MAX_SERVICE_NAME_CHARS = 255;

/** Bounds on the exporter's headers: they go out with every export. */
const MAX_HEADERS = 32;
const MAX_HEADER_VALUE_CHARS = 8192;
const MAX_URL_CHARS = 2048;
/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A header value: visible ASCII and spaces (no CR or LF to split the request with). */
const HEADER_VALUE = /^[\x20-\x7e]*$/;

function readEndpoint(r: Reader, value: unknown, p: string): string {
  const raw = r.requiredString(value, p);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return r.fail(p, 'expected an absolute http:// or https:// URL', urlForMessage(raw));
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    r.fail(p, 'expected an http:// or https:// URL', urlForMessage(raw));
  if (url.username || url.password) r.fail(p, 'must not carry credentials (set tracing.headers)', urlForMessage(raw));
  if (raw.length > MAX_URL_CHARS) r.fail(p, `must be at most ${MAX_URL_CHARS} characters`);
  return raw;
}

function readHeaders(r: Reader, value: unknown, p: string): Record<string, string> {
  // Values are never quoted in a message (not through r.stringMap, which quotes): they are often credentials.
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) r.fail(p, 'expected a map of strings');
  const headers = Object.entries(value as Record<string, unknown>);
  if (headers.length > MAX_HEADERS) r.fail(p, `expected at most ${MAX_HEADERS} headers, got ${headers.length}`);
  for (const [name, v] of headers) {
    if (!HEADER_NAME.test(name)) r.fail(childPath(p, name), 'is not a valid HTTP header name');
    if (typeof v !== 'string') r.fail(childPath(p, name), 'expected a string');
    if (v.length > MAX_HEADER_VALUE_CHARS || !HEADER_VALUE.test(v)) {
      r.fail(childPath(p, name), `expected printable ASCII of at most ${MAX_HEADER_VALUE_CHARS} characters`);
    }
  }
  return Object.fromEntries(headers) as Record<string, string>;
}

/** The tracing settings, or undefined when tracing is off (no `otlpEndpoint`); the other fields are checked anyway. */
export function readTracing(
  r: Reader,
  value: unknown,
  p: string,
  defaultServiceName = DEFAULT_TRACING_SERVICE_NAME,
): TracingConfig | undefined {
  const m = r.map(value, p, TRACING_FIELDS);
  const at = (key: string) => childPath(p, key);
  const maxQueueSize = r.integer(m.maxQueueSize, at('maxQueueSize'), 1, 65_536) ?? 2048;
  const serviceName = r.string(m.serviceName, at('serviceName')) || defaultServiceName;
  if (serviceName.length > MAX_SERVICE_NAME_CHARS) {
    r.fail(at('serviceName'), `must be at most ${MAX_SERVICE_NAME_CHARS} characters`);
  }
  const config: TracingConfig = {
    otlpEndpoint: m.otlpEndpoint === undefined ? '' : readEndpoint(r, m.otlpEndpoint, at('otlpEndpoint')),
    serviceName,
    sampleRatio: r.number(m.sampleRatio, at('sampleRatio'), 0, 1) ?? 1,
    headers: readHeaders(r, m.headers, at('headers')),
    compression: r.oneOf(m.compression, at('compression'), ['none', 'gzip'] as const) ?? 'none',
    exportTimeoutMs: (r.number(m.exportTimeoutSeconds, at('exportTimeoutSeconds'), 0.1, 60) ?? 10) * 1000,
    exportDelayMs: (r.number(m.exportDelaySeconds, at('exportDelaySeconds'), 0.01, 60) ?? 5) * 1000,
    maxQueueSize,
    maxExportBatchSize:
      r.integer(m.maxExportBatchSize, at('maxExportBatchSize'), 1, maxQueueSize) ?? Math.min(512, maxQueueSize),
  };
  return config.otlpEndpoint ? config : undefined;
}
