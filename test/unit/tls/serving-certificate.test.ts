import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import {
  defaultSans,
  generateCertificates,
  writeCertificates,
  type CertificateBundle,
} from '../../../certs/generate.js';
import type { Logger } from '../../../server/base/log.js';
import { makeNamedPipe, releaseNamedPipe } from '../../helpers/named-pipe.js';
import {
  concernsCertificate,
  ensureServingCertificate,
  loadTlsMaterial,
  secureContextOptions,
  watchServingCertificate,
  type CertificateWatcher,
  type TlsMaterial,
} from '../../../server/tls/serving-certificate.js';

interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: object;
  msg: string;
}

/** Records calls in order and lets a test await the next one instead of sleeping. */
class Events<T> {
  readonly seen: T[] = [];
  private waiters: Array<(value: T) => void> = [];

  emit(value: T): void {
    this.seen.push(value);
    for (const resolve of this.waiters.splice(0)) resolve(value);
  }

  next(): Promise<T> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

function recordingLogger(): { log: Logger; entries: Events<LogEntry> } {
  const entries = new Events<LogEntry>();
  return {
    entries,
    log: {
      debug: (obj, msg = '') => entries.emit({ level: 'debug', obj, msg }),
      info: (obj, msg = '') => entries.emit({ level: 'info', obj, msg }),
      warn: (obj, msg = '') => entries.emit({ level: 'warn', obj, msg }),
      error: (obj, msg = '') => entries.emit({ level: 'error', obj, msg }),
    },
  };
}

function fingerprint(pem: string): string {
  return new X509Certificate(pem).fingerprint256;
}

async function nextEntry(entries: Events<LogEntry>, level: LogEntry['level']): Promise<LogEntry> {
  for (;;) {
    const entry = await entries.next();
    if (entry.level === level) return entry;
  }
}

function nextError(entries: Events<LogEntry>): Promise<LogEntry> {
  return nextEntry(entries, 'error');
}

/** Replace a file the way an atomic writer does: write a sibling, then rename over the target. */
async function replaceFile(file: string, contents: string): Promise<void> {
  const tmp = `${file}.tmp`;
  await writeFile(tmp, contents);
  await rename(tmp, file);
}

/** Fingerprint of the certificate presented on a NEW TLS connection, verified against `ca` and the IP SAN. */
function presentedFingerprint(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, ca }, () => {
      const fp = socket.getPeerCertificate().fingerprint256;
      socket.end();
      resolve(fp);
    });
    socket.on('error', reject);
  });
}

interface Reply {
  status: number | undefined;
  body: string;
  reusedSocket: boolean;
  fingerprint: string;
}

function get(port: number, agent: https.Agent): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
      const fp = (res.socket as tls.TLSSocket).getPeerCertificate().fingerprint256;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode, body, reusedSocket: req.reusedSocket, fingerprint: fp }));
    });
    req.on('error', reject);
  });
}

describe('server/tls/serving-certificate', () => {
  let dir: string;
  let bundle1: CertificateBundle;
  let bundle2: CertificateBundle;

  before(() => {
    bundle1 = generateCertificates(defaultSans());
    bundle2 = generateCertificates(defaultSans());
  });
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gw-tls-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  describe('ensureServingCertificate()', () => {
    describe('given neither file exists and generateIfMissing', () => {
      it('generates a CA and serving certificate once and reuses them afterwards', async () => {
        const { log, entries } = recordingLogger();
        const certFile = join(dir, 'certs', 'tls.crt');
        const keyFile = join(dir, 'certs', 'tls.key');
        const opts = { certFile, keyFile, generateIfMissing: true, sans: defaultSans(), log };

        const certDir = join(dir, 'certs');
        assert.deepEqual(await ensureServingCertificate(opts), {
          generated: true,
          files: {
            caCertFile: join(certDir, 'ca.crt'),
            caKeyFile: join(certDir, 'ca.key'),
            certFile,
            keyFile,
          },
        });
        assert.deepEqual((await readdir(certDir)).sort(), ['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
        assert.equal((await stat(keyFile)).mode & 0o777, 0o600);
        const ca = new X509Certificate(await readFile(join(certDir, 'ca.crt')));
        const first = await loadTlsMaterial(certFile, keyFile);
        const leaf = new X509Certificate(first.cert);
        assert.equal(leaf.checkIssued(ca), true);
        assert.equal(leaf.verify(ca.publicKey), true);
        assert.equal(
          leaf.subjectAltName,
          'DNS:admission-gateway.admission-gateway.svc, DNS:admission-gateway.admission-gateway.svc.cluster.local, ' +
            'DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1',
        );
        assert.deepEqual(
          entries.seen.map((e) => e.level),
          ['info'],
        );

        assert.deepEqual(await ensureServingCertificate(opts), { generated: false });
        const second = await loadTlsMaterial(certFile, keyFile);
        assert.equal(second.fingerprint256, first.fingerprint256);
        assert.ok(second.key.equals(first.key));
      });

      it('honours custom cert, key and CA file locations', async () => {
        const certFile = join(dir, 'serving.pem');
        const keyFile = join(dir, 'private', 'serving-key.pem');
        const caFile = join(dir, 'ca', 'root.pem');
        const { log } = recordingLogger();
        const result = await ensureServingCertificate({
          certFile,
          keyFile,
          caFile,
          generateIfMissing: true,
          sans: { dnsNames: ['gw.test'], ipAddresses: [] },
          log,
        });
        assert.deepEqual(result, {
          generated: true,
          files: { caCertFile: caFile, caKeyFile: join(dir, 'ca', 'ca.key'), certFile, keyFile },
        });
        assert.deepEqual((await readdir(dir)).sort(), ['ca', 'private', 'serving.pem']);
        assert.deepEqual((await readdir(join(dir, 'ca'))).sort(), ['ca.key', 'root.pem']);
        const material = await loadTlsMaterial(certFile, keyFile, caFile);
        assert.equal(new X509Certificate(material.cert).subjectAltName, 'DNS:gw.test');
        assert.equal(new X509Certificate(material.cert).checkIssued(new X509Certificate(await readFile(caFile))), true);
      });
    });

    describe('given only one file of the pair exists', () => {
      it('throws naming the missing key file and leaves the certificate untouched', async () => {
        const certFile = join(dir, 'tls.crt');
        const keyFile = join(dir, 'tls.key');
        await writeFile(certFile, bundle1.cert);
        await assert.rejects(
          ensureServingCertificate({
            certFile,
            keyFile,
            generateIfMissing: true,
            sans: defaultSans(),
            log: recordingLogger().log,
          }),
          {
            message:
              `TLS key file "${keyFile}" does not exist but "${certFile}" does; ` +
              'provide both files or remove both to generate a new pair',
          },
        );
        assert.deepEqual(await readdir(dir), ['tls.crt']);
        assert.equal(await readFile(certFile, 'utf8'), bundle1.cert);
      });

      it('throws naming the missing certificate file', async () => {
        const certFile = join(dir, 'tls.crt');
        const keyFile = join(dir, 'tls.key');
        await writeFile(keyFile, bundle1.key);
        await assert.rejects(
          ensureServingCertificate({
            certFile,
            keyFile,
            generateIfMissing: true,
            sans: defaultSans(),
            log: recordingLogger().log,
          }),
          { message: new RegExp(`^TLS certificate file "${certFile}" does not exist but "${keyFile}" does`) },
        );
        assert.deepEqual(await readdir(dir), ['tls.key']);
      });
    });

    describe('given neither file exists and generation disabled', () => {
      it('throws naming both files and writes nothing', async () => {
        const certFile = join(dir, 'tls.crt');
        const keyFile = join(dir, 'tls.key');
        await assert.rejects(
          ensureServingCertificate({
            certFile,
            keyFile,
            generateIfMissing: false,
            sans: defaultSans(),
            log: recordingLogger().log,
          }),
          {
            message: `TLS certificate file "${certFile}" and key file "${keyFile}" do not exist and generation is disabled`,
          },
        );
        assert.deepEqual(await readdir(dir), []);
      });
    });
  });

  describe('loadTlsMaterial()', () => {
    let files: Awaited<ReturnType<typeof writeCertificates>>;

    beforeEach(async () => {
      files = await writeCertificates(dir, bundle1);
    });

    it('returns the PEM bytes, the expiry and the SHA-256 fingerprint of a matching pair', async () => {
      const material = await loadTlsMaterial(files.certFile, files.keyFile);
      const x509 = new X509Certificate(bundle1.cert);
      assert.deepEqual(material, {
        cert: Buffer.from(bundle1.cert),
        key: Buffer.from(bundle1.key),
        notAfter: new Date(x509.validTo),
        fingerprint256: x509.fingerprint256,
      });
    });

    it('includes the client CA when one is configured and ignores an empty path', async () => {
      const withCa = await loadTlsMaterial(files.certFile, files.keyFile, files.caCertFile);
      assert.deepEqual(withCa.ca, Buffer.from(bundle1.caCert));
      const empty = await loadTlsMaterial(files.certFile, files.keyFile, '');
      assert.equal('ca' in empty, false);
    });

    it('rejects a key that does not belong to the certificate, naming both files', async () => {
      await writeFile(files.keyFile, bundle2.key);
      await assert.rejects(loadTlsMaterial(files.certFile, files.keyFile), {
        message: `TLS key file "${files.keyFile}" does not match the certificate in "${files.certFile}"`,
      });
    });

    it('rejects a missing file, naming it', async () => {
      const missing = join(dir, 'nope.crt');
      await assert.rejects(loadTlsMaterial(missing, files.keyFile), {
        message: new RegExp(`^cannot read TLS certificate file "${missing}": ENOENT`),
      });
    });

    it('rejects a truncated certificate, naming the file', async () => {
      await writeFile(files.certFile, bundle1.cert.slice(0, 400));
      await assert.rejects(loadTlsMaterial(files.certFile, files.keyFile), {
        message: new RegExp(`^TLS certificate file "${files.certFile}" does not contain a valid PEM certificate`),
      });
    });

    it('rejects a key file without a private key, naming the file', async () => {
      await writeFile(files.keyFile, bundle1.cert);
      await assert.rejects(loadTlsMaterial(files.certFile, files.keyFile), {
        message: new RegExp(`^TLS key file "${files.keyFile}" does not contain a valid unencrypted PEM private key`),
      });
    });

    it('refuses a named pipe at once instead of waiting for a writer, naming the file', async () => {
      const pipe = join(dir, 'pipe.crt');
      makeNamedPipe(pipe);
      try {
        await assert.rejects(loadTlsMaterial(pipe, files.keyFile), {
          message: `cannot read TLS certificate file "${pipe}": not a regular file (a FIFO)`,
        });
      } finally {
        releaseNamedPipe(pipe);
      }
    });

    it('refuses a device that never ends, naming the file', async () => {
      await assert.rejects(loadTlsMaterial(files.certFile, '/dev/zero'), {
        message: 'cannot read TLS key file "/dev/zero": not a regular file (a character device)',
      });
    });

    it('refuses a file over 1 MiB without parsing it, naming the file', async () => {
      await writeFile(files.certFile, bundle1.cert.padEnd(1024 * 1024 + 1, '\n'));
      await assert.rejects(loadTlsMaterial(files.certFile, files.keyFile), {
        message: `cannot read TLS certificate file "${files.certFile}": larger than 1048576 bytes (1048577)`,
      });
    });

    it('rejects a client CA file that holds no certificate, naming the file', async () => {
      await writeFile(files.caCertFile, 'not a certificate');
      await assert.rejects(loadTlsMaterial(files.certFile, files.keyFile, files.caCertFile), {
        message: new RegExp(`^TLS client CA file "${files.caCertFile}" does not contain a valid PEM certificate`),
      });
    });
  });

  describe('secureContextOptions()', () => {
    const base = { cert: Buffer.from('c'), key: Buffer.from('k'), notAfter: new Date(0), fingerprint256: 'AA' };

    it('serves the certificate and key without asking for client certificates', () => {
      assert.deepEqual(secureContextOptions(base), { cert: base.cert, key: base.key });
    });

    it('turns on mutual TLS when a client CA is set', () => {
      const ca = Buffer.from('ca');
      assert.deepEqual(secureContextOptions({ ...base, ca }), {
        cert: base.cert,
        key: base.key,
        ca,
        requestCert: true,
        rejectUnauthorized: true,
      });
    });
  });

  describe('watchServingCertificate() with a real HTTPS server', () => {
    let files: Awaited<ReturnType<typeof writeCertificates>>;
    let initial: TlsMaterial;
    let server: https.Server;
    let port: number;
    let agent: https.Agent;
    let watcher: CertificateWatcher;
    let reloads: Events<TlsMaterial>;
    let entries: Events<LogEntry>;

    beforeEach(async () => {
      files = await writeCertificates(dir, bundle1);
      initial = await loadTlsMaterial(files.certFile, files.keyFile);
      server = https.createServer(secureContextOptions(initial), (_req, res) => res.end('ok'));
      server.keepAliveTimeout = 60_000;
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
      // Trusts CA #1 only: a request that succeeds after the swap must have reused an old connection.
      agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: bundle1.caCert });
      reloads = new Events<TlsMaterial>();
      const recorder = recordingLogger();
      entries = recorder.entries;
      watcher = watchServingCertificate({
        certFile: files.certFile,
        keyFile: files.keyFile,
        log: recorder.log,
        initial,
        debounceMs: 50,
        onReload: (m) => {
          server.setSecureContext(secureContextOptions(m));
          reloads.emit(m);
        },
      });
    });

    afterEach(async () => {
      watcher.close();
      agent.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    it('presents the new certificate on new connections while a keep-alive connection keeps working', async () => {
      const before = await get(port, agent);
      assert.deepEqual(before, {
        status: 200,
        body: 'ok',
        reusedSocket: false,
        fingerprint: fingerprint(bundle1.cert),
      });
      assert.equal(await presentedFingerprint(port, bundle1.caCert), fingerprint(bundle1.cert));

      const reloaded = reloads.next();
      await writeCertificates(dir, bundle2);
      const material = await reloaded;

      assert.equal(material.fingerprint256, fingerprint(bundle2.cert));
      assert.deepEqual(
        reloads.seen.map((m) => m.fingerprint256),
        [fingerprint(bundle2.cert)],
      );
      assert.equal(await presentedFingerprint(port, bundle2.caCert), fingerprint(bundle2.cert));
      await assert.rejects(presentedFingerprint(port, bundle1.caCert), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
      const after = await get(port, agent);
      assert.deepEqual(after, { status: 200, body: 'ok', reusedSocket: true, fingerprint: fingerprint(bundle1.cert) });
    });

    it('keeps serving the old certificate when the new certificate does not match the key, then recovers', async () => {
      const failed = nextError(entries);
      await replaceFile(files.certFile, bundle2.cert);
      const entry = await failed;

      assert.equal(entry.msg, 'TLS certificate reload failed; keeping the current certificate');
      const err = (entry.obj as { err: Error }).err;
      assert.equal(
        err.message,
        `TLS key file "${files.keyFile}" does not match the certificate in "${files.certFile}"`,
      );
      assert.equal(await presentedFingerprint(port, bundle1.caCert), fingerprint(bundle1.cert));
      assert.deepEqual(reloads.seen, []);

      const reloaded = reloads.next();
      await replaceFile(files.keyFile, bundle2.key);
      assert.equal((await reloaded).fingerprint256, fingerprint(bundle2.cert));
      assert.equal(await presentedFingerprint(port, bundle2.caCert), fingerprint(bundle2.cert));
    });

    it('keeps serving the old certificate when the certificate file is half-written, then accepts it restored', async () => {
      const failed = nextError(entries);
      // A non-atomic writer caught halfway: the file holds half a PEM block.
      await writeFile(files.certFile, bundle1.cert.slice(0, Math.floor(bundle1.cert.length / 2)));
      const entry = await failed;

      const err = (entry.obj as { err: Error }).err;
      assert.match(err.message, new RegExp(`^TLS certificate file "${files.certFile}" does not contain a valid PEM`));
      assert.equal(await presentedFingerprint(port, bundle1.caCert), fingerprint(bundle1.cert));

      // Finishing the write restores the certificate being served: nothing to reload.
      const unchanged = nextEntry(entries, 'debug');
      await writeFile(files.certFile, bundle1.cert);
      assert.equal((await unchanged).msg, 'TLS files changed; certificate unchanged');
      assert.deepEqual(reloads.seen, []);
    });

    it('does not call onReload when the files are rewritten with the same contents', async () => {
      const unchanged = nextEntry(entries, 'debug');
      await writeCertificates(dir, bundle1);
      const entry = await unchanged;
      assert.deepEqual(entry.obj, {
        certFile: files.certFile,
        keyFile: files.keyFile,
        clientCAFile: undefined,
        fingerprint256: fingerprint(bundle1.cert),
      });
      assert.deepEqual(reloads.seen, []);
    });
  });

  describe('watchServingCertificate() setup', () => {
    it('throws when the certificate directory does not exist', () => {
      const missingDir = join(dir, 'missing');
      assert.throws(
        () =>
          watchServingCertificate({
            certFile: join(missingDir, 'tls.crt'),
            keyFile: join(missingDir, 'tls.key'),
            log: recordingLogger().log,
            onReload: () => undefined,
          }),
        { code: 'ENOENT' },
      );
    });

    it('watches every directory involved and stops on close()', async () => {
      const certDir = join(dir, 'cert');
      const caDir = join(dir, 'ca');
      await mkdir(caDir);
      const files = await writeCertificates(certDir, bundle1);
      await writeFile(join(caDir, 'client-ca.crt'), bundle1.caCert);
      const reloads = new Events<TlsMaterial>();
      const { log } = recordingLogger();
      const watcher = watchServingCertificate({
        certFile: files.certFile,
        keyFile: files.keyFile,
        clientCAFile: join(caDir, 'client-ca.crt'),
        log,
        initial: await loadTlsMaterial(files.certFile, files.keyFile, join(caDir, 'client-ca.crt')),
        debounceMs: 10,
        onReload: (m) => reloads.emit(m),
      });
      try {
        const reloaded = reloads.next();
        await replaceFile(join(caDir, 'client-ca.crt'), bundle2.caCert);
        const material = await reloaded;
        assert.deepEqual(material.ca, Buffer.from(bundle2.caCert));
        assert.equal(material.fingerprint256, fingerprint(bundle1.cert));
      } finally {
        watcher.close();
        watcher.close();
      }
    });
  });
});

describe('concernsCertificate()', () => {
  const names = new Set(['tls.crt', 'tls.key']);
  it('is true for the watched files, Secret volume swaps and unnamed events', () => {
    assert.deepEqual(
      ['tls.crt', 'tls.key', '..data', '..2026_11_22_15_00_00.123', null].map((f) => concernsCertificate(f, names)),
      [true, true, true, true, true],
    );
  });
  it('is false for other files in the directory, such as a log written beside the certificate', () => {
    assert.deepEqual(
      ['gateway.log', 'ca.crt', '.tls.crt.tmp'].map((f) => concernsCertificate(f, names)),
      [false, false, false],
    );
  });
});
