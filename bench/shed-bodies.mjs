// What reading shed bodies to their end costs a serving gateway (docs/decisions.md, "Request bodies: the gateway's
// own reader, not a body-parser middleware"): a review refused with 429 because the in-flight budget is full is
// read to its last byte and dropped before the answer, so that a client sending it again from a rewound reader
// sends it whole. The gateway runs the empty chain with room for 8 MiB bodies and a 64 MiB budget, pinned to core
// 0; this script pins itself to core 1. One connection holds about half the budget with a 6 MB body it never
// finishes, so that every 7 MB review sent meanwhile is shed at its headers.
//
//   node bench/shed-bodies.mjs flood [--flooders N] [--rounds N]
//       ordinary reviews at 500/s (bench/loadgen.mjs, fixed rate, 2 s warm-up + 8 s) while N (4) connections
//       send 7 MB reviews back to back, and the same without them, a fresh gateway each, in turn for N (2)
//       rounds: the gateway's CPU, the ordinary reviews' latency, the shed bodies a second
//   node bench/shed-bodies.mjs waves [--waves N] [--rounds N]
//       N (3) waves of twenty 7 MB reviews at once, each wave sent when the last is answered, in a fresh gateway
//       a round: its resident memory at start and at its peak (sampled every 5 ms), the peak of its memory
//       outside the heap (its metrics, every 20 ms), the answers
//
// Uses dist/ (npm run build first). The load generator shares core 1 with the senders.
/* global process, console, fetch, setInterval, clearInterval, performance */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { benchGateways, loadgen } from './gateway-process.mjs';
import { clockTicks, Connection, fixedRequestBuilder } from './lib.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    flooders: { type: 'string', default: '4' },
    waves: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '2' },
  },
});
const [mode] = positionals;
const flooders = Number(values.flooders);
const waves = Number(values.waves);
const rounds = Number(values.rounds);
if (!['flood', 'waves'].includes(mode ?? '') || !(flooders >= 1) || !(waves >= 1) || !(rounds >= 1)) {
  console.error('usage: node bench/shed-bodies.mjs flood [--flooders N] [--rounds N]');
  console.error('       node bench/shed-bodies.mjs waves [--waves N] [--rounds N]');
  process.exit(2);
}
execFileSync('taskset', ['-pc', '1', String(process.pid)], { stdio: 'ignore' });

const gateways = await benchGateways(ROOT, 'shed-bodies');
const CONFIG = {
  apiVersion: 'admissiongateway.io/v1alpha1',
  kind: 'GatewayConfig',
  server: { maxRequestBytes: 8 * 1024 * 1024, maxInflightBytes: 64 * 1024 * 1024 },
  kube: { enabled: false },
  log: { level: 'warn' },
  chain: [],
};
/** A review of about 7 MB: weighed at 5 bytes a byte, it does not fit beside the held body. */
const REVIEW = {
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: { uid: 'shed', pad: 'y'.repeat(7_000_000) },
};
const HELD_BYTES = 6_000_000;
const MiB = 1024 * 1024;
const CA = fs.readFileSync(gateways.certs.caCertFile);

/**
 * A sender of the shed review: `send()` resolves with the answer's status (0: none). Each review goes on a
 * connection of its own: kept connections leave the load generator, which shares their core, far later, and the
 * latencies would measure that (bench/README.md, "What shed bodies cost a serving gateway").
 */
function shedSender(port) {
  const connection = new Connection({ host: '127.0.0.1', port, ca: CA });
  const request = fixedRequestBuilder(REVIEW, { host: `127.0.0.1:${port}`, path: '/mutate' }).build();
  const send = () =>
    new Promise((resolve) =>
      connection.send(request, (err, status) => {
        connection.close();
        resolve(err ? 0 : status);
      }),
    );
  return { send, close: () => connection.close() };
}

/** A figure of the gateway's metrics (without the `admission_gateway_` prefix); 0 when it cannot be read. */
async function metric(gateway, name) {
  try {
    const text = await (await fetch(`${gateway.opsUrl}/metrics`)).text();
    return Number(new RegExp(`^admission_gateway_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  } catch {
    return 0; // the gateway is stopping
  }
}

/**
 * A connection that sends most of a body and stops, once its bytes are weighed (5 a byte): the budget it holds
 * sheds every 7 MB review.
 */
async function holdBudget(gateway) {
  const connection = await new Connection({ host: '127.0.0.1', port: gateway.port, ca: CA }).connect();
  const { build } = fixedRequestBuilder(' '.repeat(HELD_BYTES + 100_000), { host: 'gateway', path: '/mutate' });
  connection.socket.write(build().subarray(0, -100_000));
  while ((await metric(gateway, 'inflight_bytes')) < 5 * HELD_BYTES) await sleep(5);
  return connection;
}

function count(statuses, status) {
  statuses[status] = (statuses[status] ?? 0) + 1;
}

async function flood(withFlooders) {
  const gateway = await gateways.start(withFlooders ? 'flood' : 'no flood', CONFIG);
  const held = await holdBudget(gateway);
  const statuses = {};
  let stop = false;
  const sender = async () => {
    const shed = shedSender(gateway.port);
    while (!stop) count(statuses, await shed.send());
    shed.close();
  };
  const began = performance.now();
  const senders = withFlooders ? Array.from({ length: flooders }, sender) : [];
  try {
    const result = await loadgen(
      ROOT,
      {
        mode: 'fixed',
        rate: 500,
        port: gateway.port,
        path: '/mutate?timeout=10s',
        fixture: path.join(ROOT, 'test/fixtures/reviews/pod-create.json'),
        caFile: gateways.certs.caCertFile,
        connections: 16,
        warmupS: 2,
        durationS: 8,
        pids: { server: gateway.pid },
        clockTicks: clockTicks(),
      },
      1,
    );
    stop = true;
    await Promise.all(senders);
    const shed = Object.values(statuses).reduce((a, b) => a + b, 0);
    return {
      cpuPct: result.procs.server.cpuPct,
      p50: result.latencyMs.p50,
      p99: result.latencyMs.p99,
      errors: result.errors,
      sendLagP99: result.sendLagMs.p99,
      shedPerS: Math.round(shed / ((performance.now() - began) / 1000)),
      statuses,
    };
  } finally {
    stop = true;
    held.close();
    await gateway.stop();
  }
}

async function wavesRound() {
  const gateway = await gateways.start('waves', CONFIG);
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${gateway.pid}/status`, 'utf8'))[1]) / 1024;
  const start = rss();
  let peak = start;
  let peakOutside = 0;
  const sampleRss = setInterval(() => (peak = Math.max(peak, rss())), 5);
  const sampleMetrics = setInterval(async () => {
    peakOutside = Math.max(peakOutside, (await metric(gateway, 'nodejs_external_memory_bytes')) / MiB);
  }, 20);
  const held = await holdBudget(gateway);
  const senders = Array.from({ length: 20 }, () => shedSender(gateway.port));
  const statuses = {};
  try {
    for (let w = 0; w < waves; w++) {
      for (const status of await Promise.all(senders.map((shed) => shed.send()))) count(statuses, status);
    }
    await sleep(300);
    const round = (x) => Math.round(x * 10) / 10;
    return { startMiB: round(start), peakMiB: round(peak), peakOutsideHeapMiB: round(peakOutside), statuses };
  } finally {
    clearInterval(sampleRss);
    clearInterval(sampleMetrics);
    for (const shed of senders) shed.close();
    held.close();
    await gateway.stop();
  }
}

if (mode === 'flood') {
  console.log(
    `ordinary reviews at 500/s, with ${flooders} connections sending shed 7 MB reviews back to back and without:`,
  );
  for (let r = 0; r < rounds; r++) {
    for (const withFlooders of r % 2 ? [false, true] : [true, false]) {
      const f = await flood(withFlooders);
      console.log(
        `  round ${r + 1}, ${withFlooders ? 'flood   ' : 'no flood'}: gateway CPU ${f.cpuPct} %, p50 ${f.p50} ms, ` +
          `p99 ${f.p99} ms, ${f.errors} errors (send lag p99 ${f.sendLagP99} ms)` +
          (withFlooders ? `; ${f.shedPerS} shed bodies a second, answers ${JSON.stringify(f.statuses)}` : ''),
      );
    }
  }
} else {
  console.log(`${waves} waves of twenty shed 7 MB reviews at once, a fresh gateway a round:`);
  for (let r = 0; r < rounds; r++) {
    const w = await wavesRound();
    console.log(
      `  round ${r + 1}: resident ${w.startMiB} MiB at start, peak ${w.peakMiB} MiB; outside the heap, peak ` +
        `${w.peakOutsideHeapMiB} MiB; answers ${JSON.stringify(w.statuses)}`,
    );
  }
}
process.exit(0);
