import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';
import {
  caBundle,
  defaultSans,
  generateCa,
  generateCertificates,
  issueServingCertificate,
  newKeyPair,
  writeCertificates,
  type CertificateBundle,
} from '../../../certs/generate.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const SKEW_MS = 5 * 60 * 1000;
/** Slack for the time between generation and assertion; certificate times have one-second precision. */
const SLACK_MS = 60 * 1000;

interface ForgeExtension {
  name: string;
  critical?: boolean;
  cA?: boolean;
  keyCertSign?: boolean;
  cRLSign?: boolean;
  digitalSignature?: boolean;
  keyEncipherment?: boolean;
  serverAuth?: boolean;
  clientAuth?: boolean;
  subjectKeyIdentifier?: string;
  value?: string;
}

function extension(cert: forge.pki.Certificate, name: string): ForgeExtension {
  const ext = cert.getExtension(name) as ForgeExtension | null;
  assert.ok(ext, `extension ${name} is missing`);
  return ext;
}

/** keyIdentifier [0] inside the AuthorityKeyIdentifier SEQUENCE, as hex. */
function authorityKeyId(cert: forge.pki.Certificate): string {
  const raw = extension(cert, 'authorityKeyIdentifier').value;
  assert.ok(raw !== undefined);
  const seq = forge.asn1.fromDer(raw);
  const first = (seq.value as forge.asn1.Asn1[])[0];
  assert.ok(first);
  assert.equal(first.tagClass, forge.asn1.Class.CONTEXT_SPECIFIC);
  assert.equal(first.type, 0);
  return forge.util.bytesToHex(first.value as string);
}

function assertNear(actual: Date, expectedMs: number, label: string): void {
  const delta = Math.abs(actual.getTime() - expectedMs);
  assert.ok(
    delta <= SLACK_MS,
    `${label}: ${actual.toISOString()} is ${delta} ms from ${new Date(expectedMs).toISOString()}`,
  );
}

describe('certs/generate', () => {
  describe('defaultSans()', () => {
    it('covers the admission-gateway Service in its namespace, localhost and loopback IPs', () => {
      assert.deepEqual(defaultSans(), {
        dnsNames: [
          'admission-gateway.admission-gateway.svc',
          'admission-gateway.admission-gateway.svc.cluster.local',
          'localhost',
        ],
        ipAddresses: ['127.0.0.1', '::1'],
      });
    });

    it('uses the given service name and namespace', () => {
      assert.deepEqual(defaultSans({ name: 'gw', namespace: 'infra' }), {
        dnsNames: ['gw.infra.svc', 'gw.infra.svc.cluster.local', 'localhost'],
        ipAddresses: ['127.0.0.1', '::1'],
      });
    });
  });

  describe('generateCertificates()', () => {
    let bundle: CertificateBundle;
    let ca: X509Certificate;
    let leaf: X509Certificate;
    let generatedAt: number;

    before(() => {
      generatedAt = Date.now();
      bundle = generateCertificates({
        dnsNames: ['gw.infra.svc', 'gw.infra.svc.cluster.local', 'localhost'],
        ipAddresses: ['127.0.0.1', '::1'],
        validityDays: 30,
        caValidityDays: 90,
      });
      ca = new X509Certificate(bundle.caCert);
      leaf = new X509Certificate(bundle.cert);
    });

    describe('given SANs and lifetimes', () => {
      it('issues a serving certificate whose signature verifies with the CA public key', () => {
        assert.equal(leaf.verify(ca.publicKey), true);
        assert.equal(leaf.checkIssued(ca), true);
        assert.equal(leaf.issuer, ca.subject);
      });

      it('does not verify against an unrelated CA', () => {
        const other = new X509Certificate(generateCertificates(defaultSans()).caCert);
        assert.equal(leaf.verify(other.publicKey), false);
        assert.equal(leaf.checkIssued(other), false);
      });

      it('makes the CA self-signed', () => {
        assert.equal(ca.verify(ca.publicKey), true);
        assert.equal(ca.checkIssued(ca), true);
        assert.equal(ca.subject, 'CN=admission-gateway CA\nO=admission-gateway');
      });

      it('lists exactly the requested DNS and IP SANs', () => {
        assert.equal(
          leaf.subjectAltName,
          'DNS:gw.infra.svc, DNS:gw.infra.svc.cluster.local, DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1',
        );
        assert.equal(leaf.checkHost('gw.infra.svc'), 'gw.infra.svc');
        assert.equal(leaf.checkIP('127.0.0.1'), '127.0.0.1');
        assert.equal(leaf.checkHost('other.infra.svc'), undefined);
      });

      it('uses the first DNS name as the subject CN', () => {
        assert.equal(leaf.subject, 'CN=gw.infra.svc\nO=admission-gateway');
      });

      it('marks the CA cA:true and the leaf cA:false, both critical', () => {
        assert.equal(ca.ca, true);
        assert.equal(leaf.ca, false);
        const caBc = extension(forge.pki.certificateFromPem(bundle.caCert), 'basicConstraints');
        const leafBc = extension(forge.pki.certificateFromPem(bundle.cert), 'basicConstraints');
        assert.equal(caBc.cA, true);
        assert.equal(caBc.critical, true);
        assert.equal(leafBc.cA, false);
        assert.equal(leafBc.critical, true);
      });

      it('limits the CA to keyCertSign and cRLSign', () => {
        const ku = extension(forge.pki.certificateFromPem(bundle.caCert), 'keyUsage');
        assert.deepEqual(
          [ku.keyCertSign, ku.cRLSign, ku.digitalSignature, ku.keyEncipherment],
          [true, true, false, false],
        );
      });

      it('limits the leaf to digitalSignature, keyEncipherment and serverAuth', () => {
        const cert = forge.pki.certificateFromPem(bundle.cert);
        const ku = extension(cert, 'keyUsage');
        assert.deepEqual(
          [ku.digitalSignature, ku.keyEncipherment, ku.keyCertSign, ku.cRLSign],
          [true, true, false, false],
        );
        assert.deepEqual(leaf.keyUsage, ['1.3.6.1.5.5.7.3.1']);
        assert.equal(extension(cert, 'extKeyUsage').serverAuth, true);
      });

      it("points the leaf's authorityKeyIdentifier at the CA's subjectKeyIdentifier", () => {
        const caCert = forge.pki.certificateFromPem(bundle.caCert);
        const caSki = extension(caCert, 'subjectKeyIdentifier').subjectKeyIdentifier;
        assert.equal(caSki, caCert.generateSubjectKeyIdentifier().toHex());
        assert.equal(authorityKeyId(forge.pki.certificateFromPem(bundle.cert)), caSki);
      });

      it('signs both certificates with sha256WithRSAEncryption', () => {
        for (const pem of [bundle.caCert, bundle.cert]) {
          assert.equal(forge.pki.certificateFromPem(pem).siginfo.algorithmOid, '1.2.840.113549.1.1.11');
        }
      });

      it('backdates notBefore by 5 minutes and sets notAfter to now + validityDays', () => {
        assertNear(new Date(leaf.validFrom), generatedAt - SKEW_MS, 'leaf notBefore');
        assertNear(new Date(leaf.validTo), generatedAt + 30 * DAY_MS, 'leaf notAfter');
        assertNear(new Date(ca.validFrom), generatedAt - SKEW_MS, 'CA notBefore');
        assertNear(new Date(ca.validTo), generatedAt + 90 * DAY_MS, 'CA notAfter');
        assert.ok(new Date(leaf.validFrom).getTime() <= Date.now());
      });

      it('returns private keys that match their certificates', () => {
        assert.equal(leaf.checkPrivateKey(createPrivateKey(bundle.key)), true);
        assert.equal(ca.checkPrivateKey(createPrivateKey(bundle.caKey)), true);
        assert.equal(leaf.checkPrivateKey(createPrivateKey(bundle.caKey)), false);
      });

      it('uses 2048-bit RSA keys with exponent 65537 by default', () => {
        for (const pem of [bundle.key, bundle.caKey]) {
          const key = createPublicKey(createPrivateKey(pem));
          assert.equal(key.asymmetricKeyType, 'rsa');
          assert.deepEqual(key.asymmetricKeyDetails, { modulusLength: 2048, publicExponent: 65537n });
        }
      });

      it('uses distinct random positive 16-byte serials', () => {
        for (const serial of [leaf.serialNumber, ca.serialNumber]) {
          assert.match(serial, /^[0-9A-F]{32}$/);
          const firstOctet = parseInt(serial.slice(0, 2), 16);
          assert.ok(firstOctet >= 0x40 && firstOctet < 0x80, `first octet ${firstOctet} must be positive and non-zero`);
        }
        assert.notEqual(leaf.serialNumber, ca.serialNumber);
      });
    });

    describe('given a commonName', () => {
      it('uses it as the subject CN and keeps the SANs', () => {
        const cert = new X509Certificate(
          generateCertificates({ commonName: 'my-gateway', dnsNames: ['a.b.svc'], ipAddresses: [] }).cert,
        );
        assert.equal(cert.subject, 'CN=my-gateway\nO=admission-gateway');
        assert.equal(cert.subjectAltName, 'DNS:a.b.svc');
      });
    });

    describe('given invalid options', () => {
      const cases: Array<{ name: string; opts: Parameters<typeof generateCertificates>[0]; message: RegExp }> = [
        { name: 'no SANs at all', opts: { dnsNames: [], ipAddresses: [] }, message: /at least one DNS name or IP/ },
        {
          name: 'a malformed IP address',
          opts: { dnsNames: [], ipAddresses: ['300.1.1.1'] },
          message: /ipAddresses "300\.1\.1\.1"/,
        },
        { name: 'a DNS name with spaces', opts: { dnsNames: ['a b'], ipAddresses: [] }, message: /dnsNames "a b"/ },
        {
          name: 'a leaf outliving its CA',
          opts: { dnsNames: ['a'], ipAddresses: [], validityDays: 400, caValidityDays: 365 },
          message: /validityDays 400 exceeds caValidityDays 365/,
        },
        {
          name: 'a zero lifetime',
          opts: { dnsNames: ['a'], ipAddresses: [], validityDays: 0 },
          message: /validityDays 0: expected a positive integer/,
        },
        {
          name: 'a weak key size',
          opts: { dnsNames: ['a'], ipAddresses: [], keyBits: 1024 },
          message: /keyBits 1024: expected an integer >= 2048/,
        },
      ];
      for (const c of cases) {
        it(`rejects ${c.name}`, () => {
          assert.throws(() => generateCertificates(c.opts), { name: 'RangeError', message: c.message });
        });
      }
    });
  });

  describe('writeCertificates()', () => {
    let dir: string;
    let bundle: CertificateBundle;

    before(() => {
      bundle = generateCertificates(defaultSans());
    });
    beforeEach(async () => {
      dir = await mkdtemp(join(tmpdir(), 'gw-certs-'));
    });
    afterEach(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it('writes ca.crt, ca.key, tls.crt and tls.key into a new directory and returns their paths', async () => {
      const target = join(dir, 'nested', 'certs');
      const files = await writeCertificates(target, bundle);
      assert.deepEqual(files, {
        caCertFile: join(target, 'ca.crt'),
        caKeyFile: join(target, 'ca.key'),
        certFile: join(target, 'tls.crt'),
        keyFile: join(target, 'tls.key'),
      });
      assert.deepEqual((await readdir(target)).sort(), ['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
      assert.equal(await readFile(files.caCertFile, 'utf8'), bundle.caCert);
      assert.equal(await readFile(files.caKeyFile, 'utf8'), bundle.caKey);
      assert.equal(await readFile(files.certFile, 'utf8'), bundle.cert);
      assert.equal(await readFile(files.keyFile, 'utf8'), bundle.key);
    });

    it('gives private keys mode 0600 and certificates mode 0644', async () => {
      const files = await writeCertificates(dir, bundle);
      const modes = await Promise.all(
        [files.caKeyFile, files.keyFile, files.caCertFile, files.certFile].map(
          async (f) => (await stat(f)).mode & 0o777,
        ),
      );
      assert.deepEqual(modes, [0o600, 0o600, 0o644, 0o644]);
    });

    it('tightens the mode of a pre-existing world-readable key file and replaces its contents', async () => {
      await writeFile(join(dir, 'tls.key'), 'old', { mode: 0o644 });
      const files = await writeCertificates(dir, bundle);
      assert.equal((await stat(files.keyFile)).mode & 0o777, 0o600);
      assert.equal(await readFile(files.keyFile, 'utf8'), bundle.key);
    });

    it('honours custom file names and leaves no temporary files behind', async () => {
      const files = await writeCertificates(dir, bundle, { cert: 'serving.pem', key: 'serving-key.pem' });
      assert.equal(files.certFile, join(dir, 'serving.pem'));
      assert.equal(files.keyFile, join(dir, 'serving-key.pem'));
      assert.deepEqual((await readdir(dir)).sort(), ['ca.crt', 'ca.key', 'serving-key.pem', 'serving.pem']);
    });
  });

  describe('newKeyPair() with generateCa() and issueServingCertificate()', () => {
    it('signs with the key pairs made beforehand (off the event loop) instead of making new ones', async () => {
      const [caPair, leafPair] = await Promise.all([newKeyPair(), newKeyPair()]);
      const ca = generateCa({ validitySeconds: 3600, keyPair: caPair });
      const leaf = issueServingCertificate({
        ca,
        sans: { dnsNames: ['gw.example'], ipAddresses: [] },
        validitySeconds: 600,
        keyPair: leafPair,
      });
      assert.equal(ca.key, caPair.privateKey);
      assert.equal(leaf.key, leafPair.privateKey);
      const caCert = new X509Certificate(ca.cert);
      const leafCert = new X509Certificate(leaf.cert);
      assert.equal(caCert.publicKey.export({ type: 'spki', format: 'pem' }), caPair.publicKey);
      assert.equal(leafCert.publicKey.export({ type: 'spki', format: 'pem' }), leafPair.publicKey);
      assert.ok(leafCert.verify(caCert.publicKey), 'the leaf is signed by the CA made from the given key');
    });
  });

  describe('caBundle()', () => {
    it('base64-encodes the PEM on one line so it decodes back to the exact PEM', () => {
      const pem = generateCertificates(defaultSans()).caCert;
      const encoded = caBundle(pem);
      assert.match(encoded, /^[A-Za-z0-9+/]+=*$/);
      assert.equal(Buffer.from(encoded, 'base64').toString('utf8'), pem);
      assert.equal(caBundle('-----BEGIN CERTIFICATE-----\n'), 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==');
    });
  });
});
