/**
 * A byte-exact remote provider for the client's wire tests: a raw tls.createServer on 127.0.0.1 that
 * reads HTTP/1.1 requests off each TLS connection and hands each to a scripted handler, which writes
 * whatever bytes (and packet splits, closes, resets) the test needs. Records every request with the
 * number of the connection it came on; `until()` waits for a condition without sleeping.
 */
import forge from 'node-forge';
import { generateKeyPairSync } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import tls, { type TLSSocket } from 'node:tls';
import { generateCertificates, type CertificateBundle } from '../../certs/generate.js';
import { conditions } from '../helpers/wait.js';

export interface RawRequest {
  readonly method: string;
  readonly target: string;
  /** Lower-cased names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** request.uid of the AdmissionReview sent (empty for a GET). */
  readonly uid: string;
  /** 1-based number of the TLS connection it came on. */
  readonly connection: number;
  /** The 1-based position of this request on its connection. */
  readonly onConnection: number;
}

export type RawHandler = (request: RawRequest, socket: TLSSocket) => void | Promise<void>;

export interface RawProviderOptions {
  /** Ask for and verify a client certificate signed by this CA (PEM). */
  readonly clientCa?: string;
}

export interface RawProvider {
  url(path: string, host?: string): string;
  readonly caPem: string;
  readonly requests: readonly RawRequest[];
  /** TLS connections accepted so far. */
  readonly connections: number;
  /** TLS connections closed so far. */
  readonly closed: number;
  /** SNI names the clients sent (false when none), one per connection. */
  readonly servernames: readonly (string | false)[];
  /** Client certificates' subject CN per connection ('' when none). */
  readonly clientNames: readonly string[];
  handle(handler: RawHandler): void;
  until(what: string, check: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

let certs: CertificateBundle | undefined;

/** The serving certificate of every raw provider: SANs localhost and 127.0.0.1. */
export function rawProviderCerts(): CertificateBundle {
  certs ??= generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  return certs;
}

/** A client certificate (extKeyUsage clientAuth) with subject CN `commonName`, signed by the raw providers' CA. */
export function issueClientCertificate(commonName: string): { cert: string; key: string } {
  const ca = rawProviderCerts();
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const caCert = forge.pki.certificateFromPem(ca.caCert);
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey);
  cert.serialNumber = '0a1b2c3d';
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 3_600_000);
  cert.setSubject([{ name: 'commonName', value: commonName }]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
    { name: 'extKeyUsage', clientAuth: true },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(ca.caKey), forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: privateKey };
}

/** A complete allowed answer for `uid`, framed with Content-Length, plus any extra header lines. */
export function allowedAnswer(uid: string, extraHeaders: readonly string[] = []): string {
  const body = allowedBody(uid);
  return [
    'HTTP/1.1 200 OK',
    'Content-Type: application/json',
    ...extraHeaders,
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

function allowedBody(uid: string): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: { uid, allowed: true },
  });
}

/** Writes `pieces` one at a time, each in its own TLS record, with a pause so they arrive as separate reads. */
export async function writeSplit(socket: TLSSocket, pieces: readonly (string | Buffer)[]): Promise<void> {
  for (const piece of pieces) {
    if (socket.destroyed) return;
    await new Promise<void>((resolve) => socket.write(piece, () => resolve()));
    await new Promise<void>((resolve) => setTimeout(resolve, 2));
  }
}

function uidOf(body: string): string {
  try {
    const parsed = JSON.parse(body) as { request?: { uid?: unknown } };
    return typeof parsed.request?.uid === 'string' ? parsed.request.uid : '';
  } catch {
    return '';
  }
}

export async function startRawProvider(handler: RawHandler, options: RawProviderOptions = {}): Promise<RawProvider> {
  const { cert, key, caCert } = rawProviderCerts();
  const requests: RawRequest[] = [];
  const servernames: (string | false)[] = [];
  const clientNames: string[] = [];
  const waits = conditions(5000);
  const sockets = new Set<TLSSocket>();
  let current = handler;
  let connections = 0;
  let closed = 0;
  const notify = waits.notify;

  const server = tls.createServer(
    {
      cert,
      key,
      ...(options.clientCa ? { requestCert: true, rejectUnauthorized: true, ca: options.clientCa } : {}),
    },
    (socket) => {
      const connection = ++connections;
      sockets.add(socket);
      servernames.push(socket.servername ?? false);
      const peer = socket.getPeerCertificate();
      clientNames.push(typeof peer.subject?.CN === 'string' ? peer.subject.CN : '');
      let buffer = Buffer.alloc(0);
      let onConnection = 0;
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        closed++;
        notify();
      });
      socket.on('data', (chunk: Buffer) => {
        buffer = Buffer.concat([buffer, chunk]);
        for (;;) {
          const headEnd = buffer.indexOf('\r\n\r\n');
          if (headEnd < 0) return;
          const lines = buffer.toString('latin1', 0, headEnd).split('\r\n');
          const [method = '', target = ''] = (lines[0] ?? '').split(' ');
          const headers: Record<string, string> = {};
          for (const line of lines.slice(1)) {
            const colon = line.indexOf(':');
            headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
          }
          const length = Number(headers['content-length'] ?? 0);
          if (buffer.length < headEnd + 4 + length) return;
          const body = buffer.toString('utf8', headEnd + 4, headEnd + 4 + length);
          buffer = buffer.subarray(headEnd + 4 + length);
          const request: RawRequest = {
            method,
            target,
            headers,
            body,
            uid: uidOf(body),
            connection,
            onConnection: ++onConnection,
          };
          requests.push(request);
          void Promise.resolve(current(request, socket)).catch(() => socket.destroy());
          notify(); // after the handler started, so conditions on what it did hold
        }
      });
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: (path, host = '127.0.0.1') => `https://${host}:${port}${path}`,
    caPem: caCert,
    requests,
    get connections() {
      return connections;
    },
    get closed() {
      return closed;
    },
    servernames,
    clientNames,
    handle(next) {
      current = next;
    },
    until: waits.until,
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}
