/**
 * Plain HTTP(S) calls the typed clients do not make: the gateway's ops endpoints (/chain, /readyz), an
 * AdmissionReview POSTed straight to the gateway's webhook server, and raw GETs to the apiserver with the
 * kubeconfig's credentials (e.g. the Table form `kubectl get` asks for).
 */
import { readFile } from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import type { IncomingHttpHeaders } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { kubeConfig } from './cluster.js';

/** One step as GET /chain describes it (the fields the tests read). */
export interface ChainStepView {
  readonly name: string;
  readonly source: 'plugin' | 'provider';
  readonly provider?: string;
  readonly phase: 'mutate' | 'validate';
  readonly order: number;
  readonly url?: string;
  readonly failurePolicy: string;
  readonly breaker?: { readonly state: string };
  /** Mutate steps: the level of the plan it runs in (steps of one level run side by side). */
  readonly level?: number;
  readonly supplies?: readonly string[];
  readonly dependsOn?: readonly string[];
  /** `OptIn` for an opt-in entry's steps (absent for `Always`), and its conflict group when it has one. */
  readonly attach?: string;
  readonly conflictGroup?: string;
}

/** GET /chain: the resolved order and every step. */
export interface ChainView {
  readonly order: string;
  readonly mutate: readonly ChainStepView[];
  readonly validate: readonly ChainStepView[];
  readonly providers: readonly { readonly name: string; readonly breaker: string; readonly ready: boolean }[];
  /** Declarations that cannot be ordered (their steps run one after another meanwhile). */
  readonly problems?: readonly string[];
}

export async function getChain(opsUrl: string): Promise<ChainView> {
  const res = await fetch(`${opsUrl}/chain`);
  if (res.status !== 200) throw new Error(`GET /chain answered ${res.status}`);
  return (await res.json()) as ChainView;
}

/** `[name, order]` of each step of the mutate phase, in chain order. */
export function mutateOrder(chain: ChainView): [string, number][] {
  return chain.mutate.map((s) => [s.name, s.order]);
}

export interface ReadinessView {
  readonly ready: boolean;
  readonly checks: readonly { readonly name: string; readonly ready: boolean; readonly detail?: string }[];
}

/** GET /readyz?verbose on the health port: the HTTP status and the checks. */
export async function getReadiness(healthUrl: string): Promise<{ status: number; body: ReadinessView }> {
  const res = await fetch(`${healthUrl}/readyz?verbose`);
  return { status: res.status, body: (await res.json()) as ReadinessView };
}

interface RawResponse {
  readonly status: number;
  readonly body: string;
}

function send(url: string, options: https.RequestOptions, body?: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.once('error', reject);
    });
    req.once('error', reject);
    req.end(body);
  });
}

/** The AdmissionReview answer of the gateway (the parts the tests read). */
export interface ReviewAnswer {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly response?: {
    readonly uid?: string;
    readonly allowed?: boolean;
    readonly patchType?: string;
    readonly patch?: string;
    readonly warnings?: readonly string[];
    readonly status?: { readonly code?: number; readonly message?: string };
  };
}

/**
 * POSTs an AdmissionReview to the gateway's webhook server the way the apiserver does (the gateway's own CA
 * from its dir, `?timeout=`), bypassing the apiserver.
 */
export async function postReview(
  gateway: { readonly webhookUrl: string },
  dir: string,
  route: string,
  review: object,
  timeoutSeconds = 10,
): Promise<{ status: number; answer: ReviewAnswer }> {
  const ca = await readFile(path.join(dir, 'ca.crt'));
  const { status, body } = await send(
    `${gateway.webhookUrl}/${route}?timeout=${timeoutSeconds}s`,
    { method: 'POST', ca, headers: { 'content-type': 'application/json' }, agent: false },
    JSON.stringify(review),
  );
  return { status, answer: JSON.parse(body) as ReviewAnswer };
}

/** GET `apiPath` from the e2e apiserver with the kubeconfig's CA and token, asking for `accept`. */
export async function apiserverGet(apiPath: string, accept: string): Promise<{ status: number; body: unknown }> {
  const kc = kubeConfig();
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('the kubeconfig has no current cluster');
  const options: https.RequestOptions = { method: 'GET', headers: { accept } };
  await kc.applyToHTTPSOptions(options);
  try {
    const { status, body } = await send(new URL(apiPath, server).toString(), options);
    return { status, body: JSON.parse(body) as unknown };
  } finally {
    if (options.agent instanceof https.Agent) options.agent.destroy();
  }
}

/**
 * `method apiPath` to the apiserver as `kc`'s user (its credentials, the apiserver's CA), the way kubectl sends
 * it, with extra headers. A 200 answer yields its first line (a watch streams until its timeout, and its first
 * event is a line of its own); any other status the whole body.
 */
export async function apiRequest(
  kc: KubeConfig,
  method: string,
  apiPath: string,
  headers: IncomingHttpHeaders = {},
): Promise<{ status: number; text: string }> {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('the kubeconfig has no current cluster');
  const options: https.RequestOptions = { method, headers: { accept: 'application/json', ...headers } };
  await kc.applyToHTTPSOptions(options);
  try {
    return await new Promise((resolve, reject) => {
      const req = https.request(new URL(apiPath, server), options, (res) => {
        const status = res.statusCode ?? 0;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          const end = text.indexOf('\n');
          if (status === 200 && end >= 0) {
            resolve({ status, text: text.slice(0, end) });
            req.destroy();
          }
        });
        res.once('end', () => resolve({ status, text }));
        res.once('error', reject);
      });
      req.once('error', reject);
      req.end();
    });
  } finally {
    if (options.agent instanceof https.Agent) options.agent.destroy();
  }
}
