#!/usr/bin/env node
// `npm run bench` — measures the gateway against a raw Node HTTPS server on this machine, side by side, in
// one run. See bench/README.md for what each scenario means and how to read the output.
//
// Every server (the raw one, each gateway, the remote providers' peers excepted) runs as a child process
// pinned to the server core; the load generator (a child) and this orchestrator are pinned to the client
// core. The gateway runs from dist/ (built first when stale), with log.level info and its stdout going to
// a file, as in production the per-review log line is part of the cost.
/* global process, console, setInterval, clearInterval, fetch, Buffer */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { URL, fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import YAML from 'yaml';
import { CEL_TARGETS } from './cel-targets.mjs';
import { deploymentMemoryQuantity, deploymentNodeOptions } from './deployment.mjs';
import { LARGE, largeReport, runLarge } from './large.mjs';
import { POLICY_TESTS, policyTestsReport, runPolicyTests } from './policy-tests.mjs';
import {
  Connection,
  answerChecks,
  clockTicks as clockTicksOf,
  fixedRequestBuilder,
  patchLacks,
  portLine,
  readProc,
  requestBuilder,
  subjectAccessReview,
  uidFor,
} from './lib.mjs';
import { startKubeStandIn } from './kube-stand-in.mjs';
import { parseMemoryQuantity, removeCgroupsSync } from './memcg.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BENCH = path.join(ROOT, 'bench');
const RESULTS = path.join(BENCH, 'results');
const FIXTURE = path.join(ROOT, 'test/fixtures/reviews/pod-create.json');
const MUTATE_PATH = '/mutate?timeout=10s';
const VALIDATE_PATH = '/validate?timeout=10s';
const AUTHORIZE_PATH = '/authorize';
const startedAt = new Date();

// ---------------------------------------------------------------------------------------------- options
const HELP = `usage: npm run bench [-- options]

  --warmup S           warm-up before each closed-loop run, not recorded (default 2)
  --closed S           closed-loop measurement per scenario, as two windows of S/2 whose better one counts
                       (default 8; 0 skips the closed-loop runs)
  --fixed S            fixed-rate measurement per scenario (default 8)
  --rate N             fixed rate, reviews/s (default 1000)
  --rss-rate N         rate of the peak-RSS run of the plugin chain (default 2000)
  --connections N      closed-loop keep-alive connections (default 16)
  --extra N            extra trivial plugins in the "plugins+N" scenario (default 8)
  --only LIST          comma-separated scenario keys to run (raw and rawDeferred run too with any
                       scenario the ratios compare with them, i.e. not with "large", "policyTests" or
                       "parallelProviders" alone; parallelProviders brings parallelProvidersUndeclared)
                       --only policyTests: admission-gateway test over 500 cases; not part of the default run
                       --only authorize: POST /authorize (SubjectAccessReviews) with its own raw baseline
                       (rawAuthorize) and two information scenarios; not part of the default run
  --soak S             instead of the default run: the plugin chain at --soak-rate for S seconds,
                       RSS sampled every 5 s (e.g. --soak 300)
  --soak-rate N        rate of the soak (default 2000)
  --server-core N      core for the servers under test (default 0)
  --client-core N      core for the load generator, providers and this process (default 1)
  --no-build           do not build dist/ even when stale
  --keep               keep the temporary directory (configs, logs, certificates)
  --profile DIR        run each gateway with --cpu-prof, writing <DIR>/<scenario>.cpuprofile (open in
                       Chrome DevTools or summarise with node bench/profile-summary.mjs FILE), and each
                       large-review worker's as <DIR>/<scenario>.worker-<thread>.cpuprofile
  --node-flags FLAGS   extra node flags for the gateways (e.g. "--single-threaded-gc"), to try a setting`;

const { values: argv } = parseArgs({
  options: {
    help: { type: 'boolean', short: 'h' },
    warmup: { type: 'string', default: '2' },
    closed: { type: 'string', default: '8' },
    fixed: { type: 'string', default: '8' },
    rate: { type: 'string', default: '1000' },
    'rss-rate': { type: 'string', default: '2000' },
    connections: { type: 'string', default: '16' },
    extra: { type: 'string', default: '8' },
    only: { type: 'string' },
    soak: { type: 'string' },
    'soak-rate': { type: 'string', default: '2000' },
    'server-core': { type: 'string', default: '0' },
    'client-core': { type: 'string', default: '1' },
    'no-build': { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    profile: { type: 'string' },
    'node-flags': { type: 'string', default: '' },
  },
  strict: true,
});
if (argv.help) {
  console.log(HELP);
  process.exit(0);
}
function num(name, min = 0) {
  const n = Number(argv[name]);
  if (!Number.isFinite(n) || n < min) {
    console.error(`bench: --${name}: expected a number >= ${min}, got "${argv[name]}"`);
    process.exit(2);
  }
  return n;
}
const opts = {
  warmupS: num('warmup'),
  closedS: num('closed'),
  fixedS: num('fixed', 1),
  rate: num('rate', 1),
  rssRate: num('rss-rate', 1),
  connections: num('connections', 1),
  extra: num('extra', 1),
  soakS: argv.soak === undefined ? 0 : num('soak', 10),
  soakRate: num('soak-rate', 1),
  serverCore: num('server-core'),
  clientCore: num('client-core'),
  fixedConnections: 64,
};

/**
 * (f)/(f′): remote providers answering after a fixed delay. The rate is low enough that neither the providers
 * (all on the client core) nor the gateway is busy, so the latency is the delays and how they add up.
 */
const PARALLEL = { providers: 3, delayMs: 20, rate: 100, warmupS: 1, fixedS: 4 };

/**
 * POST /authorize (`--only authorize`; not in the default run, which is at its run-time target already): one
 * SubjectAccessReview, sent again and again, against a chain of access-guard alone. Targets: closed-loop
 * throughput ≥ `ratio` of the raw SubjectAccessReview server's, and p99 ≤ `p99Ms` at a fixed `rate`.
 */
const AUTHORIZE = { rate: 2000, p99Ms: 2, ratio: 0.6 };
/** `get` of one Secret in a namespace: access-guard's authorizeMatch selects it; no cluster, so no opinion. */
const SAR_GET_SECRET = subjectAccessReview({
  namespace: 'team-a',
  verb: 'get',
  version: 'v1',
  resource: 'secrets',
  name: 'db',
});
/** A ConfigMap instead: no step matches (the fast path). */
const SAR_GET_CONFIGMAP = subjectAccessReview({
  namespace: 'team-a',
  verb: 'get',
  version: 'v1',
  resource: 'configmaps',
  name: 'db',
});
/** Secrets listed across all namespaces: access-guard forbids it (clusterWideReads: forbid, the default). */
const SAR_LIST_ALL_SECRETS = subjectAccessReview({ verb: 'list', version: 'v1', resource: 'secrets' });

/** Send lag p99 (ms) above which the fixed-rate generator counts as late (a caveat is printed). */
const LATE_GENERATOR_MS = 0.5;
/** Send lag p99 (ms) above which a fixed-rate window is measured once more (a few ms swamp the p99 targets). */
const RETRY_LATE_GENERATOR_MS = 1;
/**
 * Seconds of a run that windows measured once more may take in all: on a slow machine most windows are late, and
 * measuring each again took the default run past its run-time target (bench/README.md, "Run time").
 */
let remeasureSecondsLeft = 20;

// ------------------------------------------------------------------------------- child process tracking
/** Every child this process started, by PID, so that all of them are stopped on any exit path. */
const children = new Map();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'admission-gateway-bench-'));
const timers = new Set();
let interrupted = false;

function startChild(name, command, args, options) {
  const child = spawn(command, args, options);
  if (child.pid === undefined) throw new Error(`could not start ${name} (${command})`);
  children.set(child.pid, { name, child });
  child.once('exit', () => children.delete(child.pid));
  return child;
}

const exited = (child) => child.exitCode !== null || child.signalCode !== null;

async function stopChild(child, graceMs = 3000) {
  if (exited(child)) return;
  const gone = once(child, 'exit');
  child.kill('SIGTERM');
  if (await Promise.race([gone.then(() => true), sleep(graceMs).then(() => false)])) return;
  child.kill('SIGKILL');
  await gone;
}

function killAllSync() {
  for (const t of timers) clearInterval(t);
  for (const [pid] of children) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  children.clear();
}

process.on('exit', () => {
  killAllSync();
  removeCgroupsSync(); // after the kill: a cgroup can only be removed once its processes are gone
  if (!argv.keep) fs.rmSync(tmp, { recursive: true, force: true });
});
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
  ['SIGHUP', 129],
]) {
  process.on(signal, () => {
    interrupted = true;
    console.error(`\nbench: ${signal}: stopping ${children.size} child process(es)`);
    void Promise.race([Promise.all([...children.values()].map(({ child }) => stopChild(child, 1000))), sleep(1500)])
      .catch(() => undefined)
      .finally(() => process.exit(code));
  });
}

// -------------------------------------------------------------------------------------------- helpers
const round = (v, digits = 2) => (v === null || v === undefined ? null : Math.round(v * 10 ** digits) / 10 ** digits);
const loadavg = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
const clockTicks = clockTicksOf();
const pinned = (core, args) => ['-c', String(core), process.execPath, ...args];

/**
 * Runs `node dist/server/main.js ARGS` pinned to the server core, as a tracked child; resolves with its exit code
 * and what it wrote.
 */
async function runCommand(args) {
  const child = startChild(
    'command',
    'taskset',
    pinned(opts.serverCore, [path.join(ROOT, 'dist/server/main.js'), ...args]),
    {
      cwd: tmp,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
  // 'close', not 'exit': the output may still be arriving when the process exits.
  const [code] = await once(child, 'close');
  return { code, stdout, stderr };
}

function tail(file, lines = 15) {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

function build() {
  if (argv['no-build']) return;
  const result = spawnSync(process.execPath, ['scripts/build-if-needed.mjs'], { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0)
    throw new Error('building dist/ failed (npm run build); the gateway under test runs from dist/');
}

function pinSelf() {
  if (os.availableParallelism() < 2) {
    console.warn('bench: fewer than 2 cores: server and load generator share a core; ratios are still comparable');
    opts.serverCore = 0;
    opts.clientCore = 0;
  }
  execFileSync('taskset', ['-a', '-cp', String(opts.clientCore), String(process.pid)], { stdio: 'ignore' });
}

async function makeCertificates() {
  const generate = await import(pathToFileURL(path.join(ROOT, 'dist/certs/generate.js')).href);
  const bundle = generate.generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  const files = await generate.writeCertificates(path.join(tmp, 'certs'), bundle);
  return { ...files, caBundle: generate.caBundle(bundle.caCert) };
}

/**
 * One request on a fresh connection; returns the decoded AdmissionReview response. With `patchPaths`, its patch
 * must add each of those pointers.
 */
async function reviewOnce(port, ca, reqPath, n, { patchPaths } = {}) {
  const conn = new Connection({ host: '127.0.0.1', port, ca });
  await conn.connect();
  try {
    const uid = uidFor(n);
    const builder = requestBuilder(FIXTURE, { host: `127.0.0.1:${port}`, path: reqPath });
    const { status, body } = await new Promise((resolve, reject) =>
      conn.send(builder.build(uid), (err, s, b) => (err ? reject(err) : resolve({ status: s, body: b }))),
    );
    const review = JSON.parse(body.toString('utf8'));
    const response = review.response ?? {};
    if (status !== 200 || response.uid !== uid || response.allowed !== true) {
      throw new Error(`unexpected answer: HTTP ${status} ${body.toString('utf8').slice(0, 400)}`);
    }
    const lacks = patchPaths && patchLacks(body, patchPaths);
    if (lacks) throw new Error(`unexpected answer: ${lacks}`);
    const patch = response.patch ? JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) : [];
    return { patchOps: patch.length, warnings: response.warnings ?? [] };
  } finally {
    conn.close();
  }
}

/**
 * One SubjectAccessReview on a fresh connection; its answer must pass `answer` (lib.mjs answerChecks).
 * Returns the answer's status.
 */
async function authorizeOnce(port, ca, reqPath, review, answer) {
  const conn = new Connection({ host: '127.0.0.1', port, ca });
  await conn.connect();
  try {
    const request = fixedRequestBuilder(review, { host: `127.0.0.1:${port}`, path: reqPath }).build();
    const { status, body } = await new Promise((resolve, reject) =>
      conn.send(request, (err, s, b) => (err ? reject(err) : resolve({ status: s, body: b }))),
    );
    if (!answerChecks[answer](status, body)) {
      throw new Error(`unexpected answer (expected ${answer}): HTTP ${status} ${body?.toString('utf8').slice(0, 400)}`);
    }
    return { status: JSON.parse(body.toString('utf8')).status };
  } finally {
    conn.close();
  }
}

async function metricsText(opsUrl) {
  const res = await fetch(`${opsUrl}/metrics`);
  return res.text();
}

function metricValue(text, name, labels) {
  let sum = null;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    sum = (sum ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** Where the gateway's memory is, from prom-client's default metrics (prefixed admission_gateway_) (MiB, at the end of a scenario). */
function memoryFromMetrics(text) {
  const mib = (name) => round((metricValue(text, name, {}) ?? 0) / 1048576, 1);
  return {
    rssMiB: mib('admission_gateway_process_resident_memory_bytes'),
    heapTotalMiB: mib('admission_gateway_nodejs_heap_size_total_bytes'),
    heapUsedMiB: mib('admission_gateway_nodejs_heap_size_used_bytes'),
    externalMiB: mib('admission_gateway_nodejs_external_memory_bytes'),
  };
}

// -------------------------------------------------------------------------------------------- servers
/** Starts bench/servers.mjs MODE … pinned to `core` (`args` after the certificate files); resolves with its pid and port. */
async function startEchoServer(name, mode, core, certs, args = []) {
  const errFile = path.join(tmp, `${name}.err`);
  const err = fs.openSync(errFile, 'a');
  const child = startChild(
    name,
    'taskset',
    pinned(core, [
      // The raw server (on the server core) is profiled too, so gateway profiles have a baseline to diff.
      ...(argv.profile && core === opts.serverCore
        ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(argv.profile)}`, `--cpu-prof-name=${name}.cpuprofile`]
        : []),
      path.join(BENCH, 'servers.mjs'),
      mode,
      certs.certFile,
      certs.keyFile,
      ...args,
    ]),
    { stdio: ['ignore', 'pipe', err] },
  );
  fs.closeSync(err);
  const port = await portLine(child, name, () => tail(errFile));
  return {
    name,
    pid: child.pid,
    port,
    /** Stops the server; resolves with what it reports: { served, connections, …its mode's figures }. */
    async stop() {
      await stopChild(child);
      try {
        const { mode: _mode, served, connections, ...more } = JSON.parse(tail(errFile, 1));
        return { served, tlsConnections: connections, ...more };
      } catch {
        return undefined;
      }
    },
  };
}

/** The gateway.yaml of a bench gateway; `extra.server` and `extra.kube` are merged over its own. */
function gatewayConfig(shipped, certs, chain, extra = {}) {
  return {
    apiVersion: 'admissiongateway.io/v1alpha1',
    kind: 'GatewayConfig',
    server: {
      ...shipped.server,
      ...extra.server,
      host: '127.0.0.1',
      port: 0,
      opsHost: '127.0.0.1',
      opsPort: 0,
      healthHost: '127.0.0.1',
      healthPort: 0,
      tls: { certFile: certs.certFile, keyFile: certs.keyFile, generate: false },
      shutdownTimeoutSeconds: 1,
    },
    kube: { enabled: false, watchProviders: false, ...extra.kube },
    log: { level: 'info' },
    chain,
  };
}

/**
 * The Deployment's memory limit or request (`resources.limits.memory`, `resources.requests.memory`) in bytes:
 * the `large` scenario runs gateways under the limit and compares the request with what they hold.
 */
function deploymentMemory(kind) {
  const quantity = deploymentMemoryQuantity(ROOT, kind);
  const bytes = parseMemoryQuantity(quantity);
  if (!bytes) throw new Error(`manifests/deployment.yaml: no memory ${kind} (got ${JSON.stringify(quantity)})`);
  return bytes;
}

/**
 * Starts `node dist/server/main.js serve --config …` pinned to the server core; waits for /readyz. With
 * `cgroupProcs` it starts inside that cgroup: a shell writes its own pid there and then execs the gateway (same
 * pid), so the gateway's first allocation is already charged to the cgroup. With `keepLog` its log is not
 * truncated, so that its review lines can be read afterwards (`logFile`): only for runs of a few thousand reviews.
 */
async function startGateway(name, config, { cgroupProcs, keepLog = false } = {}) {
  const configFile = path.join(tmp, `${name}.yaml`);
  fs.writeFileSync(configFile, YAML.stringify(config));
  const logFile = path.join(tmp, `${name}.log`);
  const errFile = path.join(tmp, `${name}.err`);
  const out = fs.openSync(logFile, 'a'); // O_APPEND: the file can be truncated under the writer
  const err = fs.openSync(errFile, 'a');
  // Node writes a profile per thread, and a worker inherits the flags: each thread's goes to a directory of its
  // own, named apart once the gateway has exited (collectProfiles).
  const profileDir = argv.profile ? path.join(path.resolve(argv.profile), `${name}.threads`) : undefined;
  const taskset = pinned(opts.serverCore, [
    ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
    ...argv['node-flags'].split(/\s+/).filter(Boolean),
    path.join(ROOT, 'dist/server/main.js'),
    'serve',
    '--config',
    configFile,
  ]);
  const [command, args] = cgroupProcs
    ? ['sh', ['-c', 'echo $$ > "$0" && exec "$@"', cgroupProcs, 'taskset', ...taskset]]
    : ['taskset', taskset];
  const child = startChild(name, command, args, {
    cwd: tmp,
    stdio: ['ignore', out, err],
    env: { ...process.env, NODE_OPTIONS: deploymentNodeOptions(ROOT) },
  });
  fs.closeSync(out);
  fs.closeSync(err);
  const failure = (why) =>
    new Error(`gateway ${name} ${why}\n--- stderr ---\n${tail(errFile)}\n--- stdout ---\n${tail(logFile)}`);
  let urls;
  for (const deadline = Date.now() + 30_000; !urls; await sleep(50)) {
    if (exited(child)) throw failure(`exited with ${child.exitCode ?? child.signalCode}`);
    if (Date.now() > deadline) throw failure('did not log "admission-gateway serving" within 30 s');
    const line = fs
      .readFileSync(logFile, 'utf8')
      .split('\n')
      .find((l) => l.includes('admission-gateway serving'));
    if (line) {
      const { webhook, ops, health } = JSON.parse(line);
      urls = { webhook, ops, health };
    }
  }
  for (const deadline = Date.now() + 15_000; ; await sleep(50)) {
    const ok = await fetch(`${urls.health}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (exited(child) || Date.now() > deadline) throw failure('never became ready (/readyz)');
  }
  const startupLog = path.join(tmp, `${name}.startup.log`);
  fs.copyFileSync(logFile, startupLog);
  // The per-review log lines are written (their cost is real) but not kept: truncate every 2 s.
  const truncate = keepLog
    ? undefined
    : setInterval(() => {
        try {
          fs.truncateSync(logFile, 0);
        } catch {
          // the temporary directory is being removed
        }
      }, 2000);
  if (truncate) timers.add(truncate);
  return {
    name,
    pid: child.pid,
    port: Number(new URL(urls.webhook).port),
    opsUrl: urls.ops,
    logFile,
    /** null while it runs; { code, signal } once it exited by itself (or was killed, e.g. by the OOM killer). */
    exitStatus: () => (exited(child) ? { code: child.exitCode, signal: child.signalCode } : null),
    stderrTail: () => tail(errFile, 5),
    /** Its JSON log lines up to readiness. */
    startupLines: () =>
      fs
        .readFileSync(startupLog, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l)),
    async stop() {
      clearInterval(truncate);
      timers.delete(truncate);
      await stopChild(child);
      if (profileDir) collectProfiles(profileDir, name);
    },
  };
}

/**
 * Names the profiles a gateway's threads wrote into `dir` (`CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`):
 * the event loop's (thread 0) `<name>.cpuprofile` beside it, each worker's `<name>.worker-<thread>.cpuprofile`.
 */
function collectProfiles(dir, name) {
  if (!fs.existsSync(dir)) return;
  for (const file of fs.readdirSync(dir)) {
    const thread = file.split('.')[4];
    const target = thread === '0' ? `${name}.cpuprofile` : `${name}.worker-${thread}.cpuprofile`;
    fs.renameSync(path.join(dir, file), path.join(dir, '..', target));
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

// ------------------------------------------------------------------------------------------- load runs
/** Runs the load generator; with `onStart`, cfg.announceStart is set and onStart gets its schedule's epoch start (ms). */
async function loadgen(cfg, { onStart } = {}) {
  const child = startChild(
    'loadgen',
    'taskset',
    pinned(opts.clientCore, [path.join(BENCH, 'loadgen.mjs'), JSON.stringify({ ...cfg, announceStart: !!onStart })]),
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  let announced = !onStart;
  child.stdout.on('data', (chunk) => {
    out += chunk;
    if (announced || !out.includes('\n')) return;
    announced = true;
    onStart(JSON.parse(out.slice(0, out.indexOf('\n'))).scheduleStart);
  });
  // 'close', not 'exit': the output may still be arriving when the process exits.
  const [code] = await once(child, 'close');
  if (code !== 0) throw new Error(`load generator exited with ${code}`);
  return JSON.parse(out.trim().split('\n').pop());
}

function loadCfg(target, reqPath, certs, extra) {
  return {
    port: target.port,
    path: reqPath,
    caFile: certs.caCertFile,
    fixture: FIXTURE,
    clockTicks,
    pids: { server: target.pid, ...(target.peerPids ?? {}) },
    ...extra,
  };
}

const progress = (text) => process.stdout.write(text);

/**
 * One scenario: start → sanity check (one review, must be allowed with its uid, and with `patchPaths` add
 * those pointers, as must every answer after it) → optional priming → closed loop (warm-up + window) →
 * fixed rate(s) → peak RSS → stop.
 */
async function runScenario(index, total, scenario, certs) {
  progress(`[${index}/${total}] ${scenario.key.padEnd(15)} ${scenario.label}\n`);
  const target = await scenario.start();
  let result;
  try {
    const ca = fs.readFileSync(certs.caCertFile);
    let sanity;
    if (scenario.load?.review) {
      sanity = await authorizeOnce(target.port, ca, scenario.path, scenario.load.review, scenario.load.answer);
      const { denied, reason } = sanity.status;
      progress(`      answer: ${denied ? `denied: ${reason}` : 'no opinion'}\n`);
    } else {
      sanity = await reviewOnce(target.port, ca, scenario.path, 1, { patchPaths: scenario.patchPaths });
      progress(`      answer: allowed, ${sanity.patchOps} patch op(s), ${sanity.warnings.length} warning(s)\n`);
    }
    if (scenario.prime) await scenario.prime(target);
    result = {
      label: scenario.label,
      path: scenario.path,
      sanity,
      ...(scenario.baseline ? { baseline: scenario.baseline } : {}),
    };
    if (opts.closedS > 0 && scenario.closed !== false) {
      // Two windows of half the time each, and the better one counts: other tenants' load only ever lowers a
      // window, and on this VM it comes in bursts of seconds. Every server, raw or gateway, is measured alike.
      const half = opts.closedS / 2;
      progress(
        `      closed loop: ${opts.connections} connections, ${opts.warmupS}s warm-up + 2 × ${half}s (the better counts) ...`,
      );
      const closedRun = (warmupS) =>
        loadgen(
          loadCfg(target, scenario.path, certs, {
            mode: 'closed',
            connections: opts.connections,
            warmupS,
            durationS: half,
            ...scenario.load,
          }),
        );
      const first = await closedRun(opts.warmupS);
      const second = await closedRun(0.5);
      result.closedRuns = [first, second];
      result.closed = second.rps > first.rps ? second : first;
      progress(` ${first.rps} / ${second.rps} req/s\n`);
    }
    if (scenario.fixed !== false) {
      const rate = scenario.rate ?? opts.rate;
      const warmupS = scenario.warmupS ?? (result.closed ? 1 : Math.max(opts.warmupS, 1));
      const durationS = scenario.fixedS ?? opts.fixedS;
      const fixedRun = () =>
        loadgen(
          loadCfg(target, scenario.path, certs, {
            mode: 'fixed',
            rate,
            connections: opts.fixedConnections,
            warmupS,
            durationS,
            ...(scenario.patchPaths ? { patchPaths: scenario.patchPaths } : {}),
            ...scenario.load,
          }),
        );
      progress(`      fixed rate: ${rate}/s, ${warmupS}s warm-up + ${durationS}s ...`);
      result.fixed = await fixedRun();
      // The generator's own lateness (its send lag, measured per request) is in every latency it reports. When
      // it was late, the window says more about the generator than about the server: measure it once more
      // and keep the window in which the generator was on time more often (both are kept in the JSON).
      const late = result.fixed.sendLagMs.p99 > RETRY_LATE_GENERATOR_MS && scenario.remeasureWhenLate !== false;
      if (late && remeasureSecondsLeft < warmupS + durationS)
        progress(
          ` generator late (send lag p99 ${result.fixed.sendLagMs.p99} ms), not measured again (the run's time) ...`,
        );
      else if (late) {
        remeasureSecondsLeft -= warmupS + durationS;
        progress(` generator late (send lag p99 ${result.fixed.sendLagMs.p99} ms), once more ...`);
        const again = await fixedRun();
        result.fixedRuns = [result.fixed, again];
        if (again.sendLagMs.p99 < result.fixed.sendLagMs.p99) result.fixed = again;
      }
      progress(` p50 ${result.fixed.latencyMs.p50} ms, p99 ${result.fixed.latencyMs.p99} ms\n`);
    }
    result.peakRssMiB = round(readProc(target.pid, clockTicks).hwmMiB, 1);
    if (target.opsUrl) result.memory = memoryFromMetrics(await metricsText(target.opsUrl));
    if (scenario.after) Object.assign(result, await scenario.after(target));
  } finally {
    const reported = await target.stop();
    if (result && reported) result.servers = reported;
  }
  return result;
}

async function waitForBreakerOpen(target, provider, ca) {
  const deadline = Date.now() + 30_000;
  for (let n = 100; Date.now() < deadline; n++) {
    const state = metricValue(await metricsText(target.opsUrl), 'admission_gateway_breaker_state', { provider });
    if (state === 2) return;
    await reviewOnce(target.port, ca, MUTATE_PATH, n); // Ignore: allowed after the provider's 1 s timeout
  }
  throw new Error(`breaker of provider ${provider} did not open within 30 s`);
}

/** The mutate plan a gateway runs, from `/chain`: its order line and each mutate step's level. */
async function mutatePlan(opsUrl) {
  const chain = await (await fetch(`${opsUrl}/chain`)).json();
  return {
    order: chain.order,
    levels: Object.fromEntries((chain.mutate ?? []).map((step) => [step.name, step.level])),
    ...(chain.problems ? { problems: chain.problems } : {}),
  };
}

const median = (values) => {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

/**
 * What the gateway's own review lines say of a run (every review of it, warm-up included): the review's time,
 * its steps' times summed and the slowest step's (medians), and the levels the steps' reports name. Steps
 * that overlap sum to more than the review took (`overlap`: steps' sum ÷ review, median); one after another,
 * to a little less.
 */
function reviewLineStats(logFile) {
  const reviews = [];
  for (const line of fs.readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('"msg":"review"')) continue;
    try {
      reviews.push(JSON.parse(line));
    } catch {
      // a line cut by the gateway's exit
    }
  }
  const levels = {};
  for (const review of reviews) {
    for (const step of review.steps ?? []) (levels[step.step] ??= new Set()).add(step.level ?? null);
  }
  const sums = reviews.map((r) => (r.steps ?? []).reduce((sum, step) => sum + step.ms, 0));
  return {
    reviews: reviews.length,
    reviewMs: round(median(reviews.map((r) => r.ms)), 3),
    stepsSumMs: round(median(sums), 3),
    slowestStepMs: round(median(reviews.map((r) => Math.max(0, ...(r.steps ?? []).map((step) => step.ms)))), 3),
    overlap: round(median(reviews.map((r, i) => (r.ms > 0 ? sums[i] / r.ms : 0))), 2),
    levels: Object.fromEntries(Object.entries(levels).map(([step, seen]) => [step, [...seen]])),
  };
}

// ------------------------------------------------------------------------------------------- reporting
function table(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i] ?? '–').length)));
  const line = (cells) => cells.map((c, i) => String(c ?? '–')[i === 0 ? 'padEnd' : 'padStart'](widths[i])).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

function check(id, description, value, limit, unit, comparison = '<=') {
  const pass = value === null || value === undefined ? null : comparison === '<=' ? value <= limit : value >= limit;
  return { id, description, value: round(value, 3), limit, unit, comparison, pass };
}

/**
 * The raw server is measured twice (first and last) and once writing its answers as the gateway does (from
 * setImmediate): contention from other processes only ever lowers a run, and the limit is the best a bare
 * Node server can do, so the best of the three is what the gateway scenarios are compared with.
 */
function rawLimit(s) {
  const runs = [s.raw?.closed, s.rawDeferred?.closed, s.rawRepeat?.closed].filter(Boolean);
  if (!runs.length) return { rps: null, cpuUsPerReview: null };
  return {
    rps: Math.max(...runs.map((r) => r.rps)),
    cpuUsPerReview: Math.min(...runs.map((r) => r.procs.server.cpuUsPerReview)),
  };
}

function evaluate(s) {
  const raw = rawLimit(s);
  const ratio = (key) => (s[key]?.closed && raw.rps ? round(s[key].closed.rps / raw.rps, 3) : null);
  const cpuRatio = (key) =>
    s[key]?.closed && raw.cpuUsPerReview
      ? round(raw.cpuUsPerReview / s[key].closed.procs.server.cpuUsPerReview, 3)
      : null;
  const fixed = (key, field) => s[key]?.fixed?.latencyMs?.[field] ?? null;
  const cpuFixed = (key) => s[key]?.fixed?.procs?.server?.cpuUsPerReview ?? null;
  const cpuClosed = (key) => s[key]?.closed?.procs?.server?.cpuUsPerReview ?? null;
  const diff = (a, b) => (a === null || b === null ? null : a - b);
  const per = (v, n) => (v === null ? null : v / n);
  const ratios = {
    emptyChain: ratio('emptyChain'),
    plugins: ratio('plugins'),
    provider: ratio('provider'),
    breakerOpen: ratio('breakerOpen'),
    pluginsValidate: ratio('pluginsValidate'),
    pluginsExtra: ratio('pluginsExtra'),
  };
  // The same comparison by server CPU per review (1/capacity of one core): less sensitive to contention.
  const ratiosCpu = Object.fromEntries(Object.keys(ratios).map((key) => [key, cpuRatio(key)]));
  // POST /authorize against its own raw server (rawAuthorize), by req/s and by CPU per review.
  for (const key of AUTHORIZE_KEYS.filter((k) => s[k])) {
    const base = s[key]?.closed && s[s[key].baseline]?.closed;
    ratios[key] = base ? round(s[key].closed.rps / base.rps, 3) : null;
    ratiosCpu[key] = base
      ? round(base.procs.server.cpuUsPerReview / s[key].closed.procs.server.cpuUsPerReview, 3)
      : null;
  }
  const derived = {
    cpuUsPerExtraPluginClosed: round(per(diff(cpuClosed('pluginsExtra'), cpuClosed('plugins')), opts.extra), 1),
    cpuUsPerExtraPluginFixed: round(per(diff(cpuFixed('pluginsExtra'), cpuFixed('plugins')), opts.extra), 1),
    p99MsPerExtraPlugin: round(per(diff(fixed('pluginsExtra', 'p99'), fixed('plugins', 'p99')), opts.extra), 3),
    providerP50DeltaMs: round(diff(fixed('provider', 'p50'), fixed('emptyChain', 'p50')), 3),
    providerCpuUsPerCallFixed: round(diff(cpuFixed('provider'), cpuFixed('emptyChain')), 1),
    providerCpuUsPerCallClosed: round(diff(cpuClosed('provider'), cpuClosed('emptyChain')), 1),
    breakerOpenP50DeltaMs: round(diff(fixed('breakerOpen', 'p50'), fixed('emptyChain', 'p50')), 3),
    breakerOpenP99DeltaMs: round(diff(fixed('breakerOpen', 'p99'), fixed('emptyChain', 'p99')), 3),
    parallelProvidersSpeedup: (() => {
      const declared = fixed('parallelProviders', 'p50');
      const undeclared = fixed('parallelProvidersUndeclared', 'p50');
      return declared && undeclared !== null ? round(undeclared / declared, 2) : null;
    })(),
  };
  const targets = [
    check('emptyChain', '(b)/(a) closed-loop throughput, 16 connections', ratios.emptyChain, 0.7, 'ratio', '>='),
    check('plugins', '(c)/(a) closed-loop throughput, /mutate, shipped chain', ratios.plugins, 0.45, 'ratio', '>='),
    check(
      'validateVsMutate',
      '(c/validate)/(a) closed-loop throughput, shipped chain, at least (c)/(a)',
      ratios.plugins === null ? null : ratios.pluginsValidate,
      ratios.plugins,
      'ratio',
      '>=',
    ),
    check('provider', '(d)/(a) closed-loop throughput, one healthy provider', ratios.provider, 0.3, 'ratio', '>='),
    check('breakerOpen', '(e)/(a) closed-loop throughput, breaker open', ratios.breakerOpen, 0.6, 'ratio', '>='),
    check(
      'cpuPerExtraPlugin',
      `each further trivial plugin: server CPU per review (closed loop, ${opts.extra} extra)`,
      derived.cpuUsPerExtraPluginClosed,
      25,
      'µs',
    ),
    check('pluginsP50', `(c) p50 at ${opts.rate}/s`, fixed('plugins', 'p50'), 1, 'ms'),
    check('pluginsP99', `(c) p99 at ${opts.rate}/s`, fixed('plugins', 'p99'), 5, 'ms'),
    check(
      'p99PerExtraPlugin',
      `each in-process plugin adds to p99 at ${opts.rate}/s`,
      derived.p99MsPerExtraPlugin,
      0.25,
      'ms',
    ),
    check('providerP50', `(d) − (b) p50 at ${opts.rate}/s`, derived.providerP50DeltaMs, 0.5, 'ms'),
    check('providerCpu', '(d) − (b) gateway CPU per call (fixed rate)', derived.providerCpuUsPerCallFixed, 100, 'µs'),
    check('breakerOpenP50', `(e) − (b) p50 at ${opts.rate}/s`, derived.breakerOpenP50DeltaMs, 0.1, 'ms'),
    check('breakerOpenP99', `(e) − (b) p99 at ${opts.rate}/s`, derived.breakerOpenP99DeltaMs, 1, 'ms'),
    check('peakRss', `(c) peak RSS at ${opts.rssRate}/s (VmHWM)`, s.plugins2000?.peakRssMiB ?? null, 128, 'MiB'),
    ...parallelTargets(s.parallelProviders, s.parallelProvidersUndeclared),
    ...largeTargets(s.large),
    ...celTargets(s.cel),
    ...policyTestsTargets(s.policyTests),
    ...authorizeTargets(s, ratios),
  ];
  return { raw, ratios, ratiosCpu, derived, targets };
}

/**
 * `admission-gateway test` over POLICY_TESTS.cases cases, whole runs: the best within POLICY_TESTS.limitS. A run
 * that did not pass every case fails it whatever its time; so does the same suite with ten CEL validations.
 */
function policyTestsTargets(r) {
  const note = r ? undefined : 'not part of the default run: npm run bench -- --only policyTests';
  const timed = check(
    'policyTests',
    `admission-gateway test: ${POLICY_TESTS.cases} cases over the gateway.yaml chain, whole run (best of ${POLICY_TESTS.runs})`,
    r?.bestS ?? null,
    POLICY_TESTS.limitS,
    's',
  );
  return [
    r?.error
      ? { ...timed, pass: false, note: r.error.split('\n')[0].slice(0, 160) }
      : note
        ? { ...timed, note }
        : timed,
    (() => {
      const cel = check(
        'policyTestsCel',
        `admission-gateway test: the same plus ${POLICY_TESTS.celValidations} CEL validations (the file's policies), whole run`,
        r?.cel?.bestS ?? null,
        POLICY_TESTS.limitS,
        's',
      );
      if (r?.cel?.error) return { ...cel, pass: false, note: r.cel.error.split('\n')[0].slice(0, 160) };
      return note ? { ...cel, note } : cel;
    })(),
  ];
}

/** The POST /authorize scenarios compared with the raw SubjectAccessReview server. */
const AUTHORIZE_KEYS = ['authorize', 'authorizeNoMatch', 'authorizeDenied'];

/**
 * POST /authorize, one matching plugin: closed-loop throughput against the raw SubjectAccessReview server, and
 * p99 at AUTHORIZE.rate. Not run by default (`--only authorize`): n/a then, saying so.
 */
function authorizeTargets(s, ratios) {
  const note = s.authorize ? undefined : 'not part of the default run: npm run bench -- --only authorize';
  const noted = (t) => (note ? { ...t, note } : t);
  return [
    noted(
      check(
        'authorize',
        '(authorize)/(a/authorize) closed-loop throughput, POST /authorize, one matching plugin (access-guard)',
        ratios.authorize,
        AUTHORIZE.ratio,
        'ratio',
        '>=',
      ),
    ),
    noted(
      check(
        'authorizeP99',
        `(authorize) p99 at ${AUTHORIZE.rate}/s, one matching plugin`,
        s.authorize?.fixed?.latencyMs?.p99 ?? null,
        AUTHORIZE.p99Ms,
        'ms',
      ),
    ),
  ];
}

/**
 * (f) and (f′). An answer without the three labels is an error; an error, or a plan that did not put the
 * declared providers in one level (or the undeclared ones in one each), fails the target whatever its figure.
 */
function parallelTargets(declared, undeclared) {
  const what = `${PARALLEL.providers} ${PARALLEL.delayMs} ms providers`;
  const failure = (r, oneLevel) => {
    if (!r) return undefined;
    if (r.error) return r.error.split('\n')[0].slice(0, 160);
    if (r.fixed?.errors) return `${r.fixed.errors} errors: ${r.fixed.firstError}`.slice(0, 160);
    const levels = Object.values(r.plan?.levels ?? {});
    const expected = levels.map((_, i) => (oneLevel ? 0 : i));
    if (levels.join() !== expected.join())
      return `the plan was ${r.plan?.order ?? '?'}, expected ${oneLevel ? 'one level' : 'one step a level'}`;
    return undefined;
  };
  const failed = (t, note) => (note ? { ...t, pass: false, note } : t);
  // The mutate phase's own time, as the gateway's review lines give it (decoded review to answer): what the
  // declarations change. The client's p50 (TLS, the generator's lateness) is in the fixed-rate table.
  const p50 = (r) => r?.reviewLines?.reviewMs ?? null;
  const out = [];
  if (declared) {
    out.push(
      failed(
        check(
          'parallelProviders',
          `(f) ${what} with disjoint supplies: mutate phase p50 at ${PARALLEL.rate}/s (review lines)`,
          p50(declared),
          25,
          'ms',
        ),
        failure(declared, true),
      ),
    );
  }
  if (undeclared) {
    // One after another the delays add up; above the sum, each call's own cost (a few ms on a busy core).
    const serial = PARALLEL.providers * PARALLEL.delayMs;
    const [low, high] = [serial - 5, serial + 15];
    const value = p50(undeclared);
    out.push(
      failed(
        {
          ...check(
            'parallelProvidersUndeclared',
            `(f′) the same without declarations: mutate phase p50 at ${PARALLEL.rate}/s (review lines)`,
            value,
            high,
            'ms',
          ),
          comparison: 'within',
          limit: [low, high],
          pass: value === null ? null : value >= low && value <= high,
        },
        failure(undeclared, false),
      ),
    );
  }
  return out;
}

/**
 * The `large` scenario's targets. A wrong answer, an error or a killed gateway fails a target whatever its
 * figure (`note` says why); a part that did not run at all leaves it n/a.
 */
function largeTargets(large) {
  if (!large) return [];
  const failed = (t, note) => (note ? { ...t, pass: false, note } : t);
  const { pod, meanwhile, memory, footprint, saturation } = large;
  const podFailure = pod?.error ?? pod?.failures?.[0] ?? large.error;
  const ordinaryErrors =
    meanwhile?.error ??
    (meanwhile?.errors ? `${meanwhile.errors} errors: ${meanwhile.firstError}` : undefined) ??
    large.error;
  const memoryError = memory?.error ?? large.error;
  const memoryFailure = memoryError
    ? memoryError.split('\n')[0]
    : memory?.killed
      ? `${memory.oomKilled ? 'OOM-killed' : 'died'} (${memory.exit.signal ?? `exit ${memory.exit.code}`}, oom_kill ${memory.oomKills ?? '?'})`
      : memory && !memory.answeringAfter
        ? 'did not answer an ordinary review afterwards'
        : undefined;
  const footprintFailure = (f) =>
    (f?.error ?? large.error)?.split('\n')[0] ??
    (f && !f.ok ? `${f.errors} errors in its ordinary reviews` : undefined);
  const limitMiB = large.memoryLimitBytes ? round(large.memoryLimitBytes / 1048576, 1) : null;
  const requestMiB = large.memoryRequestBytes ? round(large.memoryRequestBytes / 1048576, 1) : null;
  const steady = footprint?.cluster?.steadyMiB ?? null;
  // The request is the steady state it was set from: within 10 % of it either way, run-to-run noise included.
  const requestRange = steady === null ? null : [round(steady * 0.9, 1), round(steady * 1.1, 1)];
  return [
    failed(
      check(
        'idleRss',
        `large: idle RSS of serve without a cluster, a fresh gateway (${footprint?.standalone?.method ?? 'not measured'})`,
        footprint?.standalone?.idleMiB ?? null,
        100,
        'MiB',
      ),
      footprintFailure(footprint?.standalone),
    ),
    failed(
      {
        ...check(
          'memoryRequest',
          `large: manifests/deployment.yaml requests.memory (${requestMiB} MiB) against the steady RSS measured in cluster mode`,
          steady,
          requestMiB,
          'MiB',
        ),
        comparison: 'request within 10 % of',
        limit: requestMiB,
        pass:
          steady === null || requestMiB === null
            ? null
            : requestMiB >= requestRange[0] && requestMiB <= requestRange[1],
      },
      footprintFailure(footprint?.cluster),
    ),
    failed(
      check(
        'cgroupCpu',
        `large: an ordinary review's gateway CPU at saturation in the Deployment's cgroup, over outside one ` +
          `(${saturation?.method ?? 'not measured'})`,
        saturation?.ratio ?? null,
        1.3,
        'ratio',
      ),
      (saturation?.error ?? large.error)?.split('\n')[0] ??
        (saturation && !saturation.ok ? 'a gateway exited during its windows' : undefined),
    ),
    failed(
      check(
        'largePod',
        `large: ${LARGE.podContainers}-container Pod on /mutate, median answer time`,
        pod?.medianMs ?? null,
        300,
        'ms',
      ),
      podFailure && `failed: ${podFailure.slice(0, 160)}`,
    ),
    failed(
      check(
        'largeMeanwhile',
        `large: ordinary reviews at ${LARGE.ordinaryRate}/s while large ones are sent, p99`,
        meanwhile?.latencyMs?.p99 ?? null,
        50,
        'ms',
      ),
      ordinaryErrors?.slice(0, 160),
    ),
    failed(
      check(
        'largeMemory',
        `large: ${LARGE.concurrent} concurrent 6.7 MiB reviews, peak memory within ${LARGE.peakShare * 100} % of the ` +
          `${limitMiB} MiB limit, not killed (${memory?.method ?? 'not measured'})`,
        memory?.peakMiB ?? null,
        limitMiB === null ? null : round(LARGE.peakShare * limitMiB, 1),
        'MiB',
      ),
      memoryFailure,
    ),
  ];
}

/** A table with its title; nothing when it has no rows (`--only large` runs no closed-loop or fixed-rate scenario). */
function printTable(title, header, rows) {
  if (!rows.length) return;
  console.log(title);
  console.log(table(header, rows));
}

function printReport(results) {
  const s = results.scenarios;
  const raw = rawLimit(s);
  // Each row against its baseline: the better raw AdmissionReview run, or (POST /authorize) rawAuthorize.
  const baseOf = (r) => {
    const b = r.baseline ? s[r.baseline]?.closed : undefined;
    return b ? { rps: b.rps, cpuUsPerReview: b.procs.server.cpuUsPerReview } : r.baseline ? {} : raw;
  };
  const closedRows = Object.entries(s)
    .filter(([, r]) => r.closed)
    .map(([key, r]) => [key, r, baseOf(r)])
    .map(([key, r, base]) => [
      key,
      r.closed.rps,
      r.closed.latencyMs.p50,
      r.closed.latencyMs.p99,
      r.closed.latencyMs.max,
      r.peakRssMiB,
      r.closed.procs.server.cpuUsPerReview,
      r.closed.procs.server.cpuPct,
      r.closed.procs.server.runQueueWaitPct,
      r.closed.procs.loadgen.cpuPct,
      r.closed.errors,
      base.rps ? (r.closed.rps / base.rps).toFixed(3) : null,
      base.cpuUsPerReview ? (base.cpuUsPerReview / r.closed.procs.server.cpuUsPerReview).toFixed(3) : null,
    ]);
  const sarBase = s.rawAuthorize?.closed?.rps;
  printTable(
    `\nClosed loop: ${opts.connections} keep-alive connections, the better of two ${opts.closedS / 2} s windows per scenario (latency in ms); ` +
      `"vs raw" = req/s ÷ ${raw.rps ?? '–'} (the better raw run)` +
      (sarBase ? `, for rawAuthorize and authorize* ÷ ${sarBase} (rawAuthorize)` : '') +
      ', "vs raw CPU" = raw CPU/review ÷ this CPU/review',
    [
      'scenario',
      'req/s',
      'p50',
      'p99',
      'max',
      'peakRSS MiB',
      'CPU µs/rev',
      'srv CPU%',
      'srv wait%',
      'gen CPU%',
      'errors',
      'vs raw',
      'vs raw CPU',
    ],
    closedRows,
  );
  const fixedRows = Object.entries(s)
    .filter(([, r]) => r.fixed)
    .map(([key, r]) => [
      key,
      r.fixed.targetRate,
      r.fixed.achievedRate,
      r.fixed.latencyMs.p50,
      r.fixed.latencyMs.p99,
      r.fixed.latencyMs.p999,
      r.fixed.latencyMs.max,
      r.fixed.sendLagMs.p99,
      r.fixed.procs.server.cpuUsPerReview,
      r.fixed.procs.server.runQueueWaitPct,
      r.fixed.maxInflight,
      r.fixed.errors,
    ]);
  printTable(
    `\nFixed rate: latency from the scheduled send time, ${opts.fixedS} s per scenario (ms)`,
    [
      'scenario',
      'rate',
      'achieved',
      'p50',
      'p99',
      'p99.9',
      'max',
      'send lag p99',
      'CPU µs/rev',
      'srv wait%',
      'max inflight',
      'errors',
    ],
    fixedRows,
  );
  const parallelRows = ['parallelProviders', 'parallelProvidersUndeclared']
    .filter((key) => s[key]?.reviewLines)
    .map((key) => {
      const { plan, reviewLines: r, servers } = s[key];
      const peers = Object.values(servers ?? {});
      return [
        key,
        plan.order,
        r.reviews,
        r.reviewMs,
        r.stepsSumMs,
        r.slowestStepMs,
        r.overlap,
        peers.map((p) => `${p.sawOtherLabels ?? '?'}/${p.served ?? '?'}`).join(' '),
      ];
    });
  printTable(
    `\n${PARALLEL.providers} providers answering in ${PARALLEL.delayMs} ms: the gateway's own review lines (medians, ms); ` +
      '"overlap" = steps\' time summed ÷ review time; "saw another\'s label" = calls whose object already had one (per provider)',
    ['scenario', 'plan', 'reviews', 'review', 'steps summed', 'slowest step', 'overlap', "saw another's label"],
    parallelRows,
  );
  if (s.cel?.validations) {
    const { validations: v, cutOff: c, limits } = s.cel;
    console.log(
      `\nCEL (server/cel in one process; cost limits ${limits.perExpression} per expression, ${limits.perReview} per review)`,
    );
    console.log(
      `  ten validations: ${v.cpuUsPerReview} µs CPU per review (best of ${v.cpuUsPerReviewWindows.join(', ')}; ` +
        `making the values ${v.activationCpuUs} µs); cost per rule ${v.costPerRule.join(' ')}`,
    );
    console.log(
      `  40,000-container quadratic walk: ${c.outcome}; ${c.runsMs.join(', ')} ms (median CPU ${c.medianCpuMs} ms)`,
    );
    console.log(
      `  a mutating policy (a JSONPatch label, an ApplyConfiguration sidecar): ${s.cel.mutations.cpuUsPerReview} µs CPU ` +
        `per review (best of ${s.cel.mutations.cpuUsPerReviewWindows.join(', ')}; no target)`,
    );
    const f = s.cel.failingWalk;
    console.log(
      `  40,000-container quadratic walk failing on every pair: ${f.outcome}; median ${f.medianMs} ms; five in one ` +
        `review ${f.reviewOfFiveMedianMs} ms (the fifth: ${f.reviewOfFiveLast}; review time ${limits.reviewMs} ms)`,
    );
  }
  if (s.policyTests) {
    console.log('\nPolicy tests (admission-gateway test, pinned to the server core)');
    for (const line of policyTestsReport(s.policyTests)) console.log(line);
  }
  if (s.large) {
    console.log(`\nLarge reviews (gateway.yaml chain; answer times measured by the client, one connection)`);
    for (const line of largeReport(s.large)) console.log(line);
  }
  console.log('\nTargets');
  for (const t of results.targets) {
    if (t.id === 'soak') {
      console.log(`  n/a   ${t.description}`);
      continue;
    }
    const verdict = t.pass === null ? 'n/a ' : t.pass ? 'PASS' : 'FAIL';
    const limit = Array.isArray(t.limit) ? t.limit.join('–') : t.limit;
    console.log(
      `  ${verdict}  ${t.description}: ${t.value ?? '–'} ${t.unit} (${t.comparison} ${limit})${t.note ? ` — ${t.note}` : ''}`,
    );
  }
  if (raw.rps !== null || sarBase) {
    console.log(`\nratios vs raw (req/s): ${JSON.stringify(results.ratios)}`);
    console.log(`ratios vs raw (CPU per review): ${JSON.stringify(results.ratiosCpu)}`);
  }
  if (results.peakRssMiB !== null)
    console.log(`peak RSS (max over the ordinary-review gateway processes): ${results.peakRssMiB} MiB`);
  for (const c of results.caveats) console.log(`caveat: ${c}`);
}

function caveats(results) {
  const out = [];
  const runs = Object.entries(results.scenarios).flatMap(([key, r]) =>
    [r.closed, r.fixed].filter(Boolean).map((run) => ({ key, run })),
  );
  const busiest = Math.max(...runs.map(({ run }) => run.procs.server.runQueueWaitPct));
  if (busiest > 3) {
    out.push(
      `the server core was shared with other processes (up to ${busiest}% of wall time runnable but waiting); ` +
        `load average ${results.machine.loadavgBefore.join(' ')} before, ${results.machine.loadavgAfter.join(' ')} after — rerun on an idle machine for stable figures`,
    );
  }
  const saturated = runs.filter(({ run }) => run.mode === 'closed' && run.procs.loadgen.cpuPct > 90);
  if (saturated.length) {
    out.push(
      `the load generator used > 90% of its core in: ${saturated.map((r) => r.key).join(', ')} — those req/s are lower bounds`,
    );
  }
  const lagging = runs.filter(({ run }) => run.mode === 'fixed' && run.sendLagMs.p99 > LATE_GENERATOR_MS);
  if (lagging.length) {
    out.push(
      `the fixed-rate generator sent late (send lag p99 > 0.5 ms) in: ${lagging.map((r) => r.key).join(', ')}; that lag is included in their latency`,
    );
  }
  const overloaded = runs.filter(({ run }) => run.mode === 'fixed' && run.achievedRate < 0.95 * run.targetRate);
  if (overloaded.length) {
    out.push(
      `the server could not keep up with the fixed rate in: ${overloaded.map(({ key, run }) => `${key} (${run.achievedRate}/${run.targetRate}/s)`).join(', ')}; ` +
        'requests queued in the load generator and their latency counts that wait',
    );
  }
  const errors = runs.filter(({ run }) => run.errors > 0);
  if (errors.length)
    out.push(`errors in: ${errors.map(({ key, run }) => `${key} (${run.errors}: ${run.firstError})`).join('; ')}`);
  // A send lag with requests queued for a free connection is the gateway's doing (all 64 were waiting for it);
  // without, the generator itself was late (it shares its core with the sender of the large reviews).
  const meanwhile = results.scenarios.large?.meanwhile;
  if (meanwhile?.sendLagMs?.p99 > LATE_GENERATOR_MS && meanwhile.maxQueued === 0) {
    out.push(
      `large: the generator of the ordinary reviews sent late (send lag p99 ${meanwhile.sendLagMs.p99} ms); ` +
        'that lag is included in their latency',
    );
  }
  const memory = results.scenarios.large?.memory;
  if (memory?.noCgroup)
    out.push(`large: no memory cgroup could be made, so the memory limit was not enforced: ${memory.noCgroup}`);
  return out;
}

function writeResults(name, results) {
  fs.mkdirSync(RESULTS, { recursive: true });
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const text = `${JSON.stringify(results, null, 2)}\n`;
  fs.writeFileSync(path.join(RESULTS, `${name}.json`), text);
  fs.writeFileSync(path.join(RESULTS, `${name}-${stamp}.json`), text);
  return path.relative(ROOT, path.join(RESULTS, `${name}.json`));
}

function machine(before) {
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? '',
    node: process.version,
    serverCore: opts.serverCore,
    clientCore: opts.clientCore,
    loadavgBefore: before,
    loadavgAfter: loadavg(),
  };
}

// ------------------------------------------------------------------------------------------ scenarios
function scenarios(shipped, certs) {
  const shippedChain = shipped.chain ?? [];
  const extraChain = [
    ...shippedChain,
    ...Array.from({ length: opts.extra }, (_, i) => ({
      plugin: 'default-labels',
      name: `extra-${i + 1}`,
      settings: { labels: { [`x${i + 1}`]: '1' } },
    })),
  ];
  const gateway = (key, chain) => () => startGateway(key, gatewayConfig(shipped, certs, chain));
  /** The authorize scenarios' chain: one plugin with an authorize hook, and nothing else. */
  const accessGuardChain = [{ plugin: 'access-guard' }];
  const provider = (name, port, extra) => ({
    provider: name,
    url: `https://127.0.0.1:${port}/admit`,
    phases: ['mutate'],
    caBundle: certs.caBundle,
    ...extra,
  });
  /**
   * Starts the peers ({ name, mode, args }: bench/servers.mjs on the client core, as remote providers), then
   * the gateway of `key` with the chain `chainFor(ports by peer name)`.
   */
  const withPeers = (peers, key, chainFor, gatewayOptions) => async () => {
    const started = [];
    try {
      for (const { name, mode, args } of peers) {
        started.push({ name, server: await startEchoServer(`${key}-${name}`, mode, opts.clientCore, certs, args) });
      }
      const ports = Object.fromEntries(started.map(({ name, server }) => [name, server.port]));
      const gw = await startGateway(key, gatewayConfig(shipped, certs, chainFor(ports)), gatewayOptions);
      return {
        ...gw,
        peerPids: Object.fromEntries(started.map(({ name, server }) => [name, server.pid])),
        async stop() {
          await gw.stop();
          return Object.fromEntries(
            await Promise.all(started.map(async ({ name, server }) => [name, await server.stop()])),
          );
        },
      };
    } catch (err) {
      await Promise.all(started.map(({ server }) => server.stop()));
      throw err;
    }
  };
  const parallelLabels = Array.from({ length: PARALLEL.providers }, (_, i) => `bench-p${i + 1}`);
  /** (f) and (f′): the same chain of label providers, each entry declaring its label (or not). */
  const parallel = (key, declared, extra) => ({
    key,
    path: MUTATE_PATH,
    closed: false,
    comparedWithRaw: false,
    rate: PARALLEL.rate,
    warmupS: PARALLEL.warmupS,
    fixedS: PARALLEL.fixedS,
    patchPaths: parallelLabels.map((label) => `/metadata/labels/${label}`),
    // The providers' timers share the generator's core, so it is always a few ms late; the targets read the
    // gateway's own review lines, which its lateness does not touch.
    remeasureWhenLate: false,
    start: withPeers(
      parallelLabels.map((label, i) => ({ name: `p${i + 1}`, mode: 'label', args: [label, String(PARALLEL.delayMs)] })),
      key,
      (ports) =>
        parallelLabels.map((label, i) =>
          provider(`p${i + 1}`, ports[`p${i + 1}`], {
            timeoutSeconds: 2,
            failurePolicy: 'Fail',
            ...(declared ? { supplies: [`/metadata/labels/${label}`] } : {}),
          }),
        ),
      { keepLog: true },
    ),
    async after(t) {
      return { plan: await mutatePlan(t.opsUrl), reviewLines: reviewLineStats(t.logFile) };
    },
    ...extra,
  });
  /** A gateway with the access-guard chain on POST /authorize, read against rawAuthorize; `--only authorize`. */
  const authorizeScenario = (key, extra) => ({
    key,
    path: AUTHORIZE_PATH,
    rate: AUTHORIZE.rate,
    optIn: true,
    baseline: 'rawAuthorize',
    comparedWithRaw: false,
    start: gateway(key, accessGuardChain),
    ...extra,
  });
  const ca = fs.readFileSync(certs.caCertFile);
  return [
    {
      key: 'raw',
      label: '(a) raw node:https server: parse the review, answer allowed with its uid',
      path: MUTATE_PATH,
      // Its fixed-rate latency is the floor, printed for reference: no target reads it, so a late generator's
      // window is not measured again.
      remeasureWhenLate: false,
      start: () => startEchoServer('raw', 'allow', opts.serverCore, certs),
    },
    {
      key: 'emptyChain',
      label: '(b) gateway, empty chain, /mutate',
      path: MUTATE_PATH,
      start: gateway('emptyChain', []),
    },
    {
      key: 'plugins',
      label: `(c) gateway, gateway.yaml chain (${shippedChain.length} plugins), /mutate`,
      path: MUTATE_PATH,
      start: gateway('plugins', shippedChain),
    },
    {
      key: 'pluginsValidate',
      label: '(c/validate) gateway, gateway.yaml chain, /validate (information)',
      path: VALIDATE_PATH,
      remeasureWhenLate: false,
      start: gateway('pluginsValidate', shippedChain),
    },
    {
      key: 'pluginsExtra',
      label: `(c+${opts.extra}) gateway.yaml chain + ${opts.extra} extra default-labels steps, /mutate`,
      path: MUTATE_PATH,
      start: gateway('pluginsExtra', extraChain),
    },
    {
      key: 'provider',
      label: '(d) gateway, one healthy remote provider on loopback, /mutate',
      path: MUTATE_PATH,
      start: withPeers([{ name: 'healthy', mode: 'allow' }], 'provider', ({ healthy }) => [
        provider('healthy', healthy, { timeoutSeconds: 2, failurePolicy: 'Fail' }),
      ]),
      async after(t) {
        const calls = metricValue(await metricsText(t.opsUrl), 'admission_gateway_step_calls_total', {
          step: 'healthy',
        });
        return { providerCalls: calls };
      },
    },
    {
      key: 'breakerOpen',
      label: '(e) gateway, hanging provider with its breaker open (failurePolicy Ignore), /mutate',
      path: MUTATE_PATH,
      start: withPeers([{ name: 'hanging', mode: 'hang' }], 'breakerOpen', ({ hanging }) => [
        provider('hanging', hanging, {
          timeoutSeconds: 1,
          failurePolicy: 'Ignore',
          circuitBreaker: { volumeThreshold: 1, errorThresholdPercentage: 1, resetTimeoutSeconds: 600 },
        }),
      ]),
      prime: (t) => waitForBreakerOpen(t, 'hanging', ca),
      async after(t) {
        const state = metricValue(await metricsText(t.opsUrl), 'admission_gateway_breaker_state', {
          provider: 'hanging',
        });
        if (state !== 2) throw new Error(`the breaker of "hanging" left the open state (${state}) during the run`);
        return { breakerStateAfter: state };
      },
    },
    parallel('parallelProviders', true, {
      label: `(f) gateway, ${PARALLEL.providers} remote providers answering in ${PARALLEL.delayMs} ms, disjoint supplies declared, /mutate at ${PARALLEL.rate}/s`,
    }),
    parallel('parallelProvidersUndeclared', false, {
      label: `(f′) the same ${PARALLEL.providers} providers without declarations (one after another), /mutate at ${PARALLEL.rate}/s`,
      // Runs with parallelProviders (`--only parallelProviders`): (f) is read against it.
      partOf: 'parallelProviders',
    }),
    {
      key: 'plugins2000',
      label: `(c@${opts.rssRate}) gateway.yaml chain at ${opts.rssRate}/s, fresh process: peak RSS`,
      path: MUTATE_PATH,
      closed: false,
      rate: opts.rssRate,
      // Its target is the peak RSS, which a late generator does not lower.
      remeasureWhenLate: false,
      start: gateway('plugins2000', shippedChain),
    },
    {
      key: 'rawDeferred',
      label: "(a') the raw server writing its answers from setImmediate, as the gateway does, closed loop only",
      path: MUTATE_PATH,
      fixed: false,
      start: () => startEchoServer('raw-deferred', 'allow-deferred', opts.serverCore, certs),
    },
    {
      key: 'rawRepeat',
      label: '(a) the raw server again, closed loop only (the ratios use the better raw run)',
      path: MUTATE_PATH,
      fixed: false,
      start: () => startEchoServer('raw-repeat', 'allow', opts.serverCore, certs),
    },
    // POST /authorize: only with --only authorize (`optIn`); the raw SubjectAccessReview server first, as the
    // baseline of the three, which are compared with it (`baseline`), not with the AdmissionReview raw server.
    {
      key: 'rawAuthorize',
      label: '(a/authorize) raw node:https server: parse the SubjectAccessReview, answer no opinion, closed loop only',
      path: AUTHORIZE_PATH,
      fixed: false,
      optIn: true,
      partOf: 'authorize',
      baseline: 'rawAuthorize',
      comparedWithRaw: false,
      load: { review: SAR_GET_SECRET, answer: 'sarNoOpinion' },
      start: () => startEchoServer('raw-authorize', 'sar', opts.serverCore, certs),
    },
    authorizeScenario('authorize', {
      label: `(authorize) gateway, chain [access-guard], /authorize: get secrets, matched, no opinion; ${AUTHORIZE.rate}/s`,
      load: { review: SAR_GET_SECRET, answer: 'sarNoOpinion' },
    }),
    authorizeScenario('authorizeNoMatch', {
      label: `(authorize, information) the same chain, get configmaps: no step matches (the fast path); ${AUTHORIZE.rate}/s`,
      partOf: 'authorize',
      load: { review: SAR_GET_CONFIGMAP, answer: 'sarNoOpinion' },
    }),
    authorizeScenario('authorizeDenied', {
      label: `(authorize, information) the same chain, list secrets in all namespaces: denied (a log line each); ${AUTHORIZE.rate}/s`,
      partOf: 'authorize',
      load: { review: SAR_LIST_ALL_SECRETS, answer: 'sarDenied' },
    }),
    {
      // In one process pinned to the server core, no HTTP: what server/cel adds to a review (bench/cel.mjs).
      key: 'cel',
      label:
        'CEL: ten restricted Pod Security validations on an ordinary Pod (CPU per review); a quadratic walk of the ' +
        '40,000-container Pod refused with cost_exceeded',
      comparedWithRaw: false,
      run: (label) => runCel(label),
    },
    {
      // Only with --only policyTests: the default run is at its run-time target already.
      key: 'policyTests',
      label: `admission-gateway test: ${POLICY_TESTS.cases} policy test cases over the gateway.yaml chain, ${POLICY_TESTS.runs} whole runs`,
      comparedWithRaw: false,
      optIn: true,
      run: (label) =>
        runPolicyTests({ label, dir: tmp, configFile: path.join(ROOT, 'gateway.yaml'), run: runCommand, progress }),
    },
    {
      // Last: its 6.7 MiB reviews and the page cache they leave must not disturb the ratio scenarios.
      key: 'large',
      label:
        `gateway.yaml chain: a ${LARGE.podContainers}-container Pod, 3 MiB ConfigMaps, ordinary reviews at ` +
        `${LARGE.ordinaryRate}/s meanwhile, ${LARGE.concurrent} × 6.7 MiB at once under the Deployment's memory limit`,
      path: MUTATE_PATH,
      comparedWithRaw: false,
      run: (label) =>
        runLarge({
          label,
          chain: shippedChain,
          gatewayConfig: (chain, extra) => gatewayConfig(shipped, certs, chain, extra),
          startGateway,
          startKubeStandIn: () => startKubeStandIn(tmp),
          loadgen,
          loadCfg: (target, reqPath, extra) => loadCfg(target, reqPath, certs, extra),
          ordinaryReview: (port) => reviewOnce(port, ca, MUTATE_PATH, 1),
          fixture: JSON.parse(fs.readFileSync(FIXTURE, 'utf8')),
          mutatePath: MUTATE_PATH,
          validatePath: VALIDATE_PATH,
          ca,
          memoryLimitBytes: deploymentMemory('limits'),
          memoryRequestBytes: deploymentMemory('requests'),
          maxRequestBytes: shipped.server?.maxRequestBytes ?? 7340032,
          fixedConnections: opts.fixedConnections,
          closedConnections: opts.connections,
          clockTicks,
          progress,
        }),
    },
  ];
}

// ---------------------------------------------------------------------------------------------- cel
/** Runs bench/cel.mjs pinned to the server core; resolves with what it measured (its last line, JSON). */
async function runCel(label) {
  const child = startChild('cel', 'taskset', pinned(opts.serverCore, [path.join(BENCH, 'cel.mjs')]), {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const [code] = await once(child, 'exit');
  const lines = out.trimEnd().split('\n');
  if (code !== 0) throw new Error(`bench/cel.mjs exited ${code}: ${err.trim().split('\n').slice(-3).join(' ')}`);
  for (const line of lines.slice(0, -1)) progress(`    ${line.trim()}\n`);
  return { label, ...JSON.parse(lines[lines.length - 1]) };
}

/** The `cel` scenario's targets (bench/cel.mjs CEL_TARGETS); a walk not refused with cost_exceeded fails. */
function celTargets(c) {
  if (!c) return [];
  const failed = (t, note) => (note ? { ...t, pass: false, note } : t);
  return [
    failed(
      check(
        'celValidations',
        'cel: ten restricted Pod Security validations, CPU per review (values made, budget, ten evaluations)',
        c.validations?.cpuUsPerReview ?? null,
        CEL_TARGETS.validationsCpuUs,
        'µs',
      ),
      c.error,
    ),
    failed(
      check(
        'celCutOff',
        'cel: a quadratic walk of the 40,000-container Pod refused with cost_exceeded, median wall time',
        c.cutOff?.medianMs ?? null,
        CEL_TARGETS.cutOffMs,
        'ms',
      ),
      c.error ?? (c.cutOff && !c.cutOff.refused ? `not refused: ${c.cutOff.outcome}` : undefined),
    ),
    failed(
      check(
        'celReviewStall',
        'cel: a review of five quadratic walks failing on every pair of 40,000 containers, refused when its time is up (median)',
        c.failingWalk?.reviewOfFiveMedianMs ?? null,
        CEL_TARGETS.reviewStallMs,
        'ms',
      ),
      c.error ?? (c.failingWalk && !c.failingWalk.refused ? `not refused: ${c.failingWalk.outcome}` : undefined),
    ),
  ];
}

// ---------------------------------------------------------------------------------------------- main
async function defaultRun(shipped, certs) {
  const all = scenarios(shipped, certs);
  // raw and rawDeferred run with any scenario compared with them (the ratios need them), so not with `large`
  // alone; rawRepeat only in the full run or when asked for.
  const named = argv.only ? argv.only.split(',').map((k) => k.trim()) : null;
  // A scenario that is part of another (its comparison) runs with it.
  const asked = named?.flatMap((k) => [k, ...all.filter((s) => s.partOf === k).map((s) => s.key)]);
  const needRaw = asked?.some((k) => all.find((s) => s.key === k)?.comparedWithRaw !== false);
  const only = asked ? new Set([...(needRaw ? ['raw', 'rawDeferred'] : []), ...asked]) : null;
  // Opt-in scenarios (POST /authorize) run only when named: the default run is at its run-time target.
  const selected = all.filter((s) => (only ? only.has(s.key) : !s.optIn) && (s.fixed !== false || opts.closedS > 0));
  const unknown = only ? [...only].filter((k) => !all.some((s) => s.key === k)) : [];
  if (unknown.length)
    throw new Error(`--only: unknown scenario(s) ${unknown.join(', ')}; known: ${all.map((s) => s.key).join(', ')}`);
  const before = loadavg();
  const results = { kind: 'admission-gateway-bench', version: 1, startedAt: startedAt.toISOString() };
  const scenarioResults = {};
  /** Where the run time goes, so that the run-time target can be watched scenario by scenario. */
  const scenarioSeconds = {};
  let i = 0;
  for (const scenario of selected) {
    const began = Date.now();
    if (scenario.run) {
      progress(`[${++i}/${selected.length}] ${scenario.key.padEnd(15)} ${scenario.label}\n`);
      // Its parts record their own failures; anything else fails its targets, not the rest of the run.
      scenarioResults[scenario.key] = await scenario.run(scenario.label).catch((err) => {
        progress(`      failed: ${err instanceof Error ? err.message : String(err)}\n`);
        return { label: scenario.label, error: err instanceof Error ? err.message : String(err) };
      });
    } else scenarioResults[scenario.key] = await runScenario(++i, selected.length, scenario, certs);
    scenarioSeconds[scenario.key] = round((Date.now() - began) / 1000, 1);
  }
  const { raw, ratios, ratiosCpu, derived, targets } = evaluate(scenarioResults);
  // The ordinary-review gateways only: `large` reports its own memory (scenarios.large.memory).
  const gatewayRss = Object.entries(scenarioResults)
    .filter(([key]) => !key.startsWith('raw') && key !== 'large' && key !== 'cel' && key !== 'policyTests')
    .map(([, r]) => r.peakRssMiB);
  const wallSeconds = round((Date.now() - startedAt.getTime()) / 1000, 1);
  targets.push(check('runTime', '`npm run bench` run time (this run, build included)', wallSeconds, 300, 's'));
  Object.assign(results, {
    finishedAt: new Date().toISOString(),
    wallSeconds,
    machine: machine(before),
    options: opts,
    reviewBytes: requestBuilder(FIXTURE, { host: 'x', path: MUTATE_PATH }).bodyBytes,
    raw,
    ratios,
    ratiosCpu,
    peakRssMiB: gatewayRss.length ? Math.max(...gatewayRss) : null,
    peakRssMiBAtRssRate: scenarioResults.plugins2000?.peakRssMiB ?? null,
    derived,
    targets,
    scenarioSeconds,
    scenarios: scenarioResults,
  });
  results.caveats = caveats(results);
  results.targets.push({
    id: 'soak',
    description: 'RSS flat over a 5-minute soak at 2,000/s: not part of the default run (npm run bench -- --soak 300)',
    value: null,
    pass: null,
  });
  printReport(results);
  const inScenarios = Object.values(scenarioSeconds).reduce((a, b) => a + b, 0);
  console.log(
    `\nrun time by scenario (s): ${Object.entries(scenarioSeconds)
      .map(([key, seconds]) => `${key} ${seconds}`)
      .join(', ')}; before them (build, certificates) and after ${round(wallSeconds - inScenarios, 1)}`,
  );
  console.log(`wrote ${writeResults('latest', results)} (and a timestamped copy) in ${wallSeconds} s`);
}

/** Least-squares slope of RSS (MiB/s) over the samples. */
function slope(samples) {
  const n = samples.length;
  if (n < 2) return 0;
  const mt = samples.reduce((a, s) => a + s.t, 0) / n;
  const mr = samples.reduce((a, s) => a + s.rssMiB, 0) / n;
  const num = samples.reduce((a, s) => a + (s.t - mt) * (s.rssMiB - mr), 0);
  const den = samples.reduce((a, s) => a + (s.t - mt) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

async function soakRun(shipped, certs) {
  const before = loadavg();
  progress(`soak: gateway.yaml chain on /mutate at ${opts.soakRate}/s for ${opts.soakS} s, RSS every 5 s\n`);
  const gw = await startGateway('soak', gatewayConfig(shipped, certs, shipped.chain ?? []));
  let run;
  try {
    await reviewOnce(gw.port, fs.readFileSync(certs.caCertFile), MUTATE_PATH, 1);
    run = await loadgen(
      loadCfg(gw, MUTATE_PATH, certs, {
        mode: 'fixed',
        rate: opts.soakRate,
        connections: opts.fixedConnections,
        warmupS: Math.max(opts.warmupS, 1),
        durationS: opts.soakS,
        rssEveryS: 5,
      }),
    );
    run.peakRssMiB = round(readProc(gw.pid, clockTicks).hwmMiB, 1);
  } finally {
    await gw.stop();
  }
  const samples = run.samples;
  const rss = samples.map((s) => s.rssMiB);
  // Trend after the first fifth (heap growth to its working size is expected there, not a leak).
  const settled = samples.filter((s) => s.t >= opts.soakS / 5);
  const growthMiB = round(slope(settled) * opts.soakS, 1);
  const allowance = Math.max(4, 0.05 * (settled[0]?.rssMiB ?? 0));
  const soak = {
    rate: opts.soakRate,
    seconds: opts.soakS,
    minRssMiB: Math.min(...rss),
    maxRssMiB: Math.max(...rss),
    lastRssMiB: rss[rss.length - 1],
    peakRssMiB: run.peakRssMiB,
    trendGrowthMiB: growthMiB,
    flat: growthMiB <= allowance,
    samples: samples.map((s) => ({ t: s.t, rssMiB: s.rssMiB })),
    flatCriterion: `least-squares RSS trend after the first ${opts.soakS / 5} s projects ≤ ${round(allowance, 1)} MiB growth over the soak`,
  };
  const results = {
    kind: 'admission-gateway-bench-soak',
    version: 1,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    machine: machine(before),
    options: opts,
    peakRssMiB: run.peakRssMiB,
    soak,
    targets: [
      check('peakRss', `peak RSS at ${opts.soakRate}/s`, run.peakRssMiB, 128, 'MiB'),
      { ...check('soakFlat', 'RSS flat over the soak', soak.flat ? 1 : 0, 1, '', '>='), value: soak.flat },
    ],
    run,
  };
  console.log(
    `\nsoak: RSS min ${soak.minRssMiB} / max ${soak.maxRssMiB} / last ${soak.lastRssMiB} MiB, peak (VmHWM) ${soak.peakRssMiB} MiB, ` +
      `trend ${growthMiB} MiB over ${opts.soakS} s → ${soak.flat ? 'flat' : 'GROWING'}`,
  );
  console.log(
    `      latency at ${opts.soakRate}/s: p50 ${run.latencyMs.p50} ms, p99 ${run.latencyMs.p99} ms, max ${run.latencyMs.max} ms, ` +
      `achieved ${run.achievedRate}/s, errors ${run.errors}`,
  );
  for (const t of results.targets) console.log(`  ${t.pass ? 'PASS' : 'FAIL'}  ${t.description}: ${t.value} ${t.unit}`);
  console.log(`\nwrote ${writeResults('soak', results)} (and a timestamped copy)`);
}

try {
  build();
  pinSelf();
  const shipped = YAML.parse(fs.readFileSync(path.join(ROOT, 'gateway.yaml'), 'utf8')) ?? {};
  const certs = await makeCertificates();
  progress(
    `admission-gateway bench: servers on core ${opts.serverCore}, load generator on core ${opts.clientCore}; ` +
      `review ${requestBuilder(FIXTURE, { host: 'x', path: MUTATE_PATH }).bodyBytes} bytes ` +
      `(SubjectAccessReview ${fixedRequestBuilder(SAR_GET_SECRET, { host: 'x', path: AUTHORIZE_PATH }).bodyBytes}); ` +
      `load average ${loadavg().join(' ')}\n`,
  );
  if (opts.soakS > 0) await soakRun(shipped, certs);
  else await defaultRun(shipped, certs);
} catch (err) {
  if (!interrupted) console.error(`\nbench: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
} finally {
  await Promise.all([...children.values()].map(({ child }) => stopChild(child, 2000)));
  for (const t of timers) clearInterval(t);
}
