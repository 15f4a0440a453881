/**
 * One request to the apiserver with a kubeconfig's server, CA and credentials, bounded in time and size, for
 * callers that need what client-node's typed calls hide: the exact body sent (a server-side apply is sent as
 * written, not re-serialised through a model), the HTTP status (201 Created vs 200) and a deadline.
 */
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { errorMessage } from '../base/errors.js';
import { clip, nestsDeeperThan, stripControl } from '../base/limits.js';

export interface ApiserverAnswer {
  readonly status: number;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly body: unknown;
}

export interface ApiserverRequestOptions {
  readonly body?: string;
  readonly contentType?: string;
  /** The whole exchange, connection included. Default 10 s. */
  readonly timeoutMs?: number;
  /** Largest answer read; past it the request fails. Default 4 MiB (an object is at most 1.5 MB in etcd). */
  readonly maxBytes?: number;
  readonly signal?: AbortSignal;
}

/** The apiserver could not be reached, or its answer not read: no HTTP status to go by. */
export class ApiserverUnreachableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ApiserverUnreachableError';
  }
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_BYTES = 4 * 1024 * 1024;

function parseJson(text: string): unknown {
  if (nestsDeeperThan(text)) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** `method apiPath` against `kc`'s current cluster. Rejects only with ApiserverUnreachableError. */
export async function apiserverRequest(
  kc: KubeConfig,
  method: string,
  apiPath: string,
  options: ApiserverRequestOptions = {},
): Promise<ApiserverAnswer> {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new ApiserverUnreachableError('the kubeconfig has no current cluster');
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.contentType) headers['content-type'] = options.contentType;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = AbortSignal.timeout(timeoutMs);
  const signals = [deadline];
  if (options.signal) signals.push(options.signal);
  const request: https.RequestOptions = { method, headers, signal: AbortSignal.any(signals) };
  try {
    // Reads a service account's token file on every call, so a rotated (projected) token is picked up.
    await kc.applyToHTTPSOptions(request);
  } catch (err) {
    throw new ApiserverUnreachableError(`credentials of the kubeconfig: ${errorMessage(err)}`, { cause: err });
  }
  const url = new URL(apiPath, server);
  try {
    return await new Promise<ApiserverAnswer>((resolve, reject) => {
      const req = https.request(url, request, (res) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes > maxBytes) {
            req.destroy(new Error(`the answer is larger than ${maxBytes} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.once('error', reject);
        res.once('end', () =>
          resolve({ status: res.statusCode ?? 0, body: parseJson(Buffer.concat(chunks).toString('utf8')) }),
        );
      });
      req.once('error', reject);
      req.end(options.body);
    });
  } catch (err) {
    const why = deadline.aborted ? `no answer within ${timeoutMs} ms` : errorMessage(err);
    throw new ApiserverUnreachableError(`${method} ${url.origin}${url.pathname}: ${why}`, { cause: err });
  } finally {
    if (request.agent instanceof https.Agent) request.agent.destroy();
  }
}

/** The message of the Status the apiserver answered with (clipped, one line), else `HTTP <status>`. */
export function statusMessage(answer: ApiserverAnswer): string {
  const body = answer.body as { message?: unknown } | undefined;
  const text = typeof body?.message === 'string' ? stripControl(body.message) : '';
  return text ? clip(text, 1024) : `HTTP ${answer.status}`;
}
