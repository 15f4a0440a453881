/**
 * Runtime side of the serving certificate: make sure one exists, load and check it, and reload it when
 * the files change so certificate rotation never needs a restart.
 *
 * Wired as `server/gateway.ts` does (there the first step is `ensureConfiguredCertificate`, from the config):
 *
 * ```ts
 * const { certFile, keyFile, clientCAFile } = config.server.tls;
 * await ensureServingCertificate({ certFile, keyFile, generateIfMissing: true, sans: defaultSans(), log });
 * const material = await loadTlsMaterial(certFile, keyFile, clientCAFile);
 * const server = https.createServer(secureContextOptions(material), (req, res) => void handler(req, res));
 * const watcher = watchServingCertificate({
 *   certFile, keyFile, clientCAFile, log, initial: material,
 *   // New handshakes use the new context; established connections keep the one they negotiated.
 *   onReload: (m) => server.setSecureContext(secureContextOptions(m)),
 * });
 * // on shutdown: watcher.close(); server.close();
 * ```
 */
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import type { SecureContextOptions, TlsOptions } from 'node:tls';
import { MAX_TLS_FILE_BYTES } from '../base/limits.js';
import type { Logger } from '../base/log.js';
import { readRegularFile } from '../base/regular-file.js';
import type { TlsConfig } from '../config/types.js';
import {
  DEFAULT_FILE_NAMES,
  caBundle,
  generateCertificates,
  writeCertificates,
  type CertificateFiles,
  type SubjectAltNames,
} from '../../certs/generate.js';

/** A verified certificate/key pair as bytes, ready for `tls.createSecureContext`. */
export interface TlsMaterial {
  /** PEM certificate (chain) as read from certFile. */
  cert: Buffer;
  /** PEM private key as read from keyFile. */
  key: Buffer;
  /** PEM CA bundle for client certificates, when a clientCAFile is configured. */
  ca?: Buffer;
  /** Expiry of the serving (first) certificate, for logs, readiness and rotation decisions. */
  notAfter: Date;
  /** SHA-256 fingerprint of the serving certificate (`AB:CD:...`), to tell certificates apart. */
  fingerprint256: string;
}

/** What {@link ensureServingCertificate} found: the files it wrote, when it generated them. */
export type EnsuredCertificate =
  { readonly generated: false } | { readonly generated: true; readonly files: CertificateFiles };

/** Options for {@link ensureServingCertificate}. */
export interface EnsureServingCertificateOptions {
  certFile: string;
  keyFile: string;
  /** Where the generated CA certificate goes (its key goes next to it as `ca.key`). Default: `ca.crt` beside certFile. */
  caFile?: string;
  /** Generate a CA and serving certificate when neither certFile nor keyFile exists. */
  generateIfMissing: boolean;
  /** SANs for a generated certificate, e.g. `defaultSans()` from certs/generate.ts. */
  sans: SubjectAltNames;
  log: Logger;
}

/** Options for {@link watchServingCertificate}. */
export interface WatchServingCertificateOptions {
  certFile: string;
  keyFile: string;
  clientCAFile?: string;
  /** Called with the new material after the files changed and the new pair verified. Exceptions are logged. */
  onReload(material: TlsMaterial): void;
  log: Logger;
  /** The material the server is serving now; without it the first successful reload always calls onReload. */
  initial?: TlsMaterial;
  /** Quiet period after the last file event before reloading. Default 200 ms. */
  debounceMs?: number;
}

/** Handle returned by {@link watchServingCertificate}. */
export interface CertificateWatcher {
  /** Stop watching and cancel a pending reload. Idempotent. */
  close(): void;
}

/**
 * Makes sure a serving certificate exists before the server starts.
 *
 * When both certFile and keyFile are missing and `generateIfMissing` is set, generates a CA and a serving
 * certificate (certs/generate.ts) and writes `ca.crt`, `ca.key` and the configured cert/key files into
 * certFile's directory. When exactly one of the pair exists, throws an Error naming the missing file: a
 * half-configured pair is an operator mistake, and overwriting the file that is there could destroy a real key.
 * Does not validate an existing pair; {@link loadTlsMaterial} does.
 */
export async function ensureServingCertificate(opts: EnsureServingCertificateOptions): Promise<EnsuredCertificate> {
  const [certExists, keyExists] = await Promise.all([fileExists(opts.certFile), fileExists(opts.keyFile)]);
  if (certExists && keyExists) return { generated: false };
  if (certExists !== keyExists) {
    const [present, missing] = certExists ? [opts.certFile, opts.keyFile] : [opts.keyFile, opts.certFile];
    throw new Error(
      `TLS ${certExists ? 'key' : 'certificate'} file "${missing}" does not exist but "${present}" does; ` +
        'provide both files or remove both to generate a new pair',
    );
  }
  if (!opts.generateIfMissing) {
    throw new Error(
      `TLS certificate file "${opts.certFile}" and key file "${opts.keyFile}" do not exist and generation is disabled`,
    );
  }
  return { generated: true, files: await generateInto(opts) };
}

/** {@link ensureServingCertificate} for `server.tls` as configured (what serve, certs and manifests all do). */
export function ensureConfiguredCertificate(tls: TlsConfig, log: Logger): Promise<EnsuredCertificate> {
  return ensureServingCertificate({
    certFile: tls.certFile,
    keyFile: tls.keyFile,
    generateIfMissing: tls.generate,
    sans: { dnsNames: [...tls.dnsNames], ipAddresses: [...tls.ipAddresses] },
    log,
  });
}

/**
 * Reads the certificate, key and optional client CA, and checks that they parse and that the key belongs
 * to the certificate. Every error names the file at fault, so a bad Secret mount is obvious from one log line.
 * An empty `clientCAFile` string means "none" (the config default is `""`).
 */
export async function loadTlsMaterial(certFile: string, keyFile: string, clientCAFile?: string): Promise<TlsMaterial> {
  const caFile = clientCAFile === '' ? undefined : clientCAFile;
  const [cert, key, ca] = await Promise.all([
    readPem(certFile, 'certificate'),
    readPem(keyFile, 'key'),
    caFile === undefined ? Promise.resolve(undefined) : loadClientCA(caFile),
  ]);
  const x509 = parseCertificate(cert, certFile, 'certificate');
  const privateKey = parsePrivateKey(key, keyFile);
  if (!x509.checkPrivateKey(privateKey)) {
    throw new Error(`TLS key file "${keyFile}" does not match the certificate in "${certFile}"`);
  }
  const material: TlsMaterial = { cert, key, notAfter: new Date(x509.validTo), fingerprint256: x509.fingerprint256 };
  if (ca !== undefined) material.ca = ca;
  return material;
}

/**
 * Reloads the serving certificate when its files change, so a rotated Secret or a re-run of
 * `admission-gateway certs` takes effect without a restart.
 *
 * Watches the *directories* that contain the files, not the files: a Kubernetes Secret volume swaps a
 * `..data` symlink, and editors and atomic writers rename a new file over the old one, and a watch on the
 * old inode would never fire again. Any event in those directories schedules a debounced reload, which
 * verifies the new pair with {@link loadTlsMaterial} and calls `onReload` only when the certificate, key or
 * client CA actually changed. A failed reload (half-written file, mismatched pair) is logged and the old
 * material keeps being served; the next file event retries. Never throws from the watcher callback.
 * The watcher does not keep the process alive on its own (the HTTPS server does).
 */
export function watchServingCertificate(opts: WatchServingCertificateOptions): CertificateWatcher {
  const reloader = createReloader(opts);
  const dirs = [...new Set([opts.certFile, opts.keyFile, opts.clientCAFile].filter(isSet).map((f) => dirname(f)))];
  const watchers: FSWatcher[] = [];
  try {
    for (const dir of dirs) {
      const names = new Set(
        [opts.certFile, opts.keyFile, opts.clientCAFile]
          .filter(isSet)
          .filter((f) => dirname(f) === dir)
          .map((f) => basename(f)),
      );
      watchers.push(watchDirectory(dir, names, () => reloader.schedule(), opts.log));
    }
  } catch (err) {
    for (const w of watchers) w.close();
    throw err;
  }
  return {
    close(): void {
      reloader.close();
      for (const w of watchers) w.close();
    },
  };
}

/**
 * Options for `https.createServer` or `tls.createSecureContext` / `server.setSecureContext`.
 *
 * Setting a clientCAFile enables mutual TLS: clients must present a certificate signed by that CA (for
 * kube-apiserver, configure it through the admission configuration's kubeconfig). Note that
 * `requestCert`/`rejectUnauthorized` only take effect at `createServer`; `setSecureContext` ignores them,
 * so turning mTLS on or off needs a restart while rotating the client CA does not.
 */
export function secureContextOptions(
  material: TlsMaterial,
): SecureContextOptions & Pick<TlsOptions, 'requestCert' | 'rejectUnauthorized'> {
  if (material.ca === undefined) return { cert: material.cert, key: material.key };
  return { cert: material.cert, key: material.key, ca: material.ca, requestCert: true, rejectUnauthorized: true };
}

interface Reloader {
  schedule(): void;
  close(): void;
}

/** Debounced, serialized reloads: at most one load in flight, and an event during a load triggers one more. */
function createReloader(opts: WatchServingCertificateOptions): Reloader {
  const debounceMs = opts.debounceMs ?? 200;
  let current = opts.initial;
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let again = false;
  let closed = false;

  const run = async (): Promise<void> => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        current = await reloadOnce(opts, current, () => closed);
      } while (again && !closed);
    } finally {
      running = false;
    }
  };

  return {
    schedule(): void {
      if (closed) return;
      clearTimeout(timer);
      timer = setTimeout(() => void run(), debounceMs);
      timer.unref();
    },
    close(): void {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}

/** One reload attempt. Returns the material now in effect; never rejects. */
async function reloadOnce(
  opts: WatchServingCertificateOptions,
  current: TlsMaterial | undefined,
  isClosed: () => boolean,
): Promise<TlsMaterial | undefined> {
  const files = { certFile: opts.certFile, keyFile: opts.keyFile, clientCAFile: opts.clientCAFile };
  let next: TlsMaterial;
  try {
    next = await loadTlsMaterial(opts.certFile, opts.keyFile, opts.clientCAFile);
  } catch (err) {
    if (!isClosed())
      opts.log.error({ ...files, err }, 'TLS certificate reload failed; keeping the current certificate');
    return current;
  }
  if (isClosed()) return current;
  if (current !== undefined && sameMaterial(current, next)) {
    opts.log.debug({ ...files, fingerprint256: next.fingerprint256 }, 'TLS files changed; certificate unchanged');
    return current;
  }
  try {
    opts.onReload(next);
  } catch (err) {
    opts.log.error({ ...files, err }, 'TLS certificate reload handler failed; keeping the current certificate');
    return current;
  }
  opts.log.info(
    { ...files, fingerprint256: next.fingerprint256, notAfter: next.notAfter.toISOString() },
    'TLS certificate reloaded',
  );
  return next;
}

function sameMaterial(a: TlsMaterial, b: TlsMaterial): boolean {
  const sameCa = a.ca === undefined ? b.ca === undefined : b.ca !== undefined && a.ca.equals(b.ca);
  return a.fingerprint256 === b.fingerprint256 && a.key.equals(b.key) && sameCa;
}

/** Whether a directory event may have changed one of `names` (Secret volumes swap a `..data` symlink). */
export function concernsCertificate(filename: string | null, names: ReadonlySet<string>): boolean {
  return filename === null || names.has(filename) || filename.startsWith('..');
}

/**
 * Reacts to events on the watched files only (other files may share the directory — a log file there would
 * otherwise trigger a reload per line), plus Kubernetes Secret volumes' `..data` symlink swaps, and events
 * the platform reports without a name.
 */
function watchDirectory(dir: string, names: ReadonlySet<string>, onChange: () => void, log: Logger): FSWatcher {
  const watcher = watch(dir, { persistent: false }, (_event, filename) => {
    if (concernsCertificate(filename, names)) onChange();
  });
  // Without a listener an 'error' (e.g. the directory was deleted) would crash the process.
  watcher.on('error', (err) => log.warn({ dir, err }, 'TLS certificate directory watch failed; reload disabled'));
  return watcher;
}

async function generateInto(opts: EnsureServingCertificateOptions): Promise<CertificateFiles> {
  const dir = dirname(opts.certFile);
  const caFile = opts.caFile ?? join(dir, 'ca.crt');
  const bundle = generateCertificates({ dnsNames: opts.sans.dnsNames, ipAddresses: opts.sans.ipAddresses });
  const files = await writeCertificates(dir, bundle, {
    cert: basename(opts.certFile),
    key: relative(dir, opts.keyFile),
    caCert: relative(dir, caFile),
    caKey: relative(dir, join(dirname(caFile), 'ca.key')),
  });
  opts.log.info(
    { ...files, dnsNames: opts.sans.dnsNames, ipAddresses: opts.sans.ipAddresses },
    'generated a self-signed CA and serving certificate; register the CA as the webhook caBundle',
  );
  return files;
}

async function fileExists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return false;
    throw new Error(`cannot access TLS file "${file}": ${errorMessage(err)}`, { cause: err });
  }
}

/** The PEM of `server.tls.clientCAFile`, checked to hold a certificate; errors name the file. */
export async function loadClientCA(file: string): Promise<Buffer> {
  const pem = await readPem(file, 'client CA');
  parseCertificate(pem, file, 'client CA');
  return pem;
}

async function readPem(file: string, what: string): Promise<Buffer> {
  try {
    return await readRegularFile(file, MAX_TLS_FILE_BYTES);
  } catch (err) {
    throw new Error(`cannot read TLS ${what} file "${file}": ${errorMessage(err)}`, { cause: err });
  }
}

function parseCertificate(pem: Buffer, file: string, what: string): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch (err) {
    throw new Error(`TLS ${what} file "${file}" does not contain a valid PEM certificate: ${errorMessage(err)}`, {
      cause: err,
    });
  }
}

function parsePrivateKey(pem: Buffer, file: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (err) {
    throw new Error(
      `TLS key file "${file}" does not contain a valid unencrypted PEM private key: ${errorMessage(err)}`,
      {
        cause: err,
      },
    );
  }
}

function isSet(file: string | undefined): file is string {
  return file !== undefined && file !== '';
}

function errorCode(err: unknown): string | undefined {
  return err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The CA certificate generated with `certFile`, and read for the caBundle unless another is named. */
export function defaultCaFile(certFile: string): string {
  return join(dirname(certFile), DEFAULT_FILE_NAMES.caCert);
}

/**
 * The caBundle (base64 PEM) of the CA that signed the serving certificate: `caFile`, or the `ca.crt`
 * generated next to `certFile`. Throws an Error that names the file and says how to pass another.
 */
export async function servingCaBundle(certFile: string, caFile?: string): Promise<string> {
  const file = caFile ?? defaultCaFile(certFile);
  let pem: string;
  try {
    pem = (await readRegularFile(file, MAX_TLS_FILE_BYTES)).toString('utf8');
  } catch {
    throw new Error(`cannot read the CA certificate "${file}"; pass --ca FILE (the CA that signed ${certFile})`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new Error(`"${file}" holds no PEM certificate (expected -----BEGIN CERTIFICATE-----)`);
  }
  return caBundle(pem);
}
