// Minimal HTTPS AdmissionReview servers for the benchmark, each run as its own pinned child process:
//   allow — reads the body, parses the AdmissionReview and answers allowed with the request's uid. As the
//           "raw" scenario it is the physical limit of a Node HTTPS server doing the least a gateway must do;
//           as the "healthy" remote provider it is the cheapest possible provider.
//   allow-deferred — the same, but writes each answer from setImmediate, after the poll phase, as the gateway
//           does: under load the answers of one event-loop turn go out together (fewer wake-ups per review).
//   hang  — reads the request and never answers (the connection stays open), for the open-breaker scenario.
// usage: node bench/servers.mjs allow|allow-deferred|hang CERT_FILE KEY_FILE
// Prints one JSON line {"port": N} on stdout once listening on 127.0.0.1 (ephemeral port).
/* global process, Buffer, setImmediate */
import { readFileSync } from 'node:fs';
import https from 'node:https';

const [mode, certFile, keyFile] = process.argv.slice(2);
if (!['allow', 'allow-deferred', 'hang'].includes(mode ?? '') || !certFile || !keyFile) {
  process.stderr.write('usage: node bench/servers.mjs allow|allow-deferred|hang CERT_FILE KEY_FILE\n');
  process.exit(2);
}

let served = 0;
let connections = 0;
const server = https.createServer(
  { cert: readFileSync(certFile), key: readFileSync(keyFile), keepAliveTimeout: 95_000, requestTimeout: 0 },
  (req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      if (mode === 'hang') return; // never answer; the gateway's timeout / breaker has to deal with it
      let review;
      try {
        review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400).end();
        return;
      }
      const body = JSON.stringify({
        apiVersion: review.apiVersion,
        kind: 'AdmissionReview',
        response: { uid: review.request?.uid ?? '', allowed: true },
      });
      served++;
      const answer = () => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      };
      if (mode === 'allow-deferred') setImmediate(answer);
      else answer();
    });
  },
);
server.on('secureConnection', () => connections++);
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
const stop = () => {
  process.stderr.write(`${JSON.stringify({ mode, served, connections })}\n`);
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
