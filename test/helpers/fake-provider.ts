/**
 * A real remote provider for tests: an HTTPS server on 127.0.0.1 with its own generated CA, whose paths
 * name their behaviour (in the spirit of apiserver's testing/webhook_server.go). The behaviour is the
 * LAST path segment, so `/allow` and `/hooks/allow` behave alike (discovered handlers are POSTed at
 * `<base>/<handler>`); `route()` maps any other path onto a behaviour and can be changed at run time.
 *
 *   allow               allowed
 *   deny                allowed: false, status { code 403, message 'denied by fake' }
 *   patch               allowed with PROVIDER_PATCH (label `provider: patched`), base64 + patchType JSONPatch —
 *                       on every operation, DELETE included, where a patch must never reach the apiserver
 *   patch-without-type  the same patch without patchType
 *   warn                allowed with WARN_ANSWER's warnings and auditAnnotations
 *   slow                allowed after `?ms=` milliseconds (else the configured `delayMs`); `slow-<ms>` as a path
 *                       segment says the same where the client sets the query (a provider URL has none)
 *   hang                never answers; the record notes when the client closes the request
 *   500                 HTTP 500 with a text body
 *   garbage             HTTP 200, Content-Type application/json, a body that is not JSON
 *   wrong-uid           a well-formed answer whose response.uid is not the request's
 *   redirect            302 to /allow
 *   oversized           HTTP 200 with OVERSIZED_BYTES bytes (far over the client's 20 MiB cap) streamed chunked;
 *                       `oversized-<bytes>` sends that many bytes
 *   oversized-declared  the same with a Content-Length header; `oversized-declared-<bytes>` likewise
 *   v1beta1-only        answers admission.k8s.io/v1beta1 reviews; HTTP 400 for any other version
 *   v1beta1-patch       an old webhook: answers admission.k8s.io/v1beta1 reviews (HTTP 400 for any other version)
 *                       with PROVIDER_PATCH as v1beta1 allows it: no patchType, no uid, no apiVersion or kind
 *   discovery           (GET) the configured discovery document, after failing `failFirst` times with HTTP 503
 *
 * A compromised provider, for the gateway's bounds (HOSTILE_* below say exactly what each sends):
 *   hostile-uid         a well-formed answer whose response.uid is HOSTILE_UID_CHARS characters long
 *   hostile-deny        a deny whose message is HOSTILE_MESSAGE_CHARS characters, with terminal escapes and
 *                       line breaks in it
 *   hostile-notes       allowed, with HOSTILE_NOTE_COUNT warnings and as many audit annotations
 *   hostile-copies      allowed, with a patch that copies /spec into itself HOSTILE_COPIES times (each copy
 *                       doubles the object)
 *   hostile-deep        allowed, with a patch adding a value nested HOSTILE_DEPTH levels deep
 *
 * A remote authorize provider (SubjectAccessReview, authorization.k8s.io/v1; `hang`, `500` and `garbage` serve
 * it too):
 *   sar-deny            status { allowed: false, denied: true, reason: SAR_DENY_REASON }
 *   sar-none            status { allowed: false }: no opinion
 *   sar-allow           status { allowed: true }, which the gateway may not pass on as a grant
 *
 * Every request is recorded (method, path, query, headers, parsed body, TLS connection number) before it
 * is answered, so tests can check the fresh uid, the granted `?timeout=`, the object sent and the
 * settings header. `until()` awaits a condition on the records without sleeping.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { caBundle, generateCertificates, type CertificateBundle } from '../../certs/generate.js';
import { SETTINGS_HEADER } from '../../server/providers/provider-client.js';
import { conditions } from './wait.js';

export const PROVIDER_PATCH = [{ op: 'add', path: '/metadata/labels/provider', value: 'patched' }] as const;
export const DENY_MESSAGE = 'denied by fake';
export const SAR_DENY_REASON = 'the fake says no';
export const WRONG_UID = 'not-the-request-uid';
export const WARN_ANSWER = {
  warnings: ['image is old', 'consider a digest'],
  auditAnnotations: { scanned: 'true', 'scanner-version': '1.2.3' },
} as const;
/**
 * Well over the provider client's 20 MiB response cap — by more than loopback socket buffers hold, so a
 * client that stops reading at the cap leaves the fake's answer unfinished (and visibly so).
 */
export const OVERSIZED_BYTES = 64 * 1024 * 1024;

export const HOSTILE_UID_CHARS = 1024 * 1024;
export const HOSTILE_MESSAGE_CHARS = 5 * 1024 * 1024;
/** What hostile-deny's message starts with, and the escapes it carries. */
export const HOSTILE_MESSAGE_START = 'denied\u001b[2J\r\nforged log line ';
export const HOSTILE_NOTE_COUNT = 100_000;
export const HOSTILE_COPIES = 12;
export const HOSTILE_DEPTH = 100_000;

export const BEHAVIOURS = [
  'allow',
  'deny',
  'patch',
  'patch-without-type',
  'warn',
  'slow',
  'hang',
  '500',
  'garbage',
  'wrong-uid',
  'redirect',
  'oversized',
  'oversized-declared',
  'v1beta1-only',
  'v1beta1-patch',
  'discovery',
  'hostile-uid',
  'hostile-deny',
  'hostile-notes',
  'hostile-copies',
  'hostile-deep',
  'sar-deny',
  'sar-none',
  'sar-allow',
] as const;
export type Behaviour = (typeof BEHAVIOURS)[number];

const V1 = 'admission.k8s.io/v1';
const V1BETA1 = 'admission.k8s.io/v1beta1';

/** The part of an AdmissionReview the fake reads. */
export interface IncomingReview {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly request?: {
    readonly uid?: string;
    readonly operation?: string;
    readonly object?: unknown;
    readonly [key: string]: unknown;
  };
}

export interface ProviderCallRecord {
  readonly method: string;
  readonly path: string;
  /** What the fake did with the request (undefined: unknown path, answered 404). */
  readonly behaviour: Behaviour | undefined;
  readonly query: Readonly<Record<string, string>>;
  /** The `?timeout=` the gateway granted, as sent. */
  readonly timeout: string | null;
  /** The `?timeout=` in milliseconds when it has the `<n>ms` form. */
  readonly timeoutMs: number | undefined;
  readonly headers: IncomingHttpHeaders;
  /** The settings header, parsed. */
  readonly settings: Readonly<Record<string, string>> | undefined;
  /** The parsed body (undefined for a GET or a body that is not JSON). */
  readonly review: IncomingReview | undefined;
  readonly apiVersion: string | undefined;
  readonly uid: string;
  readonly operation: string;
  /** request.object as received. */
  readonly object: unknown;
  /** 1-based number of the TLS connection the request came on. */
  readonly connection: number;
  /** The client went away before the fake finished its answer (a hang, a slow answer, a capped body). */
  readonly clientClosed: boolean;
}

export interface DiscoveryOptions {
  /** The JSON document served at `<...>/discovery`. */
  readonly document: unknown;
  /** Answer HTTP 503 this many times first. */
  readonly failFirst?: number;
  /** After the failures, hold the next discovery request until `releaseDiscovery()`. */
  readonly holdAfterFailures?: boolean;
}

export interface FakeProviderOptions {
  /** Delay of `slow` when the request has no `?ms=`. Default 100. */
  readonly delayMs?: number;
  readonly discovery?: DiscoveryOptions;
  /** Serve a certificate signed by a CA other than the one `caBundle` names (TLS verification fails). */
  readonly untrusted?: boolean;
  /** SANs of the serving certificate. Default localhost + 127.0.0.1. */
  readonly sans?: { readonly dnsNames: string[]; readonly ipAddresses: string[] };
  /** Extra path → behaviour routes. */
  readonly routes?: Readonly<Record<string, Behaviour | `${Behaviour}-${number}`>>;
}

export interface FakeProvider {
  /** https://127.0.0.1:<port> */
  readonly origin: string;
  /** https://127.0.0.1:<port><path> */
  url(path: string): string;
  /** base64 PEM for the chain entry's `caBundle` (of an unrelated CA when `untrusted`). */
  readonly caBundle: string;
  /** PEM of the same CA, for a provider client's `ca`. */
  readonly caPem: string;
  readonly calls: readonly ProviderCallRecord[];
  /** The calls whose behaviour is not `discovery`. */
  reviews(): ProviderCallRecord[];
  /** The discovery requests received so far. */
  discoveryCalls(): ProviderCallRecord[];
  /** TLS connections accepted so far. */
  readonly connections: number;
  /** Routes `path` to `behaviour` (a behaviour name, optionally with its `-<n>` parameter) from now on. */
  route(path: string, behaviour: Behaviour | `${Behaviour}-${number}`): void;
  setDiscovery(options: DiscoveryOptions): void;
  /** Answers a held discovery request (and any later one) normally. */
  releaseDiscovery(): void;
  /** Forgets the records (not the connection count). */
  reset(): void;
  /** Resolves once `check()` holds, re-checked on every request and every client close; rejects after `timeoutMs`. */
  until(what: string, check: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

interface MutableRecord extends ProviderCallRecord {
  clientClosed: boolean;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function parseSettings(header: string | string[] | undefined): Record<string, string> | undefined {
  if (typeof header !== 'string') return undefined;
  const parsed = parseJson(header);
  return isRecord(parsed) ? (parsed as Record<string, string>) : undefined;
}

const WITH_PARAMETER = /^(slow|oversized|oversized-declared)-(\d+)$/;

/** The behaviour named by the last path segment, and its numeric parameter (`slow-250`). */
function behaviourOf(path: string): { behaviour: Behaviour | undefined; parameter: number | undefined } {
  const last = path.split('/').filter(Boolean).pop() ?? '';
  if ((BEHAVIOURS as readonly string[]).includes(last)) return { behaviour: last as Behaviour, parameter: undefined };
  const m = WITH_PARAMETER.exec(last);
  return m ? { behaviour: m[1] as Behaviour, parameter: Number(m[2]) } : { behaviour: undefined, parameter: undefined };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Writes `total` bytes in chunks, respecting backpressure, and stops when the client goes away. */
async function stream(res: ServerResponse, total: number): Promise<void> {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  let left = total;
  while (left > 0 && !res.destroyed) {
    const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
    left -= piece.length;
    if (!res.write(piece)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    }
  }
  if (!res.destroyed) res.end();
}

let cachedCerts: { server: CertificateBundle; other: CertificateBundle } | undefined;

/** One CA + serving certificate per process (RSA key generation is the slow part), and one unrelated CA. */
function certificates(sans?: FakeProviderOptions['sans']): { server: CertificateBundle; other: CertificateBundle } {
  if (sans) {
    return { server: generateCertificates({ ...sans }), other: certificates().other };
  }
  cachedCerts ??= {
    server: generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] }),
    other: generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] }),
  };
  return cachedCerts;
}

export async function startFakeProvider(options: FakeProviderOptions = {}): Promise<FakeProvider> {
  const certs = certificates(options.sans);
  const trusted = options.untrusted ? certs.other : certs.server;
  const calls: MutableRecord[] = [];
  const routes = new Map<string, string>(Object.entries(options.routes ?? {}));
  const waits = conditions(5000);
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Map<TLSSocket, number>();
  let connections = 0;
  let discovery: DiscoveryOptions | undefined = options.discovery;
  let discoveryServed = 0;
  let discoveryReleased = false;
  const heldDiscovery = new Set<() => void>();

  const notify = waits.notify;

  const respond = async (req: IncomingMessage, res: ServerResponse, text: string): Promise<void> => {
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    const routed = routes.get(url.pathname);
    const { behaviour, parameter } = routed ? behaviourOf(`/${routed}`) : behaviourOf(url.pathname);
    const parsed = parseJson(text);
    const review: IncomingReview | undefined = isRecord(parsed) ? parsed : undefined;
    const uid = typeof review?.request?.uid === 'string' ? review.request.uid : '';
    const timeout = url.searchParams.get('timeout');
    const ms = timeout !== null ? /^(\d+)ms$/.exec(timeout) : null;
    const record: MutableRecord = {
      method: req.method ?? '',
      path: url.pathname,
      behaviour,
      query: Object.fromEntries(url.searchParams),
      timeout,
      timeoutMs: ms ? Number(ms[1]) : undefined,
      headers: req.headers,
      settings: parseSettings(req.headers[SETTINGS_HEADER]),
      review,
      apiVersion: review?.apiVersion,
      uid,
      operation: typeof review?.request?.operation === 'string' ? review.request.operation : '',
      object: review?.request?.object,
      connection: sockets.get(req.socket as TLSSocket) ?? 0,
      clientClosed: false,
    };
    calls.push(record);
    res.on('close', () => {
      if (!res.writableFinished) {
        record.clientClosed = true;
        notify();
      }
    });
    notify();

    const apiVersion = review?.apiVersion ?? V1;
    const answer = (response: Record<string, unknown>, version = apiVersion) =>
      sendJson(res, 200, { apiVersion: version, kind: 'AdmissionReview', response: { uid, ...response } });
    const encodedPatch = Buffer.from(JSON.stringify(PROVIDER_PATCH)).toString('base64');

    const authorizeAnswer = (status: Record<string, unknown>) =>
      sendJson(res, 200, { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', status });

    switch (behaviour) {
      case 'sar-deny':
        return authorizeAnswer({ allowed: false, denied: true, reason: SAR_DENY_REASON });
      case 'sar-none':
        return authorizeAnswer({ allowed: false });
      case 'sar-allow':
        return authorizeAnswer({ allowed: true });
      case 'allow':
        return answer({ allowed: true });
      case 'deny':
        return answer({ allowed: false, status: { code: 403, message: DENY_MESSAGE } });
      case 'patch':
        return answer({ allowed: true, patchType: 'JSONPatch', patch: encodedPatch });
      case 'patch-without-type':
        return answer({ allowed: true, patch: encodedPatch });
      case 'warn':
        return answer({ allowed: true, ...structuredClone(WARN_ANSWER) });
      case 'slow': {
        const delay = parameter ?? Number(url.searchParams.get('ms') ?? options.delayMs ?? 100);
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (!res.destroyed) answer({ allowed: true });
        }, delay);
        timers.add(timer);
        res.on('close', () => {
          clearTimeout(timer);
          timers.delete(timer);
        });
        return;
      }
      case 'hang':
        return;
      case '500':
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('internal error in the fake provider');
        return;
      case 'garbage':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('<html>this is not JSON</html>');
        return;
      case 'wrong-uid':
        return sendJson(res, 200, {
          apiVersion,
          kind: 'AdmissionReview',
          response: { uid: WRONG_UID, allowed: true },
        });
      case 'hostile-uid':
        return sendJson(res, 200, {
          apiVersion,
          kind: 'AdmissionReview',
          response: { uid: 'u'.repeat(HOSTILE_UID_CHARS), allowed: true },
        });
      case 'hostile-deny':
        return answer({
          allowed: false,
          status: { code: 403, message: HOSTILE_MESSAGE_START.padEnd(HOSTILE_MESSAGE_CHARS, 'x') },
        });
      case 'hostile-notes': {
        const warnings = Array.from({ length: HOSTILE_NOTE_COUNT }, (_, i) => `warning ${i}`);
        const auditAnnotations = Object.fromEntries(warnings.map((_, i) => [`key-${i}`, `value ${i}`]));
        return answer({ allowed: true, warnings, auditAnnotations });
      }
      case 'hostile-copies': {
        const copies = Array.from({ length: HOSTILE_COPIES }, (_, i) => ({
          op: 'copy',
          from: '/spec',
          path: `/spec/copy${i}`,
        }));
        return answer({
          allowed: true,
          patchType: 'JSONPatch',
          patch: Buffer.from(JSON.stringify(copies)).toString('base64'),
        });
      }
      case 'hostile-deep': {
        const deep = `${'{"a":'.repeat(HOSTILE_DEPTH)}1${'}'.repeat(HOSTILE_DEPTH)}`;
        const patch = `[{"op":"add","path":"/metadata/labels/deep","value":${deep}}]`;
        return answer({ allowed: true, patchType: 'JSONPatch', patch: Buffer.from(patch).toString('base64') });
      }
      case 'redirect':
        res.writeHead(302, { location: '/allow', 'content-length': 0 });
        res.end();
        return;
      case 'oversized':
      case 'oversized-declared': {
        const bytes = parameter ?? OVERSIZED_BYTES;
        const declare = behaviour === 'oversized-declared';
        res.writeHead(200, { 'content-type': 'application/json', ...(declare ? { 'content-length': bytes } : {}) });
        await stream(res, bytes);
        return;
      }
      case 'v1beta1-only':
        if (apiVersion !== V1BETA1) {
          return sendJson(res, 400, { error: `only ${V1BETA1} is supported, got ${String(review?.apiVersion)}` });
        }
        return answer({ allowed: true }, V1BETA1);
      case 'v1beta1-patch':
        if (apiVersion !== V1BETA1) {
          return sendJson(res, 400, { error: `only ${V1BETA1} is supported, got ${String(review?.apiVersion)}` });
        }
        return sendJson(res, 200, { response: { allowed: true, patch: encodedPatch } });
      case 'discovery': {
        const current = discovery;
        if (!current) return sendJson(res, 404, { error: 'no discovery configured' });
        discoveryServed++;
        if (discoveryServed <= (current.failFirst ?? 0)) {
          return sendJson(res, 503, { error: `discovery failure ${discoveryServed}` });
        }
        if (current.holdAfterFailures && !discoveryReleased) {
          await new Promise<void>((resolve) => {
            heldDiscovery.add(resolve);
            res.on('close', () => {
              heldDiscovery.delete(resolve);
              resolve();
            });
          });
          if (res.destroyed) return;
        }
        return sendJson(res, 200, current.document);
      }
      default:
        return sendJson(res, 404, { error: `no behaviour at ${url.pathname}` });
    }
  };

  const server = https.createServer({ cert: certs.server.cert, key: certs.server.key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      respond(req, res, Buffer.concat(chunks).toString('utf8')).catch((err: unknown) => {
        res.destroy(err instanceof Error ? err : new Error(String(err)));
      });
    });
  });
  server.on('secureConnection', (socket: TLSSocket) => {
    connections++;
    sockets.set(socket, connections);
    socket.on('close', () => {
      sockets.delete(socket);
      notify();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `https://127.0.0.1:${port}`;

  let closed: Promise<void> | undefined;
  return {
    origin,
    url: (path) => `${origin}${path}`,
    caBundle: caBundle(trusted.caCert),
    caPem: trusted.caCert,
    calls,
    reviews: () => calls.filter((c) => c.behaviour !== 'discovery'),
    discoveryCalls: () => calls.filter((c) => c.behaviour === 'discovery'),
    get connections() {
      return connections;
    },
    route: (path, behaviour) => void routes.set(path, behaviour),
    setDiscovery(next) {
      discovery = next;
      discoveryServed = 0;
      discoveryReleased = false;
    },
    releaseDiscovery() {
      discoveryReleased = true;
      for (const resolve of [...heldDiscovery]) resolve();
      heldDiscovery.clear();
    },
    reset: () => void calls.splice(0),
    until: waits.until,
    close() {
      closed ??= new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        for (const resolveHeld of heldDiscovery) resolveHeld();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

/** An https URL on 127.0.0.1 where nothing listens (connection refused). */
export async function closedPortUrl(path = '/allow'): Promise<string> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `https://127.0.0.1:${port}${path}`;
}
