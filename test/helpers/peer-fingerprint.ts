/** What certificate a server hands a new TLS connection: for tests of certificate reloads and swaps. */
import tls from 'node:tls';

/** The SHA-256 fingerprint of the certificate a fresh TLS connection to `url` is served, trusting only `ca`. */
export function peerFingerprint(url: string, ca: string | Buffer): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: hostname, port: Number(port), ca }, () => {
      const fingerprint = socket.getPeerCertificate().fingerprint256;
      socket.destroy();
      resolve(fingerprint);
    });
    socket.once('error', (err: Error) => {
      socket.destroy();
      reject(err);
    });
  });
}
