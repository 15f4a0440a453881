// Minimal HTTPS AdmissionReview servers for the benchmark, each run as its own pinned child process:
//   allow — reads the body, parses the AdmissionReview and answers allowed with the request's uid. As the
//           "raw" scenario it is the physical limit of a Node HTTPS server doing the least a gateway must do;
//           as the "healthy" remote provider it is the cheapest possible provider.
//   allow-deferred — the same, but writes each answer from setImmediate, after the poll phase, as the gateway
//           does: under load the answers of one event-loop turn go out together (fewer wake-ups per review).
//   hang  — reads the request and never answers (the connection stays open), for the open-breaker scenario.
//   sar   — reads the body, parses the SubjectAccessReview and answers no opinion in its apiVersion
//           (`status: {allowed: false}`): the limit for the gateway's POST /authorize, as `allow` is for admission.
//   label — a mutating provider that answers DELAY_MS (default 20) after the request, from a timer, allowed
//           with the request's uid and a JSONPatch adding the label LABEL (value "1"): a remote provider whose
//           time is spent waiting, not computing, so several of them can overlap on one core.
// usage: node bench/servers.mjs allow|allow-deferred|hang|sar CERT_FILE KEY_FILE
//        node bench/servers.mjs label CERT_FILE KEY_FILE LABEL [DELAY_MS]
// Prints one JSON line {"port": N} on stdout once listening on 127.0.0.1 (ephemeral port). On SIGTERM it prints
// what it served on stderr; `label` adds how many of the objects it was sent already carried another
// `bench-` label (a provider called after another one's patch was applied sees that one's label).
/* global process, Buffer, setImmediate, setTimeout */
import { readFileSync } from 'node:fs';
import https from 'node:https';

const USAGE =
  'usage: node bench/servers.mjs allow|allow-deferred|hang|sar CERT_FILE KEY_FILE\n' +
  '       node bench/servers.mjs label CERT_FILE KEY_FILE LABEL [DELAY_MS]\n';
const [mode, certFile, keyFile, label, delayArg] = process.argv.slice(2);
const delayMs = Number(delayArg ?? 20);
if (
  !['allow', 'allow-deferred', 'hang', 'sar', 'label'].includes(mode ?? '') ||
  !certFile ||
  !keyFile ||
  (mode === 'label' && (!label || !Number.isFinite(delayMs) || delayMs < 0))
) {
  process.stderr.write(USAGE);
  process.exit(2);
}
const LABEL_PREFIX = 'bench-';
const pointerSegment = (s) => s.replace(/~/g, '~0').replace(/\//g, '~1');

let served = 0;
let connections = 0;
let sawOtherLabels = 0;

/** The patch adding this provider's label to `object`: one operation, creating the labels map if it has none. */
function labelPatch(object) {
  const labels = object?.metadata?.labels;
  if (labels && typeof labels === 'object') {
    if (Object.keys(labels).some((key) => key.startsWith(LABEL_PREFIX) && key !== label)) sawOtherLabels++;
    return [{ op: 'add', path: `/metadata/labels/${pointerSegment(label)}`, value: '1' }];
  }
  return [{ op: 'add', path: '/metadata/labels', value: { [label]: '1' } }];
}

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
      if (mode === 'sar') {
        // No opinion, as the gateway answers when nothing forbids (the apiserver never sees `allowed: true`).
        const body = JSON.stringify({
          apiVersion: review.apiVersion,
          kind: 'SubjectAccessReview',
          status: { allowed: false },
        });
        served++;
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
        return;
      }
      const response = { uid: review.request?.uid ?? '', allowed: true };
      if (mode === 'label') {
        response.patchType = 'JSONPatch';
        response.patch = Buffer.from(JSON.stringify(labelPatch(review.request?.object))).toString('base64');
      }
      const body = JSON.stringify({ apiVersion: review.apiVersion, kind: 'AdmissionReview', response });
      served++;
      const answer = () => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      };
      if (mode === 'allow-deferred') setImmediate(answer);
      else if (mode === 'label') setTimeout(answer, delayMs);
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
  process.stderr.write(
    `${JSON.stringify({ mode, served, connections, ...(mode === 'label' ? { label, delayMs, sawOtherLabels } : {}) })}\n`,
  );
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
