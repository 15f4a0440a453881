/**
 * Calls one remote provider over HTTPS with an AdmissionReview. One small pool of keep-alive TLS
 * connections per provider (provider-transport.ts: undici), trusting only the provider's caBundle when one
 * is given; an optional client certificate for mTLS. A call is encoded and its answer verified by
 * provider-codec.ts (a fresh uid per call, `?timeout=` set to the time granted) around the exchange of bytes
 * here, which a large-review lane worker has the main thread make (lane/provider-host.ts): the response size
 * capped, redirects never followed. Every failure is a ProviderCallError with a reason.
 */
import type { Dispatcher } from 'undici';
import type { AdmissionApiVersion } from '../admission/types.js';
import { ProviderCallError, errorMessage } from '../base/errors.js';
import type { AuthorizationAttributes } from '../authorization/attributes.js';
import type { AuthorizeDecision } from '../authorization/authorize-step.js';
import {
  SubjectAccessReviewError,
  encodeSubjectAccessReviewRequest,
  readSubjectAccessReviewAnswer,
} from '../authorization/subject-access-review.js';
import { ResponseTooLargeError, type ExchangeResult } from './provider-exchange.js';
import type { ProviderAnswer } from './provider-response.js';
import { createProviderCodec, requestTarget, grantedTimeout, type ProviderCallInput } from './provider-codec.js';
import { MAX_RESPONSE_HEAD_BYTES, createProviderTransport } from './provider-transport.js';

/** Big enough for any object the apiserver accepts plus a patch of it; the same cap as the apiserver's. */
export const MAX_RESPONSE_BYTES = 20 * 1024 * 1024;
/** Header carrying the entry's `settings` (a JSON object of strings) to the provider. */
export const SETTINGS_HEADER = 'x-admission-gateway-settings';
/** Connections per provider; calls beyond wait in a queue of MAX_QUEUED_CALLS (then fail as `connection`). */
const MAX_CONNECTIONS = 64;
const MAX_QUEUED_CALLS = 1024;

export interface ProviderTarget {
  readonly url: string;
  /** PEM CA bundle trusted for the provider's certificate; absent = the system's trust store. */
  readonly ca?: string;
  readonly clientCert?: { readonly cert: string; readonly key: string };
  readonly apiVersion: AdmissionApiVersion;
  readonly settings?: Readonly<Record<string, string>>;
  readonly maxResponseBytes?: number;
  readonly maxConnections?: number;
  readonly maxQueuedCalls?: number;
}

export interface ProviderCall extends ProviderCallInput {
  /** The deadline: aborts when the granted time is up (the client's own timers are only a late backstop). */
  readonly signal: AbortSignal;
  /** The step's W3C trace context (`traceparent`, `tracestate`) as header name/value pairs, when tracing is on. */
  readonly traceHeaders?: readonly string[] | undefined;
}

/** An encoded AdmissionReview to POST (provider-codec.ts), and how long it may take. */
export interface EncodedExchange {
  /** The request target, `?timeout=` included. */
  readonly path: string;
  readonly body: string | Uint8Array;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  readonly traceHeaders?: readonly string[] | undefined;
}

/** One call of the authorize chain: the request as the apiserver asked about it. */
export interface ProviderAuthorizeCall {
  readonly attributes: AuthorizationAttributes;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
}

export interface ProviderClient {
  call(call: ProviderCall): Promise<ProviderAnswer>;
  /** POSTs an encoded call; the body of its 200 (any other status, or no answer, is a ProviderCallError). */
  exchange(exchange: EncodedExchange): Promise<Buffer>;
  /** POSTs a SubjectAccessReview (authorization.k8s.io/v1) to the URL; its decision. */
  authorize(call: ProviderAuthorizeCall): Promise<AuthorizeDecision>;
  /** GET `<url>/<path>` for discovery; returns the parsed JSON body. `signal` cancels it early (on close). */
  getJson(path: string, timeoutMs: number, signal?: AbortSignal): Promise<unknown>;
  close(): Promise<void>;
}

const TLS_CODE = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|ERR_TLS|ERR_SSL|HOSTNAME_MISMATCH|ALTNAME/;
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  'ERR_POOL_FULL',
  'ERR_POOL_CLOSED',
]);
/** undici's connect, headers and body timers (backstops), its aborted request, and the socket's own timeout. */
const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_ABORTED',
  'ETIMEDOUT',
]);

/**
 * Classifies a transport error: timeout, tls or connection; an answer over one of undici's size bounds
 * (a head, or a body when one is set on the Pool) is invalid_response.
 */
export function classifyTransportError(err: unknown, url: string): ProviderCallError {
  if (err instanceof ProviderCallError) return err;
  const withCode = err as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const rawCode = withCode?.code ?? withCode?.cause?.code;
  const code = typeof rawCode === 'string' ? rawCode : '';
  const name = err instanceof Error ? err.name : '';
  const detail = errorMessage(err);
  if (name === 'AbortError' || name === 'TimeoutError' || TIMEOUT_CODES.has(code)) {
    return new ProviderCallError('timeout', `no answer from ${url} in time`, { cause: err });
  }
  if (code === 'UND_ERR_HEADERS_OVERFLOW') {
    return new ProviderCallError(
      'invalid_response',
      `response head from ${url} has over ${MAX_RESPONSE_HEAD_BYTES} bytes of header fields`,
      { cause: err },
    );
  }
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') {
    return new ProviderCallError('invalid_response', `response from ${url} is over its size cap`, { cause: err });
  }
  if (TLS_CODE.test(code))
    return new ProviderCallError('tls', `TLS with ${url} failed: ${code}: ${detail}`, { cause: err });
  if (CONNECTION_CODES.has(code)) {
    return new ProviderCallError('connection', `cannot reach ${url}: ${code}: ${detail}`, { cause: err });
  }
  return new ProviderCallError('connection', `calling ${url} failed: ${detail}`, { cause: err });
}

/**
 * The caller's AbortSignal is the deadline (the step's, or discovery's AbortSignal.timeout). undici's headers
 * and body timeouts are only a backstop well behind it, for a signal that never aborts: they run on undici's
 * coarse shared ticks and can fire well before their delay.
 */
const TIMER_BACKSTOP_MS = 1000;

/** Headers are Latin-1; escape the rest so any setting value survives. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** `dispatcher`: what the calls go through instead of a connection pool of the client's own (provider-transport.ts). */
export function createProviderClient(
  target: ProviderTarget,
  { dispatcher }: { readonly dispatcher?: Dispatcher | undefined } = {},
): ProviderClient {
  const url = new URL(target.url);
  if (url.protocol !== 'https:') throw new Error(`provider URL ${target.url} is not https`);
  const limit = target.maxResponseBytes ?? MAX_RESPONSE_BYTES;
  const transport = createProviderTransport({
    url,
    ...(target.ca ? { ca: target.ca } : {}),
    ...(target.clientCert ? { clientCert: target.clientCert } : {}),
    maxConnections: target.maxConnections ?? MAX_CONNECTIONS,
    maxQueued: target.maxQueuedCalls ?? MAX_QUEUED_CALLS,
    maxBodyBytes: limit,
    ...(dispatcher ? { dispatcher } : {}),
  });
  const basePath = url.pathname || '/';
  const baseTarget = requestTarget(basePath);
  const codec = createProviderCodec(target);
  const settingsHeader =
    target.settings && Object.keys(target.settings).length > 0 ? asciiJson(target.settings) : undefined;
  // undici writes the Host header from the origin.
  const getHeaders = ['accept', 'application/json'];
  const postHeaders = [
    ...getHeaders,
    'content-type',
    'application/json',
    ...(settingsHeader ? [SETTINGS_HEADER, settingsHeader] : []),
  ];

  async function send(
    method: 'POST' | 'GET',
    path: string,
    body: string | Uint8Array | undefined,
    timeoutMs: number,
    signal: AbortSignal,
    traceHeaders?: readonly string[],
  ): Promise<ExchangeResult> {
    let res: ExchangeResult;
    const headers = method === 'POST' ? postHeaders : getHeaders;
    try {
      res = await transport.request({
        method,
        path,
        headers: traceHeaders ? [...headers, ...traceHeaders] : headers,
        ...(body !== undefined ? { body } : {}),
        signal,
        backstopMs: Math.max(1, Math.floor(timeoutMs)) + TIMER_BACKSTOP_MS,
      });
    } catch (err) {
      if (err instanceof ResponseTooLargeError) {
        throw new ProviderCallError(
          'invalid_response',
          err.declared === undefined
            ? `response from ${target.url} exceeds ${limit} bytes`
            : `response from ${target.url} declares ${err.declared} bytes, over ${limit}`,
        );
      }
      throw classifyTransportError(err, target.url);
    }
    if (res.status !== 200) {
      const location = res.location ? ` (redirect to ${res.location} not followed)` : '';
      throw new ProviderCallError('http_status', `${target.url} answered HTTP ${res.status}${location}`);
    }
    return res;
  }

  const exchange = async ({ path, body, timeoutMs, signal, traceHeaders }: EncodedExchange): Promise<Buffer> =>
    (await send('POST', path, body, timeoutMs, signal, traceHeaders)).body;

  return {
    async call(call) {
      const encoded = codec.encode(call);
      const { timeoutMs, signal, traceHeaders } = call;
      return codec.verify(await exchange({ ...encoded, timeoutMs, signal, traceHeaders }), encoded);
    },
    exchange,
    async authorize({ attributes, timeoutMs, signal }) {
      const path = `${baseTarget}?timeout=${grantedTimeout(timeoutMs)}`;
      const res = await send('POST', path, encodeSubjectAccessReviewRequest(attributes), timeoutMs, signal);
      try {
        return readSubjectAccessReviewAnswer(res.body.toString('utf8'));
      } catch (err) {
        if (err instanceof SubjectAccessReviewError) {
          throw new ProviderCallError('invalid_response', `${target.url}: ${err.message}`, { cause: err });
        }
        throw err;
      }
    },
    async getJson(subPath, timeoutMs, signal) {
      const path = `${basePath.replace(/\/+$/, '')}/${subPath.replace(/^\/+/, '')}`;
      // AbortSignal.timeout takes whole milliseconds only (timeoutSeconds 1.005 → 1004.9999… would throw).
      const deadline = AbortSignal.timeout(Math.max(1, Math.floor(timeoutMs)));
      const res = await send(
        'GET',
        requestTarget(path),
        undefined,
        timeoutMs,
        signal ? AbortSignal.any([signal, deadline]) : deadline,
      );
      try {
        return JSON.parse(res.body.toString('utf8')) as unknown;
      } catch {
        throw new ProviderCallError('invalid_response', `${target.url}/${subPath}: response is not JSON`);
      }
    },
    close: () => transport.close(),
  };
}
