// What a setting costs a review in a serving gateway: the shipped chain (gateway.yaml) under the Deployment's
// NODE_OPTIONS, once per variant, each variant a setting of the configuration given as `path=value` (a YAML value),
// `-` for none. Each round starts every variant's gateway afresh, all pinned to core 0, warms each with a closed
// loop of 16 connections from bench/loadgen.mjs on core 1, then measures them in turn, window after window: the
// gateway's CPU a review over its windows. Windows of a few seconds taking turns put the machine's other load, which
// comes and goes over seconds here, on every variant alike. The medians and, against the first variant, the median
// of each round's difference are printed. The log goes to a file, as in `npm run bench`. Uses dist/ (npm run build
// first).
//
//   node bench/setting-cost.mjs - log.level=warn                  the review line's cost (info is the default)
//   node bench/setting-cost.mjs - explain.bufferSize=0 --validate  keeping decision traces, on /validate
//   options: --rounds N (default 6); --validate: the review on /validate (the default is /mutate);
//            --warmup S (default 5): a fresh gateway's optimising compiler runs on other threads for its first
//            seconds under load, and more of it for the variant with more code (bench/README.md, "What a setting
//            costs a serving gateway"); --windows N (default 3) of --window S (default 2) a variant a round
/* global process, console, fetch, setInterval, clearInterval */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import YAML from 'yaml';
import { deploymentNodeOptions } from './deployment.mjs';
import { median } from './large.mjs';
import { clockTicks } from './lib.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '6' },
    validate: { type: 'boolean' },
    warmup: { type: 'string', default: '5' },
    windows: { type: 'string', default: '3' },
    window: { type: 'string', default: '2' },
  },
});
const rounds = Number(values.rounds);
const warmupS = Number(values.warmup);
const windows = Number(values.windows);
const windowS = Number(values.window);
const route = values.validate ? '/validate?timeout=10s' : '/mutate?timeout=10s';
if (
  positionals.length < 2 ||
  !(rounds >= 1) ||
  !(warmupS >= 0) ||
  !(windows >= 1) ||
  !(windowS > 0) ||
  positionals.some((v) => v !== '-' && !/^[\w.]+=/.test(v))
) {
  console.error(
    'usage: node bench/setting-cost.mjs VARIANT VARIANT... [--rounds N] [--validate] [--warmup S] [--windows N] [--window S]',
  );
  console.error('  VARIANT: - (the configuration as the bench runs it) or path=value, e.g. log.level=warn');
  process.exit(2);
}
if (!fs.existsSync(path.join(ROOT, 'dist/server/main.js'))) {
  console.error('no dist/ (npm run build first)');
  process.exit(2);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'admission-gateway-setting-cost-'));
const running = new Set();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
  fs.rmSync(tmp, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));

const generate = await import(pathToFileURL(path.join(ROOT, 'dist/certs/generate.js')).href);
const certs = await generate.writeCertificates(
  path.join(tmp, 'certs'),
  generate.generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] }),
);
const shipped = YAML.parse(fs.readFileSync(path.join(ROOT, 'gateway.yaml'), 'utf8'));
const ticks = clockTicks();

/** A port free on 127.0.0.1 now (the gateway may log nothing at start, so its ports are chosen here). */
async function freePort() {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  server.close();
  await once(server, 'close');
  return port;
}

/** The bench's configuration of the shipped chain on `ports`, with `variant` set. */
function configOf(variant, [port, opsPort, healthPort]) {
  const config = {
    ...shipped,
    server: {
      ...shipped.server,
      host: '127.0.0.1',
      port,
      opsHost: '127.0.0.1',
      opsPort,
      healthHost: '127.0.0.1',
      healthPort,
      tls: { certFile: certs.certFile, keyFile: certs.keyFile, generate: false },
      shutdownTimeoutSeconds: 1,
    },
    kube: { enabled: false, watchProviders: false },
    log: { level: 'info' },
  };
  if (variant === '-') return config;
  const at = variant.indexOf('=');
  const keys = variant.slice(0, at).split('.');
  let holder = config;
  for (const key of keys.slice(0, -1)) holder = holder[key] = { ...(holder[key] ?? {}) };
  holder[keys.at(-1)] = YAML.parse(variant.slice(at + 1));
  return config;
}

/** A gateway of `variant`, pinned to core 0, ready; its stdout to a file truncated every 2 s. */
async function startGateway(variant, n) {
  const configFile = path.join(tmp, `gateway-${n}.yaml`);
  const ports = [await freePort(), await freePort(), await freePort()];
  fs.writeFileSync(configFile, YAML.stringify(configOf(variant, ports)));
  const logFile = path.join(tmp, `gateway-${n}.log`);
  const out = fs.openSync(logFile, 'a'); // O_APPEND: the file is truncated under the writer
  const child = spawn(
    'taskset',
    ['-c', '0', process.execPath, 'dist/server/main.js', 'serve', '--config', configFile],
    {
      cwd: ROOT,
      stdio: ['ignore', out, 'inherit'],
      env: { ...process.env, NODE_OPTIONS: deploymentNodeOptions(ROOT) },
    },
  );
  fs.closeSync(out);
  running.add(child);
  const ready = () =>
    fetch(`http://127.0.0.1:${ports[2]}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
  for (const deadline = Date.now() + 30_000; !(await ready()); await sleep(50)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`gateway (${variant}) did not start`);
  }
  // The review lines are written (their cost is what is measured) but not kept.
  const truncate = setInterval(() => {
    try {
      fs.truncateSync(logFile, 0);
    } catch {
      // the temporary directory is being removed
    }
  }, 2000);
  return {
    pid: child.pid,
    port: ports[0],
    async stop() {
      clearInterval(truncate);
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
      running.delete(child);
    },
  };
}

/** A closed loop's result as bench/loadgen.mjs prints it: `durationS` measured after `warmS`. */
async function closedLoop(gateway, warmS, durationS) {
  const cfg = {
    port: gateway.port,
    path: route,
    caFile: certs.caCertFile,
    fixture: path.join(ROOT, 'test/fixtures/reviews/pod-create.json'),
    clockTicks: ticks,
    pids: { server: gateway.pid },
    mode: 'closed',
    connections: 16,
    warmupS: warmS,
    durationS,
  };
  const child = spawn(
    'taskset',
    ['-c', '1', process.execPath, path.join(ROOT, 'bench/loadgen.mjs'), JSON.stringify(cfg)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let text = '';
  child.stdout.on('data', (chunk) => (text += chunk));
  const [code] = await once(child, 'close');
  if (code !== 0) throw new Error(`load generator exited with ${code}`);
  return JSON.parse(text.trim().split('\n').pop());
}

const cpu = positionals.map(() => []);
const rps = positionals.map(() => []);
const roundsText = `${rounds} round${rounds === 1 ? '' : 's'}`;
console.log(`the shipped chain on ${route.split('?')[0]}, ${roundsText}; gateway CPU µs a review (reviews/s):`);
for (let round = 0; round < rounds; round++) {
  const gateways = [];
  try {
    for (const [i, variant] of positionals.entries()) gateways.push(await startGateway(variant, i));
    for (const [i, gateway] of gateways.entries()) {
      const warm = await closedLoop(gateway, warmupS, 0.5);
      if (warm.errors > 0) throw new Error(`${positionals[i]}: ${warm.errors} errors in its warm-up`);
    }
    const served = gateways.map(() => ({ cpuUs: 0, reviews: 0 }));
    for (let w = 0; w < windows; w++) {
      for (const [i, gateway] of gateways.entries()) {
        // A moment for the loop's connections to be made, which the measured window leaves out.
        const result = await closedLoop(gateway, 0.3, windowS);
        if (result.errors > 0) throw new Error(`${positionals[i]}: ${result.errors} errors`);
        served[i].cpuUs += result.procs.server.cpuUs;
        served[i].reviews += result.requests;
      }
    }
    const figures = served.map(({ cpuUs, reviews }, i) => {
      const us = Math.round((cpuUs / reviews) * 10) / 10;
      const perSecond = Math.round(reviews / (windows * windowS));
      cpu[i].push(us);
      rps[i].push(perSecond);
      return `${us} (${perSecond})`;
    });
    console.log(`  round ${round + 1}: ${figures.join(', ')}`);
  } finally {
    for (const gateway of gateways) await gateway.stop();
  }
}
for (const [i, variant] of positionals.entries()) {
  const against =
    i === 0
      ? ''
      : (() => {
          const d = median(cpu[i].map((us, r) => us - cpu[0][r]));
          return `; against ${positionals[0]}: ${d > 0 ? '+' : ''}${d.toFixed(1)} µs a review (${((d / median(cpu[0])) * 100).toFixed(1)} %), the median of the rounds' differences`;
        })();
  console.log(
    `${variant}: ${median(cpu[i]).toFixed(1)} µs a review (${Math.min(...cpu[i])}–${Math.max(...cpu[i])}), ` +
      `${median(rps[i]).toFixed(0)} reviews/s${against}`,
  );
}
