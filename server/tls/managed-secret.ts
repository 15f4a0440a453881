/**
 * The content of the Secret that holds the serving certificate in cluster mode, as plain data: parsing
 * (with a reason when it is unusable) and the pure transitions of a CA rotation. No Kubernetes client here:
 * server/kube/managed-certificate.ts reads and writes the Secret (through certificate-secret.ts);
 * server/tls/rotation.ts decides which transition is due.
 *
 * Keys of the Secret (type kubernetes.io/tls, every value PEM):
 *   tls.crt / tls.key             the serving certificate and key every replica serves
 *   ca.crt                        the bundle of every trusted CA: what goes into the webhooks' caBundle
 *   signing-ca.crt / .key         the CA that signed tls.crt
 *   next-ca.crt / .key            the staged next CA, only while a rotation waits to be promoted
 * Annotations: the phase timestamps (ISO 8601) and the manual rotation request.
 */
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import {
  generateCa,
  issueServingCertificate,
  type CertificateAuthority,
  type PemKeyPair,
  type SubjectAltNames,
} from '../../certs/generate.js';

export const SECRET_KEYS = Object.freeze({
  cert: 'tls.crt',
  key: 'tls.key',
  bundle: 'ca.crt',
  signingCert: 'signing-ca.crt',
  signingKey: 'signing-ca.key',
  nextCert: 'next-ca.crt',
  nextKey: 'next-ca.key',
});

export const ANNOTATIONS = Object.freeze({
  /** When the next CA was added to the bundle (start of the propagation delay). */
  stagedAt: 'admissiongateway.io/ca-staged-at',
  /** When the serving certificate moved to the new CA (start of the overlap). */
  promotedAt: 'admissiongateway.io/ca-promoted-at',
  /** Any value requests a CA rotation now (`kubectl annotate secret ... admissiongateway.io/rotate-ca=now`). */
  rotate: 'admissiongateway.io/rotate-ca',
});

/** What the gateway keeps in the Secret: PEM text by key, and its annotations. */
export interface SecretContent {
  readonly data: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface CertificateInfo {
  readonly pem: string;
  readonly fingerprint256: string;
  readonly notAfter: Date;
}

export interface KeyedCa extends CertificateInfo {
  readonly key: string;
}

export interface ServingInfo extends CertificateInfo {
  readonly key: string;
  /** `DNS:a, IP Address:127.0.0.1` as node prints it, to notice changed SANs. */
  readonly subjectAltName: string;
}

/** A Secret whose content passed every check in {@link parseManagedSecret}. */
export interface CertificateState {
  readonly serving: ServingInfo;
  readonly signing: KeyedCa;
  readonly next?: KeyedCa;
  /** The CAs of ca.crt, in order. */
  readonly bundle: readonly CertificateInfo[];
  readonly stagedAt?: Date;
  readonly promotedAt?: Date;
  readonly rotateRequested: boolean;
}

export type ParseResult =
  { readonly ok: true; readonly state: CertificateState } | { readonly ok: false; readonly problem: string };

/** Creation parameters of new certificates. */
export interface IssueParams {
  readonly sans: SubjectAltNames;
  readonly caValiditySeconds: number;
  readonly certValiditySeconds: number;
  readonly now: Date;
  /** Key pairs made beforehand off the event loop, used in order; when absent or used up, keys are made here. */
  readonly keyPairs?: readonly PemKeyPair[];
}

/** The n-th key pair made beforehand, if there is one. */
function keyPair(params: IssueParams, n: number): { keyPair?: PemKeyPair } {
  const pair = params.keyPairs?.[n];
  return pair ? { keyPair: pair } : {};
}

class Problem extends Error {}

/**
 * Checks a Secret's content: every PEM parses, each key belongs to its certificate, the serving
 * certificate was signed by the signing CA, the bundle trusts the signing CA (and the next one while
 * staged), and phase timestamps are valid dates. Anything else is `{ ok: false, problem }` naming the key.
 */
export function parseManagedSecret(content: SecretContent): ParseResult {
  try {
    return { ok: true, state: parseOrThrow(content) };
  } catch (err) {
    if (err instanceof Problem) return { ok: false, problem: err.message };
    throw err;
  }
}

function parseOrThrow({ data, annotations }: SecretContent): CertificateState {
  const signing = keyedCa(data, SECRET_KEYS.signingCert, SECRET_KEYS.signingKey);
  const servingCert = certificate(data, SECRET_KEYS.cert);
  const servingKey = privateKey(data, SECRET_KEYS.key);
  if (!servingCert.x509.checkPrivateKey(servingKey.object)) {
    throw new Problem(`${SECRET_KEYS.key} does not belong to ${SECRET_KEYS.cert}`);
  }
  if (!servingCert.x509.checkIssued(signing.x509) || !servingCert.x509.verify(signing.x509.publicKey)) {
    throw new Problem(`${SECRET_KEYS.cert} was not signed by ${SECRET_KEYS.signingCert}`);
  }
  const hasNext = data[SECRET_KEYS.nextCert] !== undefined || data[SECRET_KEYS.nextKey] !== undefined;
  const next = hasNext ? keyedCa(data, SECRET_KEYS.nextCert, SECRET_KEYS.nextKey) : undefined;
  const bundle = bundleOf(data);
  const trusted = new Set(bundle.map((c) => c.fingerprint256));
  if (!trusted.has(signing.info.fingerprint256)) {
    throw new Problem(`${SECRET_KEYS.bundle} does not contain ${SECRET_KEYS.signingCert}`);
  }
  if (next && !trusted.has(next.info.fingerprint256)) {
    throw new Problem(`${SECRET_KEYS.bundle} does not contain the staged ${SECRET_KEYS.nextCert}`);
  }
  const stagedAt = timestamp(annotations, ANNOTATIONS.stagedAt);
  const promotedAt = timestamp(annotations, ANNOTATIONS.promotedAt);
  if (next && !stagedAt) throw new Problem(`${SECRET_KEYS.nextCert} is staged but ${ANNOTATIONS.stagedAt} is missing`);
  return {
    serving: {
      ...info(servingCert.pem, servingCert.x509),
      key: servingKey.pem,
      subjectAltName: servingCert.x509.subjectAltName ?? '',
    },
    signing: signing.info,
    ...(next ? { next: next.info } : {}),
    bundle,
    ...(stagedAt ? { stagedAt } : {}),
    ...(promotedAt ? { promotedAt } : {}),
    rotateRequested: annotations[ANNOTATIONS.rotate] !== undefined,
  };
}

/** Node's `subjectAltName` text for the SANs a new certificate would get, to compare with a served one. */
export function subjectAltNameText(sans: SubjectAltNames): string {
  return [...sans.dnsNames.map((d) => `DNS:${d}`), ...sans.ipAddresses.map((ip) => `IP Address:${ipText(ip)}`)].join(
    ', ',
  );
}

/** Node prints IPv6 SANs fully expanded in upper case hex without zero compression. */
function ipText(ip: string): string {
  if (!ip.includes(':')) return ip;
  const [head = '', tail = ''] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  return groups.map((g) => parseInt(g, 16).toString(16).toUpperCase()).join(':');
}

// ---- transitions (each returns the whole new content) ----

/** A first CA and serving certificate; the bundle trusts that CA only. */
export function initialContent(params: IssueParams): SecretContent {
  const ca = generateCa({
    validitySeconds: params.caValiditySeconds,
    now: params.now.getTime(),
    ...keyPair(params, 0),
  });
  return steadyContent(ca, [ca.cert], params, 1);
}

/** Stage: a new CA joins the bundle (old + next); the serving certificate is unchanged. */
export function stageContent(state: CertificateState, params: IssueParams): SecretContent {
  const next = generateCa({
    validitySeconds: params.caValiditySeconds,
    now: params.now.getTime(),
    ...keyPair(params, 0),
  });
  return {
    data: {
      ...servingData(state.serving.pem, state.serving.key),
      [SECRET_KEYS.bundle]: joinPem([...state.bundle.map((c) => c.pem), next.cert]),
      [SECRET_KEYS.signingCert]: state.signing.pem,
      [SECRET_KEYS.signingKey]: state.signing.key,
      [SECRET_KEYS.nextCert]: next.cert,
      [SECRET_KEYS.nextKey]: next.key,
    },
    annotations: { [ANNOTATIONS.stagedAt]: params.now.toISOString() },
  };
}

/** Promote: the next CA signs a new serving certificate; the bundle keeps trusting both during the overlap. */
export function promoteContent(state: CertificateState, params: IssueParams): SecretContent {
  if (!state.next) throw new Error('promote: no CA is staged');
  const ca: CertificateAuthority = { cert: state.next.pem, key: state.next.key };
  const content = steadyContent(
    ca,
    state.bundle.map((c) => c.pem),
    params,
  );
  return { data: content.data, annotations: { [ANNOTATIONS.promotedAt]: params.now.toISOString() } };
}

/** Prune: the bundle trusts the signing CA only. */
export function pruneContent(state: CertificateState): SecretContent {
  return {
    data: {
      ...servingData(state.serving.pem, state.serving.key),
      [SECRET_KEYS.bundle]: joinPem([state.signing.pem]),
      [SECRET_KEYS.signingCert]: state.signing.pem,
      [SECRET_KEYS.signingKey]: state.signing.key,
    },
    annotations: {},
  };
}

/** Reissue: a new serving certificate from the same CA (renewal, or changed SANs). */
export function reissueContent(state: CertificateState, params: IssueParams): SecretContent {
  const content = steadyContent(
    { cert: state.signing.pem, key: state.signing.key },
    state.bundle.map((c) => c.pem),
    params,
  );
  return { data: content.data, annotations: {} };
}

function steadyContent(
  ca: CertificateAuthority,
  bundle: readonly string[],
  params: IssueParams,
  keyIndex = 0,
): SecretContent {
  const leaf = issueServingCertificate({
    ca,
    sans: params.sans,
    validitySeconds: params.certValiditySeconds,
    now: params.now.getTime(),
    ...keyPair(params, keyIndex),
  });
  return {
    data: {
      ...servingData(leaf.cert, leaf.key),
      [SECRET_KEYS.bundle]: joinPem(bundle),
      [SECRET_KEYS.signingCert]: ca.cert,
      [SECRET_KEYS.signingKey]: ca.key,
    },
    annotations: {},
  };
}

function servingData(cert: string, key: string): Record<string, string> {
  return { [SECRET_KEYS.cert]: cert, [SECRET_KEYS.key]: key };
}

function joinPem(pems: readonly string[]): string {
  return pems.map((p) => (p.endsWith('\n') ? p : `${p}\n`)).join('');
}

/** Splits a PEM bundle into its certificates. */
export function splitPem(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n?/g) ?? [];
}

// ---- parsing helpers ----

function required(data: Readonly<Record<string, string>>, key: string): string {
  const value = data[key];
  if (value === undefined || value.trim() === '') throw new Problem(`${key} is missing`);
  return value;
}

function certificate(data: Readonly<Record<string, string>>, key: string): { pem: string; x509: X509Certificate } {
  const pem = required(data, key);
  try {
    return { pem, x509: new X509Certificate(pem) };
  } catch (err) {
    throw new Problem(`${key} is not a PEM certificate (${err instanceof Error ? err.message : String(err)})`);
  }
}

function privateKey(data: Readonly<Record<string, string>>, key: string): { pem: string; object: KeyObject } {
  const pem = required(data, key);
  try {
    return { pem, object: createPrivateKey(pem) };
  } catch (err) {
    throw new Problem(
      `${key} is not an unencrypted PEM private key (${err instanceof Error ? err.message : String(err)})`,
    );
  }
}

function keyedCa(
  data: Readonly<Record<string, string>>,
  certKey: string,
  keyKey: string,
): { info: KeyedCa; x509: X509Certificate } {
  const cert = certificate(data, certKey);
  const key = privateKey(data, keyKey);
  if (!cert.x509.ca) throw new Problem(`${certKey} is not a CA certificate`);
  if (!cert.x509.checkPrivateKey(key.object)) throw new Problem(`${keyKey} does not belong to ${certKey}`);
  return { info: { ...info(cert.pem, cert.x509), key: key.pem }, x509: cert.x509 };
}

function bundleOf(data: Readonly<Record<string, string>>): CertificateInfo[] {
  const pems = splitPem(required(data, SECRET_KEYS.bundle));
  if (pems.length === 0) throw new Problem(`${SECRET_KEYS.bundle} contains no PEM certificate`);
  return pems.map((pem, i) => {
    try {
      return info(pem, new X509Certificate(pem));
    } catch (err) {
      throw new Problem(
        `${SECRET_KEYS.bundle} certificate ${i + 1} does not parse (${err instanceof Error ? err.message : String(err)})`,
      );
    }
  });
}

function info(pem: string, x509: X509Certificate): CertificateInfo {
  return { pem, fingerprint256: x509.fingerprint256, notAfter: new Date(x509.validTo) };
}

function timestamp(annotations: Readonly<Record<string, string>>, key: string): Date | undefined {
  const raw = annotations[key];
  if (raw === undefined) return undefined;
  const date = new Date(raw);
  if (Number.isNaN(date.getTime())) throw new Problem(`annotation ${key} is not a timestamp: ${JSON.stringify(raw)}`);
  return date;
}
