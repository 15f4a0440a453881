/**
 * Starts the real gateway (startGateway, the composition root `serve` uses) on 127.0.0.1 with ephemeral
 * ports and a freshly generated CA + serving certificate in its own temporary directory, and talks to it
 * over real HTTPS with undici, trusting only that CA. Every harness has its own prom-client Registry (the
 * gateway creates one), its own log capture and its own directory; `close()` releases all of it.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Agent, request, type Dispatcher } from 'undici';
import { parse, stringify } from 'yaml';
import { generateCertificates, writeCertificates, type CertificateBundle } from '../../certs/generate.js';
import { availablePlugins } from '../../plugins/index.js';
import type { AdmissionResponse } from '../../server/admission/types.js';
import type { AnyPlugin } from '../../server/chain/plugin-registry.js';
import { parseConfigText } from '../../server/config/load.js';
import { startGateway, type Gateway, type GatewayOptions } from '../../server/gateway.js';
import { createLogger } from '../../server/base/log.js';

/** One pino line, parsed. */
export type LogLine = Record<string, unknown> & { readonly msg?: string; readonly level?: string };

export interface HarnessOptions {
  /**
   * gateway.yaml text. `server.host`/`opsHost`/`healthHost` (127.0.0.1), `port`/`opsPort`/`healthPort`
   * (0), the TLS files (in a fresh temporary directory, so they are generated) and `shutdownTimeoutSeconds`
   * (5) are filled in unless the text sets them.
   */
  readonly yaml: string;
  /** Plugins available besides the shipped ones (e.g. `createTestPlugins().plugins`). */
  readonly plugins?: readonly AnyPlugin[];
  /**
   * Let the gateway generate its own CA and certificate (as a first `npm start` does). By default the
   * harness writes one bundle generated once per test process: RSA key generation dominates start-up.
   */
  readonly generateCertificates?: boolean;
  /** Discovery backoff of remote providers (short in tests). */
  readonly discovery?: GatewayOptions['discovery'];
  /** Where namespace labels and references come from, as cluster mode's cache gives them (default: none). */
  readonly namespaceLabels?: GatewayOptions['namespaceLabels'];
  /** Hears of each opt-in extension served, as cluster mode does. */
  readonly onExtensionServed?: GatewayOptions['onExtensionServed'];
  /** Guard the ops port (HTTPS, callers checked by an apiserver), as cluster mode does with server.opsAuth kube. */
  readonly opsAccess?: GatewayOptions['opsAccess'];
  /** Where the large-review lane's workers load the plugins from (GatewayOptions.pluginsModule). */
  readonly pluginsModule?: GatewayOptions['pluginsModule'];
  /** Hears of each exception a review used, as cluster mode does. */
  readonly onExceptionUsed?: GatewayOptions['onExceptionUsed'];
}

let sharedBundle: CertificateBundle | undefined;

export interface HttpAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly text: string;
  /** The body parsed as JSON when it is JSON, else the text. */
  readonly body: unknown;
}

/** An AdmissionReview answer as the apiserver reads it. */
export interface AnswerReview {
  readonly apiVersion: string;
  readonly kind: string;
  readonly response: AdmissionResponse;
}

export type RequestBody = string | Buffer | AsyncIterable<Buffer> | object;

export interface Harness {
  readonly gateway: Gateway;
  /** The temporary directory holding gateway.yaml and the generated ca.crt, tls.crt, tls.key. */
  readonly dir: string;
  /** The generated CA certificate (PEM) the client trusts. */
  readonly ca: Buffer;
  /** Everything the gateway logged (level debug and up), parsed. */
  readonly logs: readonly LogLine[];
  /** POSTs to the webhook server; an object body is sent as JSON with Content-Type application/json. */
  post(path: string, body: RequestBody, headers?: Record<string, string>): Promise<HttpAnswer>;
  /** POSTs a review and returns the answering AdmissionReview; throws on anything but HTTP 200 with one. */
  review(path: string, review: object): Promise<AnswerReview>;
  /** Any method to the webhook server. */
  send(
    method: Dispatcher.HttpMethod,
    path: string,
    body?: RequestBody,
    headers?: Record<string, string>,
  ): Promise<HttpAnswer>;
  /** A request to the ops server (GET unless told). */
  ops(path: string, method?: Dispatcher.HttpMethod, headers?: Record<string, string>): Promise<HttpAnswer>;
  /** A request to the health server (GET unless told). */
  health(path: string, method?: Dispatcher.HttpMethod): Promise<HttpAnswer>;
  /**
   * The value of one series from the gateway's registry: `name` is a metric name, or a histogram's
   * `_count`/`_sum`; `labels` must equal the series' labels exactly. 0 when the series does not exist yet.
   */
  metric(name: string, labels?: Readonly<Record<string, string>>): Promise<number>;
  close(): Promise<void>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Fills in the test server settings the text leaves out. */
export function withTestServer(yaml: string): string {
  const doc: unknown = parse(yaml) ?? {};
  if (!isRecord(doc)) throw new Error('test gateway.yaml must be a map');
  const server = isRecord(doc.server) ? doc.server : {};
  const tls = isRecord(server.tls) ? server.tls : {};
  doc.server = {
    host: '127.0.0.1',
    opsHost: '127.0.0.1',
    healthHost: '127.0.0.1',
    shutdownTimeoutSeconds: 5,
    ...server,
    port: 0,
    opsPort: 0,
    healthPort: 0,
    tls: { ...tls, certFile: 'tls.crt', keyFile: 'tls.key' },
  };
  // The decision-trace audit annotation is on by default; the tests of other features assert whole answers
  // without it, and test/integration/explain.test.ts asserts it.
  const explain = isRecord(doc.explain) ? doc.explain : {};
  doc.explain = { auditAnnotation: false, ...explain };
  return stringify(doc);
}

function isAsyncIterable(value: unknown): value is AsyncIterable<Buffer> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

/** A body undici sends with Transfer-Encoding: chunked (no Content-Length), in `chunkSize` pieces. */
export async function* chunked(data: string | Buffer, chunkSize = 1024): AsyncGenerator<Buffer> {
  const bytes = Buffer.isBuffer(data) ? data : Buffer.from(data);
  for (let i = 0; i < bytes.length; i += chunkSize) {
    yield bytes.subarray(i, i + chunkSize);
    await Promise.resolve();
  }
}

async function readAnswer(answer: Dispatcher.ResponseData): Promise<HttpAnswer> {
  const text = await answer.body.text();
  let body: unknown = text;
  const type = answer.headers['content-type'];
  if (typeof type === 'string' && type.includes('json') && text) body = JSON.parse(text) as unknown;
  return { status: answer.statusCode, headers: answer.headers, text, body };
}

/** Sends one request through `dispatcher` and reads the whole answer. */
export async function sendRequest(
  dispatcher: Dispatcher,
  url: string,
  method: Dispatcher.HttpMethod,
  body?: RequestBody,
  headers: Record<string, string> = {},
): Promise<HttpAnswer> {
  let payload: string | Buffer | Readable | undefined;
  if (body === undefined || typeof body === 'string' || Buffer.isBuffer(body)) {
    payload = body;
  } else if (isAsyncIterable(body)) {
    payload = Readable.from(body);
  } else {
    payload = JSON.stringify(body);
  }
  const answer = await request(url, {
    method,
    dispatcher,
    headers: { ...(payload !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(payload !== undefined ? { body: payload } : {}),
  });
  return readAnswer(answer);
}

/** Checks that an answer is an AdmissionReview and returns it typed. */
export function reviewOf(answer: HttpAnswer): AnswerReview {
  const body = answer.body;
  if (!isRecord(body) || !isRecord(body.response)) {
    throw new Error(`expected an AdmissionReview answer, got HTTP ${answer.status}: ${answer.text}`);
  }
  return body as unknown as AnswerReview;
}

export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const dir = await mkdtemp(join(tmpdir(), 'gateway-it-'));
  const logs: LogLine[] = [];
  let agent: Agent | undefined;
  let gateway: Gateway | undefined;
  try {
    const text = withTestServer(options.yaml);
    const file = join(dir, 'gateway.yaml');
    await writeFile(file, text);
    const config = parseConfigText(text, file, dir);
    if (!options.generateCertificates) {
      sharedBundle ??= generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
      await writeCertificates(dir, sharedBundle);
    }
    const log = createLogger('debug', {
      write(line: string) {
        logs.push(JSON.parse(line) as LogLine);
      },
    });
    gateway = await startGateway({
      config,
      plugins: [...availablePlugins, ...(options.plugins ?? [])],
      log,
      ...(options.discovery ? { discovery: options.discovery } : {}),
      ...(options.namespaceLabels ? { namespaceLabels: options.namespaceLabels } : {}),
      ...(options.onExtensionServed ? { onExtensionServed: options.onExtensionServed } : {}),
      ...(options.opsAccess ? { opsAccess: options.opsAccess } : {}),
      ...(options.pluginsModule ? { pluginsModule: options.pluginsModule } : {}),
      ...(options.onExceptionUsed ? { onExceptionUsed: options.onExceptionUsed } : {}),
    });
    const ca = await readFile(join(dir, 'ca.crt'));
    const client = new Agent({ connect: { ca } });
    agent = client;
    const started = gateway;

    let closed: Promise<void> | undefined;
    const harness: Harness = {
      gateway: started,
      dir,
      ca,
      logs,
      post: (path, body, headers) => sendRequest(client, `${started.webhookUrl}${path}`, 'POST', body, headers),
      async review(path, review) {
        const answer = await sendRequest(client, `${started.webhookUrl}${path}`, 'POST', review);
        if (answer.status !== 200) throw new Error(`expected HTTP 200, got ${answer.status}: ${answer.text}`);
        return reviewOf(answer);
      },
      send: (method, path, body, headers) => sendRequest(client, `${started.webhookUrl}${path}`, method, body, headers),
      ops: (path, method = 'GET', headers = {}) =>
        sendRequest(client, `${started.opsUrl}${path}`, method, undefined, headers),
      health: (path, method = 'GET') => sendRequest(client, `${started.healthUrl}${path}`, method),
      async metric(name, labels = {}) {
        const registry = started.metrics.registry;
        const metric = registry.getSingleMetric(name) ?? registry.getSingleMetric(name.replace(/_(count|sum)$/, ''));
        if (!metric) throw new Error(`metric ${name} is not registered`);
        const { values } = await metric.get();
        const wanted = Object.entries(labels);
        return values
          .filter((v) => ((v as { metricName?: string }).metricName ?? name) === name)
          .filter((v) => {
            const have = Object.entries(v.labels);
            return have.length === wanted.length && wanted.every(([k, value]) => String(v.labels[k]) === value);
          })
          .reduce((sum, v) => sum + v.value, 0);
      },
      close() {
        closed ??= (async () => {
          await client.close();
          await started.close();
          await rm(dir, { recursive: true, force: true });
        })();
        return closed;
      },
    };
    return harness;
  } catch (err) {
    await agent?.close();
    await gateway?.close();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
