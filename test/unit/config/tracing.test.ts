import assert from 'node:assert/strict';
import { configError, parseConfig as parse } from '../../helpers/config.js';

describe('gateway.yaml tracing', () => {
  it('is off without otlpEndpoint, even with other fields set', () => {
    assert.equal(parse('{}').tracing, undefined);
    assert.equal(parse('tracing: { sampleRatio: 0.5 }').tracing, undefined);
  });

  it('applies every default once an endpoint is set', () => {
    assert.deepEqual(parse('tracing: { otlpEndpoint: "http://collector:4318/v1/traces" }').tracing, {
      otlpEndpoint: 'http://collector:4318/v1/traces',
      serviceName: 'admission-gateway',
      sampleRatio: 1,
      headers: {},
      compression: 'none',
      exportTimeoutMs: 10_000,
      exportDelayMs: 5000,
      maxQueueSize: 2048,
      maxExportBatchSize: 512,
    });
  });

  it('reads every field', () => {
    const yaml = `
tracing:
  otlpEndpoint: https://otel.example:4318/v1/traces
  serviceName: gw-prod
  sampleRatio: 0.25
  headers: { authorization: "Bearer abc", x-tenant: team-a }
  compression: gzip
  exportTimeoutSeconds: 2.5
  exportDelaySeconds: 0.5
  maxQueueSize: 100
  maxExportBatchSize: 50
`;
    assert.deepEqual(parse(yaml).tracing, {
      otlpEndpoint: 'https://otel.example:4318/v1/traces',
      serviceName: 'gw-prod',
      sampleRatio: 0.25,
      headers: { authorization: 'Bearer abc', 'x-tenant': 'team-a' },
      compression: 'gzip',
      exportTimeoutMs: 2500,
      exportDelayMs: 500,
      maxQueueSize: 100,
      maxExportBatchSize: 50,
    });
  });

  it('caps the batch size at a small queue', () => {
    assert.equal(
      parse('tracing: { otlpEndpoint: "http://c:4318/v1/traces", maxQueueSize: 10 }').tracing?.maxExportBatchSize,
      10,
    );
  });

  const refused: [string, string][] = [
    ['otlpEndpoint: collector:4318', 'tracing.otlpEndpoint: expected an http:// or https:// URL, got "collector:4318"'],
    ['otlpEndpoint: not a url', 'tracing.otlpEndpoint: expected an absolute http:// or https:// URL, got "not a url"'],
    [
      'otlpEndpoint: "http://u:p@c:4318/v1/traces"',
      'tracing.otlpEndpoint: must not carry credentials (set tracing.headers)',
    ],
    ['sampleRatio: 1.5', 'tracing.sampleRatio: expected a number from 0 to 1, got 1.5'],
    ['headers: { "bad header": x }', 'tracing.headers.bad header: is not a valid HTTP header name'],
    ['headers: { x-a: "line\\r\\nbreak" }', 'tracing.headers.x-a: expected printable ASCII of at most 8192 characters'],
    ['compression: brotli', 'tracing.compression: expected one of none, gzip, got "brotli"'],
    ['exportTimeoutSeconds: 0', 'tracing.exportTimeoutSeconds: expected a number from 0.1 to 60, got 0'],
    [
      'maxQueueSize: 10, maxExportBatchSize: 11',
      'tracing.maxExportBatchSize: expected an integer from 1 to 10, got 11',
    ],
    ['endpoint: x', 'tracing.endpoint: unknown field'],
  ];
  for (const [fields, message] of refused) {
    it(`refuses ${fields}`, () => {
      assert.match(configError(`tracing: { ${fields} }`), new RegExp(escape(message)));
    });
  }

  it('refuses more than 32 headers', () => {
    const headers = Array.from({ length: 33 }, (_, i) => `h${i}: v`).join(', ');
    assert.match(
      configError(`tracing: { headers: { ${headers} } }`),
      /tracing\.headers: expected at most 32 headers, got 33/,
    );
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
