/**
 * A remote provider whose answers a test can hold back: an HTTPS server on 127.0.0.1 with its own generated
 * CA that allows every review after `delayMs`, or — while the gate is shut — keeps it waiting until the
 * gate opens. Lets a test have reviews genuinely in flight inside the gateway at a moment it chooses
 * (a SIGTERM under load) and count them without sleeping.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { caBundle, generateCertificates } from '../../certs/generate.js';
import { conditions } from './wait.js';

export interface GatedProviderOptions {
  /** How long each answer takes while the gate is open. Default 0. */
  readonly delayMs?: number;
}

export interface GatedProvider {
  /** https://127.0.0.1:<port>/allow */
  readonly url: string;
  /** base64 PEM of the provider's CA, for the chain entry's `caBundle`. */
  readonly caBundle: string;
  /** Reviews received so far. */
  readonly received: number;
  /** Reviews waiting at the shut gate right now. */
  readonly held: number;
  /** Reviews answered so far. */
  readonly answered: number;
  /** Shuts the gate: reviews from now on wait for `open()`. */
  shut(): void;
  /** Opens the gate and answers every review waiting at it. */
  open(): void;
  /** Resolves once `check()` holds (re-checked on every event); rejects after `timeoutMs` naming `what`. */
  until(what: string, check: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

function uidOf(text: string): string {
  try {
    const review = JSON.parse(text) as { request?: { uid?: unknown } };
    return typeof review.request?.uid === 'string' ? review.request.uid : '';
  } catch {
    return '';
  }
}

export async function startGatedProvider(options: GatedProviderOptions = {}): Promise<GatedProvider> {
  const certs = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  const waiting = new Set<() => void>();
  const waits = conditions(20_000);
  const timers = new Set<NodeJS.Timeout>();
  let gateShut = false;
  let received = 0;
  let answered = 0;
  const notify = waits.notify;

  const answer = (res: ServerResponse, uid: string) => {
    if (res.destroyed) return;
    const body = JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid, allowed: true },
    });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
    answered++;
    notify();
  };

  const handle = (req: IncomingMessage, res: ServerResponse, text: string) => {
    received++;
    const uid = uidOf(text);
    const afterDelay = () => {
      if (!options.delayMs) return answer(res, uid);
      const timer = setTimeout(() => {
        timers.delete(timer);
        answer(res, uid);
      }, options.delayMs);
      timers.add(timer);
    };
    if (!gateShut) {
      afterDelay();
      notify();
      return;
    }
    const release = () => {
      waiting.delete(release);
      afterDelay();
    };
    waiting.add(release);
    res.on('close', () => {
      if (waiting.delete(release)) notify();
    });
    notify();
  };

  const server = https.createServer({ cert: certs.cert, key: certs.key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `https://127.0.0.1:${port}/allow`,
    caBundle: caBundle(certs.caCert),
    get received() {
      return received;
    },
    get held() {
      return waiting.size;
    },
    get answered() {
      return answered;
    },
    shut() {
      gateShut = true;
    },
    open() {
      gateShut = false;
      for (const release of [...waiting]) release();
      notify();
    },
    until: waits.until,
    close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      waiting.clear();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
