#!/usr/bin/env node
// The webhook app's cost per review over HTTP, in one process: a plain-HTTP server with the app (empty chain
// by default) and keep-alive clients sending the Pod review, rounds of CONNECTIONS at once, on whatever core the
// process is given. Prints CPU µs per review, server and clients together (the clients' share is the same for
// any server, so differences are the server's). Compare two checkouts by running it on each, alternately:
//
//   npm run build && taskset -c 0 node bench/webhook-loop.mjs [--chain empty|shipped] [--route mutate|validate] [--reviews N]
//   taskset -c 0 node bench/webhook-loop.mjs --root /path/to/other/checkout     # its dist/ and node_modules
//
// A checkout from before the Koa routes (createWebhookListener) is measured through its listener.
/* global process, console, URL, Buffer */
import http from 'node:http';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loaderFor, reviewSetup, withUid } from './review-setup.mjs';

const { values: argv } = parseArgs({
  options: {
    root: { type: 'string', default: fileURLToPath(new URL('..', import.meta.url)) },
    chain: { type: 'string', default: 'empty' },
    reviews: { type: 'string', default: '20000' },
    connections: { type: 'string', default: '16' },
    route: { type: 'string', default: 'mutate' },
  },
});
const root = path.resolve(argv.root);
const REVIEWS = Number(argv.reviews);
const CONNECTIONS = Number(argv.connections);
const load = loaderFor(root);
const { ByteBudget } = await load('dist/server/http/byte-budget.js');
const webhook = await load('dist/server/http/webhook-app.js');

const yaml = argv.chain === 'shipped' ? readFileSync(path.join(root, 'gateway.yaml'), 'utf8') : 'chain: []';
const { config, metrics, log, reviewer } = await reviewSetup(root, yaml);
const deps = {
  reviewer,
  metrics,
  log,
  maxRequestBytes: config.server.maxRequestBytes,
  bodyTiming: config.server,
  budget: new ByteBudget(1 << 30),
  draining: () => false,
};
let handler;
if (webhook.createWebhookApp) {
  const handle = webhook.createWebhookApp(deps).callback();
  handler = (req, res) => void handle(req, res);
} else handler = webhook.createWebhookListener(deps);

const server = http.createServer({ keepAliveTimeout: 95_000 }, handler);
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address();
const body = readFileSync(path.join(root, 'test/fixtures/reviews/pod-create.json'), 'utf8');
const head = Buffer.from(
  `POST /${argv.route}?timeout=10s HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
);
// Each review gets a uid of its own, as the apiserver's do (a kept trace is indexed by it); a uid's length is fixed.
let sent = 0;
const nextRequest = () => Buffer.concat([head, Buffer.from(withUid(body, ++sent))]);

/** A keep-alive client that sends the review and resolves once the whole answer is in. */
async function connect() {
  const socket = net.connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  await new Promise((resolve) => socket.once('connect', resolve));
  let pending = '';
  let answered = () => {};
  socket.on('data', (chunk) => {
    pending += chunk.toString('latin1');
    const head = pending.indexOf('\r\n\r\n');
    if (head < 0) return;
    const length = Number(/content-length: *(\d+)/i.exec(pending.slice(0, head))?.[1]);
    if (pending.length < head + 4 + length) return;
    pending = pending.slice(head + 4 + length);
    answered();
  });
  return {
    socket,
    send: () =>
      new Promise((resolve) => {
        answered = resolve;
        socket.write(nextRequest());
      }),
  };
}
const clients = await Promise.all(Array.from({ length: CONNECTIONS }, connect));
async function run(reviews) {
  for (let i = 0; i < reviews / CONNECTIONS; i++) await Promise.all(clients.map((c) => c.send()));
}

await run(4000); // warm-up: the optimising compiler has settled by then
const before = process.cpuUsage();
await run(REVIEWS);
const used = process.cpuUsage(before);
console.log(
  `${path.basename(root)} (${webhook.createWebhookApp ? 'Koa app' : 'listener'}, ${argv.chain} chain, /${argv.route}): ` +
    `${((used.user + used.system) / REVIEWS).toFixed(1)} µs of CPU per review, server and clients (${REVIEWS})`,
);
for (const c of clients) c.socket.destroy();
server.close();
