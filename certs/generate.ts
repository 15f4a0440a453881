/**
 * Deploy-time certificate generation: a self-signed CA and a serving certificate for the webhook.
 *
 * kube-apiserver only calls a webhook over HTTPS and verifies the serving certificate against the
 * `caBundle` of the webhook configuration, so the gateway needs a CA it controls plus a leaf certificate
 * whose subjectAltName covers the name the apiserver dials (`<svc>.<ns>.svc`, or `127.0.0.1` for
 * url-based webhooks). This module imports nothing from `server/`: the CLI (`admission-gateway certs`)
 * and the runtime (`server/tls/`) both call into it, in the same split as pepr's `tls.ts`.
 *
 * node-forge only builds and signs certificates here; RSA keys come from `node:crypto` (native, fast) and
 * certificates are inspected with `X509Certificate`, never verified with forge, whose signature check is open
 * to forgery (CVE-2026-85393; docs/decisions.md, "node-forge only builds certificates").
 */
import forge from 'node-forge';
import { generateKeyPair, generateKeyPairSync, randomBytes, randomUUID, type RSAKeyPairOptions } from 'node:crypto';
import { promisify } from 'node:util';
import { chmod, mkdir, open, rename, rm } from 'node:fs/promises';
import { isIP } from 'node:net';
import { dirname, join } from 'node:path';

/** Options for {@link generateCertificates}. */
export interface GenerateCertificatesOptions {
  /** Subject CN of the serving certificate. Default: the first DNS name, else `admission-gateway`. Clients match SANs, not CN. */
  commonName?: string;
  /** DNS subjectAltNames. Go clients (kube-apiserver) ignore CN and reject a certificate without SANs. */
  dnsNames: string[];
  /** IP subjectAltNames (IPv4 or IPv6), e.g. `127.0.0.1` for url-based webhooks on loopback. */
  ipAddresses: string[];
  /** Serving certificate lifetime in days. Default 365. Must not exceed `caValidityDays`. */
  validityDays?: number;
  /** CA lifetime in days. Default 3650, so the caBundle registered in the cluster outlives many leaf rotations. */
  caValidityDays?: number;
  /** RSA modulus length for both keys. Default 2048 (at least 2048). */
  keyBits?: number;
}

/** PEM-encoded output of {@link generateCertificates}. Private keys are unencrypted PKCS#8. */
export interface CertificateBundle {
  caCert: string;
  caKey: string;
  cert: string;
  key: string;
}

/** File names inside the target directory for {@link writeCertificates}; the defaults match a `kubernetes.io/tls` Secret. */
export interface CertificateFileNames {
  caCert: string;
  caKey: string;
  cert: string;
  key: string;
}

/** Absolute or dir-relative paths of the files {@link writeCertificates} wrote. */
export interface CertificateFiles {
  caCertFile: string;
  caKeyFile: string;
  certFile: string;
  keyFile: string;
}

/** Subject alternative names for the serving certificate. */
export interface SubjectAltNames {
  dnsNames: string[];
  ipAddresses: string[];
}

/** Default file names: `ca.crt`, `ca.key`, `tls.crt`, `tls.key` (the keys of a `kubernetes.io/tls` Secret plus its CA). */
export const DEFAULT_FILE_NAMES: Readonly<CertificateFileNames> = Object.freeze({
  caCert: 'ca.crt',
  caKey: 'ca.key',
  cert: 'tls.crt',
  key: 'tls.key',
});

/** Service the manifests deploy; the apiserver dials `https://<name>.<namespace>.svc:443`. */
export const DEFAULT_SERVICE = Object.freeze({ name: 'admission-gateway', namespace: 'admission-gateway' });

/** Backdating of `notBefore`, so a node whose clock runs slightly behind still accepts a fresh certificate. */
const CLOCK_SKEW_MS = 5 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;
const DAY_SECONDS = 24 * 60 * 60;
const CA_COMMON_NAME = 'admission-gateway CA';
const ORGANIZATION = 'admission-gateway';

/**
 * SANs that cover every way the gateway is reached: the in-cluster Service names (short `.svc` form, which
 * is what the apiserver dials for `service:` webhooks, and the fully-qualified form), plus loopback for
 * local runs and url-based webhooks in tests.
 */
export function defaultSans(service: { name: string; namespace: string } = DEFAULT_SERVICE): SubjectAltNames {
  const svc = `${service.name}.${service.namespace}.svc`;
  return { dnsNames: [svc, `${svc}.cluster.local`, 'localhost'], ipAddresses: ['127.0.0.1', '::1'] };
}

/**
 * Generates a fresh CA and a serving certificate signed by it.
 *
 * The CA is self-signed (basicConstraints cA:true critical, keyCertSign + cRLSign); the leaf is
 * cA:false with digitalSignature + keyEncipherment, extKeyUsage serverAuth, the given SANs, and an
 * authorityKeyIdentifier pointing at the CA. Both are sha256WithRSAEncryption, backdated 5 minutes.
 * Throws a RangeError on invalid options (no SANs, a malformed IP, non-positive lifetimes, weak keys).
 */
export function generateCertificates(opts: GenerateCertificatesOptions): CertificateBundle {
  const validityDays = opts.validityDays ?? 365;
  const caValidityDays = opts.caValidityDays ?? 3650;
  const keyBits = opts.keyBits ?? 2048;
  validateOptions(opts, validityDays, caValidityDays, keyBits);

  const now = Date.now();
  const caKeys = generateRsaKeyPair(keyBits);
  const caCert = buildCaCertificate(caKeys, now, caValidityDays);
  const leafKeys = generateRsaKeyPair(keyBits);
  const commonName = opts.commonName ?? opts.dnsNames[0] ?? ORGANIZATION;
  const cert = buildServingCertificate(leafKeys, caCert, caKeys.forgePrivate, {
    commonName,
    sans: { dnsNames: opts.dnsNames, ipAddresses: opts.ipAddresses },
    now,
    validityDays,
  });

  return {
    caCert: forge.pki.certificateToPem(caCert),
    caKey: caKeys.privatePem,
    cert: forge.pki.certificateToPem(cert),
    key: leafKeys.privatePem,
  };
}

/** A CA as PEM (certificate + unencrypted PKCS#8 key), e.g. the signing CA kept in a Secret. */
export interface CertificateAuthority {
  cert: string;
  key: string;
}

/** Options for {@link generateCa}. */
export interface GenerateCaOptions {
  /** CA lifetime in seconds (seconds, not days, so tests can rotate in seconds). */
  validitySeconds: number;
  /** Default 2048 (at least 2048). */
  keyBits?: number;
  /** Issue time; default `Date.now()`. */
  now?: number;
  /** A key pair made beforehand (see {@link newKeyPair}); default: generated here, synchronously. */
  keyPair?: PemKeyPair;
}

/** Options for {@link issueServingCertificate}. */
export interface IssueServingCertificateOptions {
  ca: CertificateAuthority;
  sans: SubjectAltNames;
  /** Leaf lifetime in seconds; the leaf never outlives its CA (notAfter is capped at the CA's). */
  validitySeconds: number;
  commonName?: string;
  keyBits?: number;
  now?: number;
  /** A key pair made beforehand (see {@link newKeyPair}); default: generated here, synchronously. */
  keyPair?: PemKeyPair;
}

/** A fresh self-signed CA valid from now (backdated for clock skew) for `validitySeconds`. */
export function generateCa(opts: GenerateCaOptions): CertificateAuthority {
  const keyBits = opts.keyBits ?? 2048;
  requirePositiveInteger('validitySeconds', opts.validitySeconds);
  if (!Number.isInteger(keyBits) || keyBits < 2048) {
    throw new RangeError(`generateCa: keyBits ${keyBits}: expected an integer >= 2048`);
  }
  const keys = opts.keyPair ? forgeKeys(opts.keyPair) : generateRsaKeyPair(keyBits);
  const cert = buildCaCertificate(keys, opts.now ?? Date.now(), opts.validitySeconds / DAY_SECONDS);
  return { cert: forge.pki.certificateToPem(cert), key: keys.privatePem };
}

/**
 * A serving certificate signed by `ca`, valid for `validitySeconds` but never past the CA's notAfter (a
 * leaf that outlives its CA fails verification at the CA's expiry anyway; capping makes that visible).
 */
export function issueServingCertificate(opts: IssueServingCertificateOptions): { cert: string; key: string } {
  validateOptions({ dnsNames: opts.sans.dnsNames, ipAddresses: opts.sans.ipAddresses }, 1, 1, opts.keyBits ?? 2048);
  requirePositiveInteger('validitySeconds', opts.validitySeconds);
  const caCert = forge.pki.certificateFromPem(opts.ca.cert);
  const caKey = forge.pki.privateKeyFromPem(opts.ca.key);
  const now = opts.now ?? Date.now();
  const leafKeys = opts.keyPair ? forgeKeys(opts.keyPair) : generateRsaKeyPair(opts.keyBits ?? 2048);
  const cert = buildServingCertificate(leafKeys, caCert, caKey, {
    commonName: opts.commonName ?? opts.sans.dnsNames[0] ?? ORGANIZATION,
    sans: opts.sans,
    now,
    validityDays: opts.validitySeconds / DAY_SECONDS,
  });
  if (cert.validity.notAfter.getTime() > caCert.validity.notAfter.getTime()) {
    cert.validity.notAfter = new Date(caCert.validity.notAfter.getTime());
    cert.sign(caKey, forge.md.sha256.create());
  }
  return { cert: forge.pki.certificateToPem(cert), key: leafKeys.privatePem };
}

/**
 * Writes a bundle as PEM files into `dir` (created if needed) and returns their paths.
 *
 * Each file is written to a temporary file in the same directory and renamed into place, so the
 * runtime watcher (`server/tls/`) never reads half a file. Private keys get mode 0600 and certificates
 * 0644, set with chmod after writing because the mode passed to open() is filtered by the umask.
 * A name may contain a sub-path (`../keys/tls.key`); its directory is created too.
 */
export async function writeCertificates(
  dir: string,
  bundle: CertificateBundle,
  names: Partial<CertificateFileNames> = {},
): Promise<CertificateFiles> {
  const resolved: CertificateFileNames = { ...DEFAULT_FILE_NAMES, ...names };
  const files: CertificateFiles = {
    caCertFile: join(dir, resolved.caCert),
    caKeyFile: join(dir, resolved.caKey),
    certFile: join(dir, resolved.cert),
    keyFile: join(dir, resolved.key),
  };
  // Keys before certificates: a watcher that fires between the renames sees a mismatch and keeps the old pair.
  await writeFileAtomic(files.caKeyFile, bundle.caKey, 0o600);
  await writeFileAtomic(files.caCertFile, bundle.caCert, 0o644);
  await writeFileAtomic(files.keyFile, bundle.key, 0o600);
  await writeFileAtomic(files.certFile, bundle.cert, 0o644);
  return files;
}

/**
 * The value for `clientConfig.caBundle` of a Mutating/ValidatingWebhookConfiguration (and a provider's
 * `caBundle` in gateway.yaml): the CA PEM, base64-encoded on one line.
 */
export function caBundle(caCertPem: string): string {
  return Buffer.from(caCertPem, 'utf8').toString('base64');
}

interface RsaKeyPair {
  privatePem: string;
  forgePrivate: forge.pki.rsa.PrivateKey;
  forgePublic: forge.pki.rsa.PublicKey;
}

interface ServingCertificateParams {
  commonName: string;
  sans: SubjectAltNames;
  now: number;
  validityDays: number;
}

function validateOptions(
  opts: GenerateCertificatesOptions,
  validityDays: number,
  caValidityDays: number,
  keyBits: number,
): void {
  if (opts.dnsNames.length === 0 && opts.ipAddresses.length === 0) {
    throw new RangeError(
      'generateCertificates: expected at least one DNS name or IP address (Go clients require SANs)',
    );
  }
  for (const ip of opts.ipAddresses) {
    if (isIP(ip) === 0)
      throw new RangeError(`generateCertificates: ipAddresses "${ip}" is not an IPv4 or IPv6 address`);
  }
  for (const name of opts.dnsNames) {
    if (name.trim() === '' || /\s/.test(name)) {
      throw new RangeError(`generateCertificates: dnsNames "${name}" is not a DNS name`);
    }
  }
  requirePositiveInteger('validityDays', validityDays);
  requirePositiveInteger('caValidityDays', caValidityDays);
  if (validityDays > caValidityDays) {
    throw new RangeError(
      `generateCertificates: validityDays ${validityDays} exceeds caValidityDays ${caValidityDays}; the leaf would outlive its CA`,
    );
  }
  if (!Number.isInteger(keyBits) || keyBits < 2048) {
    throw new RangeError(`generateCertificates: keyBits ${keyBits}: expected an integer >= 2048`);
  }
}

function requirePositiveInteger(field: string, value: number): void {
  if (!Number.isInteger(value) || value <= 0) {
    throw new RangeError(`generateCertificates: ${field} ${value}: expected a positive integer`);
  }
}

/** An RSA key pair as PEM (PKCS#8 private, SPKI public). */
export interface PemKeyPair {
  readonly privateKey: string;
  readonly publicKey: string;
}

const generateKeyPairAsync = promisify(generateKeyPair);

/** RSA with e = 65537, as PEM: PKCS#8 private, SPKI public. */
function rsaPemOptions(bits: number): RSAKeyPairOptions<'pem', 'pem'> {
  return {
    modulusLength: bits,
    publicExponent: 0x10001,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  };
}

/**
 * A key pair generated on libuv's thread pool: a gateway that rotates while serving makes its keys here first,
 * so reviews are not held up behind key generation (docs/decisions.md, "Keys are generated on the thread pool").
 */
export async function newKeyPair(bits = 2048): Promise<PemKeyPair> {
  return generateKeyPairAsync('rsa', rsaPemOptions(bits));
}

function forgeKeys(pair: PemKeyPair): RsaKeyPair {
  return {
    privatePem: pair.privateKey,
    forgePrivate: forge.pki.privateKeyFromPem(pair.privateKey),
    forgePublic: forge.pki.publicKeyFromPem(pair.publicKey),
  };
}

/** Native keygen (milliseconds) instead of forge's pure-JS prime search (seconds), converted to forge keys via PEM. */
function generateRsaKeyPair(bits: number): RsaKeyPair {
  return forgeKeys(generateKeyPairSync('rsa', rsaPemOptions(bits)));
}

/**
 * A random 16-byte positive serial (RFC 5280 allows up to 20 octets). The top bit is cleared so the DER
 * INTEGER is positive, and bit 6 is set so the first octet is never 0x00 — a leading zero octet would be a
 * non-minimal encoding, which Go's strict ASN.1 parser rejects.
 */
function randomSerialHex(): string {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x40;
  return bytes.toString('hex');
}

function setValidity(cert: forge.pki.Certificate, now: number, days: number): void {
  cert.validity.notBefore = new Date(now - CLOCK_SKEW_MS);
  cert.validity.notAfter = new Date(now + days * DAY_MS);
}

function buildCaCertificate(keys: RsaKeyPair, now: number, days: number): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.forgePublic;
  cert.serialNumber = randomSerialHex();
  setValidity(cert, now, days);
  const subject = [
    { name: 'commonName', value: CA_COMMON_NAME },
    { name: 'organizationName', value: ORGANIZATION },
  ];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(keys.forgePrivate, forge.md.sha256.create());
  return cert;
}

function buildServingCertificate(
  keys: RsaKeyPair,
  caCert: forge.pki.Certificate,
  caKey: forge.pki.rsa.PrivateKey,
  params: ServingCertificateParams,
): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.forgePublic;
  cert.serialNumber = randomSerialHex();
  setValidity(cert, params.now, params.validityDays);
  cert.setSubject([
    { name: 'commonName', value: params.commonName },
    { name: 'organizationName', value: ORGANIZATION },
  ]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: altNames(params.sans) },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(caKey, forge.md.sha256.create());
  return cert;
}

/** GeneralName types from RFC 5280: 2 = dNSName, 7 = iPAddress. */
function altNames(sans: SubjectAltNames): Array<{ type: 2; value: string } | { type: 7; ip: string }> {
  return [
    ...sans.dnsNames.map((value) => ({ type: 2 as const, value })),
    ...sans.ipAddresses.map((ip) => ({ type: 7 as const, ip })),
  ];
}

/** Write to a unique temp file next to the target, fsync, chmod, then rename over the target (atomic on POSIX). */
async function writeFileAtomic(file: string, contents: string, mode: number): Promise<void> {
  const dir = dirname(file);
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `.${randomUUID()}.tmp`);
  try {
    const handle = await open(tmp, 'wx', mode);
    try {
      await handle.writeFile(contents, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await chmod(tmp, mode);
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
