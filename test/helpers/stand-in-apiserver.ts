/**
 * A stand-in for kube-apiserver where a test needs it to misbehave on cue (answer 503, 429 or 403, hold a
 * request, refuse connections): real HTTPS with its own generated CA, a bearer token it checks, and answers
 * the test gives per request. Every request is recorded (method, path, query, content type, parsed body)
 * before it is answered; `until()` awaits a condition on the records without sleeping. What the real
 * apiserver does with the same requests is test/e2e/provider-sdk.e2e.ts.
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { generateCertificates } from '../../certs/generate.js';
import { conditions } from './wait.js';

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly contentType: string | undefined;
  readonly body: unknown;
}

/** What to answer: a status and a JSON body, or a promise of one (a held request). */
export interface StandInAnswer {
  readonly status: number;
  readonly body?: unknown;
}

export type Answerer = (request: RecordedRequest, index: number) => StandInAnswer | Promise<StandInAnswer>;

export interface StandInApiserver {
  readonly url: string;
  readonly requests: readonly RecordedRequest[];
  /** A kubeConfig for this server, its CA and token. */
  kubeConfig(): KubeConfig;
  /** Answers from now on; `index` counts every request since the server started. */
  answerWith(answerer: Answerer): void;
  until(what: string, check: () => boolean): Promise<void>;
  close(): Promise<void>;
}

export const STAND_IN_TOKEN = 'stand-in-token';

/** A Status as the apiserver sends it with an error. */
export function status(code: number, reason: string, message: string): StandInAnswer {
  return { status: code, body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, message, code } };
}

export async function startStandInApiserver(): Promise<StandInApiserver> {
  const certs = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  const requests: RecordedRequest[] = [];
  const waits = conditions(5000);
  let answerer: Answerer = () => status(500, 'InternalError', 'no answer scripted');
  const server = https.createServer({ cert: certs.cert, key: certs.key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      void (async () => {
        const url = new URL(req.url ?? '/', 'https://stand-in');
        const text = Buffer.concat(chunks).toString('utf8');
        const record: RecordedRequest = {
          method: req.method ?? '',
          path: url.pathname,
          query: Object.fromEntries(url.searchParams),
          contentType: req.headers['content-type'],
          body: text ? (JSON.parse(text) as unknown) : undefined,
        };
        const index = requests.length;
        requests.push(record);
        waits.notify();
        const answer =
          req.headers.authorization === `Bearer ${STAND_IN_TOKEN}`
            ? await answerer(record, index)
            : status(401, 'Unauthorized', 'Unauthorized');
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
      })();
    });
  });
  const address = await new Promise<AddressInfo>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server.address() as AddressInfo));
  });
  const url = `https://127.0.0.1:${address.port}`;
  return {
    url,
    requests,
    kubeConfig() {
      const kc = new KubeConfig();
      kc.loadFromClusterAndUser(
        { name: 'stand-in', server: url, caData: Buffer.from(certs.caCert).toString('base64'), skipTLSVerify: false },
        { name: 'provider', token: STAND_IN_TOKEN },
      );
      return kc;
    },
    answerWith(next) {
      answerer = next;
    },
    until: (what, check) => waits.until(what, check),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
