/**
 * Calls one remote provider over HTTPS with an AdmissionReview. One keep-alive connection pool per
 * provider (undici), trusting only the provider's caBundle when one is given; an optional client
 * certificate for mTLS. A fresh uid per call, `?timeout=` set to the time granted, the response size
 * capped, redirects never followed. Every failure is a ProviderCallError with a reason.
 */
import { randomUUID } from 'node:crypto';
import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import { ADMISSION_V1, ADMISSION_V1BETA1, type AdmissionApiVersion } from '../admission/types.js';
import { ProviderCallError, errorMessage } from '../errors.js';
import type { AdmissionRequest, KubeObject } from '../plugin-api/types.js';
import { InvalidProviderResponse, verifyProviderResponse, type ProviderAnswer } from './provider-response.js';

/** Big enough for any object the apiserver accepts plus a patch of it; the same cap as the apiserver's. */
export const MAX_RESPONSE_BYTES = 20 * 1024 * 1024;
/** Header carrying the entry's `settings` (a JSON object of strings) to the provider. */
export const SETTINGS_HEADER = 'x-admission-gateway-settings';

export interface ProviderTarget {
  readonly url: string;
  /** PEM CA bundle trusted for the provider's certificate; absent = the system's trust store. */
  readonly ca?: string;
  readonly clientCert?: { readonly cert: string; readonly key: string };
  readonly apiVersion: AdmissionApiVersion;
  readonly settings?: Readonly<Record<string, string>>;
  readonly maxResponseBytes?: number;
}

export interface ProviderCall {
  readonly request: AdmissionRequest;
  /** The object as the chain has it so far. */
  readonly object: KubeObject | null | undefined;
  readonly mutating: boolean;
  /** The time granted, sent as `?timeout=`. */
  readonly timeoutMs: number;
  /** The deadline: aborts when the granted time is up (the client's own timers are only a late backstop). */
  readonly signal: AbortSignal;
  /** Absolute path to POST to instead of the URL's (a discovered handler). */
  readonly path?: string;
}

export interface ProviderClient {
  call(call: ProviderCall): Promise<ProviderAnswer>;
  /** GET `<url>/<path>` for discovery; returns the parsed JSON body. `signal` cancels it early (on close). */
  getJson(path: string, timeoutMs: number, signal?: AbortSignal): Promise<unknown>;
  close(): Promise<void>;
}

const TLS_CODE = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|ERR_TLS|ERR_SSL|HOSTNAME_MISMATCH|ALTNAME/;
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);
const TIMEOUT_CODES = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
]);

/** Classifies a transport error: timeout, tls or connection. */
export function classifyTransportError(err: unknown, url: string): ProviderCallError {
  if (err instanceof ProviderCallError) return err;
  const withCode = err as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const rawCode = withCode?.code ?? withCode?.cause?.code;
  const code = typeof rawCode === 'string' ? rawCode : '';
  const name = err instanceof Error ? err.name : '';
  const detail = errorMessage(err);
  if (
    name === 'AbortError' ||
    name === 'TimeoutError' ||
    TIMEOUT_CODES.has(code) ||
    err instanceof undiciErrors.RequestAbortedError
  ) {
    return new ProviderCallError('timeout', `no answer from ${url} in time`, { cause: err });
  }
  if (TLS_CODE.test(code))
    return new ProviderCallError('tls', `TLS with ${url} failed: ${code}: ${detail}`, { cause: err });
  if (CONNECTION_CODES.has(code) || code.startsWith('UND_ERR')) {
    return new ProviderCallError('connection', `cannot reach ${url}: ${code}: ${detail}`, { cause: err });
  }
  return new ProviderCallError('connection', `calling ${url} failed: ${detail}`, { cause: err });
}

/**
 * Drops a body the client will not use. A bare destroy() makes undici emit a RequestAbortedError 'error'
 * event that nobody listens to (an uncaught exception); dump() swallows it, and reads at most 128 KiB so a
 * small error page keeps the keep-alive connection usable.
 */
function discard(body: Dispatcher.ResponseData['body']): void {
  void body.dump().catch(() => undefined);
}

/**
 * undici's headersTimeout/bodyTimeout run on its coarse "fast timers" (500 ms ticks: while other requests
 * are in flight they fire up to about half a second before their delay), so they cannot be the deadline: a
 * provider granted 750 ms was cut off after ~600. The caller's AbortSignal is the deadline (the step's, or
 * discovery's AbortSignal.timeout); undici's timers are only a backstop well behind it.
 */
const UNDICI_TIMER_BACKSTOP_MS = 1000;

function timeoutParam(ms: number): string {
  return `${Math.max(1, Math.floor(ms))}ms`;
}

async function readCapped(
  body: AsyncIterable<Buffer> & { destroy(err?: Error): void },
  limit: number,
  url: string,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      throw new ProviderCallError('invalid_response', `response from ${url} exceeds ${limit} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/** Headers are Latin-1; escape the rest so any setting value survives. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

export function createProviderClient(target: ProviderTarget): ProviderClient {
  const url = new URL(target.url);
  const limit = target.maxResponseBytes ?? MAX_RESPONSE_BYTES;
  const pool = new Pool(url.origin, {
    connect: {
      ...(target.ca ? { ca: target.ca } : {}),
      ...(target.clientCert ? { cert: target.clientCert.cert, key: target.clientCert.key } : {}),
      rejectUnauthorized: true,
    },
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 60_000,
    pipelining: 1,
  });
  const basePath = url.pathname || '/';
  const settingsHeader =
    target.settings && Object.keys(target.settings).length > 0 ? asciiJson(target.settings) : undefined;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
    ...(settingsHeader ? { [SETTINGS_HEADER]: settingsHeader } : {}),
  };

  async function send(
    method: 'POST' | 'GET',
    path: string,
    body: string | undefined,
    timeoutMs: number,
    signal: AbortSignal,
  ) {
    const ms = Math.max(1, Math.floor(timeoutMs));
    try {
      const res = await pool.request({
        method,
        path,
        headers: body === undefined ? { accept: 'application/json' } : headers,
        ...(body !== undefined ? { body } : {}),
        signal,
        headersTimeout: ms + UNDICI_TIMER_BACKSTOP_MS,
        bodyTimeout: ms + UNDICI_TIMER_BACKSTOP_MS,
      });
      const declared = Number(res.headers['content-length']);
      if (declared > limit) {
        discard(res.body);
        throw new ProviderCallError(
          'invalid_response',
          `response from ${target.url} declares ${declared} bytes, over ${limit}`,
        );
      }
      if (res.statusCode !== 200) {
        discard(res.body);
        const location = res.headers.location ? ` (redirect to ${String(res.headers.location)} not followed)` : '';
        throw new ProviderCallError('http_status', `${target.url} answered HTTP ${res.statusCode}${location}`);
      }
      return await readCapped(res.body, limit, target.url);
    } catch (err) {
      throw classifyTransportError(err, target.url);
    }
  }

  return {
    async call({ request, object, mutating, timeoutMs, signal, path: handlerPath }) {
      const uid = randomUUID();
      const review = {
        apiVersion: target.apiVersion,
        kind: 'AdmissionReview',
        request: { ...request, uid, object: object ?? null },
      };
      const path = `${handlerPath ?? basePath}?timeout=${timeoutParam(timeoutMs)}`;
      const text = await send('POST', path, JSON.stringify(review), timeoutMs, signal);
      try {
        return verifyProviderResponse(text, { uid, apiVersion: target.apiVersion, mutating });
      } catch (err) {
        if (err instanceof InvalidProviderResponse) {
          throw new ProviderCallError('invalid_response', `${target.url}: ${err.message}`, { cause: err });
        }
        throw err;
      }
    },
    async getJson(subPath, timeoutMs, signal) {
      const path = `${basePath.replace(/\/+$/, '')}/${subPath.replace(/^\/+/, '')}`;
      // AbortSignal.timeout takes whole milliseconds only (timeoutSeconds 1.005 → 1004.9999… would throw).
      const deadline = AbortSignal.timeout(Math.max(1, Math.floor(timeoutMs)));
      const text = await send(
        'GET',
        path,
        undefined,
        timeoutMs,
        signal ? AbortSignal.any([signal, deadline]) : deadline,
      );
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new ProviderCallError('invalid_response', `${target.url}/${subPath}: response is not JSON`);
      }
    },
    close: () => pool.close(),
  };
}

export const apiVersionFor = (versions: readonly ('v1' | 'v1beta1')[]): AdmissionApiVersion =>
  versions[0] === 'v1beta1' ? ADMISSION_V1BETA1 : ADMISSION_V1;
