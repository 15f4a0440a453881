/**
 * Where the serving certificate comes from when it is not read from files: the initial material (needed
 * before the server can listen) and notifications of each new one. Cluster mode's managed Secret
 * (server/kube/managed-certificate.ts) implements it; startGateway swaps the TLS context on each change.
 */
import { X509Certificate } from 'node:crypto';
import type { TlsMaterial } from './serving-certificate.js';

export interface CertificateSource {
  readonly initial: TlsMaterial;
  /** Calls `listener` with every later material whose certificate differs; returns an unsubscribe function. */
  onChange(listener: (material: TlsMaterial) => void): () => void;
}

/** TlsMaterial from PEM text already checked by the caller (the key belongs to the certificate). */
export function materialFromPem(cert: string, key: string, clientCA?: Buffer): TlsMaterial {
  const x509 = new X509Certificate(cert);
  const material: TlsMaterial = {
    cert: Buffer.from(cert),
    key: Buffer.from(key),
    notAfter: new Date(x509.validTo),
    fingerprint256: x509.fingerprint256,
  };
  if (clientCA !== undefined) material.ca = clientCA;
  return material;
}
