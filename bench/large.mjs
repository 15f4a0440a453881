// The `large` scenario of `npm run bench`: reviews far from the 2 KB Pod every other scenario sends — a Pod
// with 40,000 containers (~1.6 MB, one patch operation per container), ConfigMaps of 3 and 6.7 MiB — and what
// they do to the gateway with the shipped chain:
//   0. what the gateway holds without them: idle, and steady after ordinary reviews, without a cluster and in
//      cluster mode (against kube-stand-in.mjs), each in a fresh gateway under the Deployment's memory limit;
//   1. how long one 40k-container Pod takes on /mutate (and that its answer is the expected patch);
//   2. how long a 3 MiB ConfigMap takes on /mutate and /validate;
//   3. what ordinary reviews at a fixed rate wait meanwhile, while the large ones are sent back to back;
//   4. how much memory 20 concurrent 6.7 MiB reviews take, in a fresh gateway inside a memory cgroup with the
//      Deployment's limit (memcg.mjs), and whether the gateway survives them.
// A gateway that cannot cope fails the scenario's targets; it must not stop the bench, so every part records
// its error and the next part runs. run.mjs passes in how to start gateways and load generators, so its
// tracking of child processes (stopped on every exit path) applies here too.
/* global setTimeout, clearTimeout, setInterval, clearInterval, Buffer, structuredClone */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection, answeredAllowed, readProc, reviewRequestBuilder, uidFor } from './lib.mjs';
import { createMemoryCgroup } from './memcg.mjs';

const MiB = 1048576;
export const LARGE = {
  podContainers: 40_000,
  configMapKeys: 48, // × 64 KiB = 3 MiB of data
  valueBytes: 65_536,
  /** Each of the 20 concurrent reviews: just under the shipped 7 MiB `server.maxRequestBytes`. */
  memoryReviewBytes: 6.7 * MiB,
  concurrent: 20,
  waves: 3,
  ordinaryRate: 500,
  ordinaryS: 8,
  /** Sequential sends per large review: at least min, at most max, no more started after budgetMs. */
  sends: { min: 2, max: 5, budgetMs: 10_000 },
  /**
   * Past this a large answer counts as lost and the part moves on. The apiserver gives up sooner (the webhook's
   * timeoutSeconds, 10 s); the bench waits longer, to show how long the gateway really takes.
   */
  answerTimeoutMs: 30_000,
  /** A wave of concurrent reviews that has not finished by then is abandoned, and so are the waves after it. */
  waveTimeoutMs: 20_000,
  /**
   * Part 0: how long a fresh gateway rests before its idle RSS is read, and the ordinary reviews (at ordinaryRate,
   * after a second of warm-up) before its steady RSS is read, after the same rest.
   */
  footprint: { restMs: 2000, loadS: 4 },
  /**
   * Part 0: the shipped chain's ordinary reviews as fast as they are answered (closed loop), on a gateway in the
   * Deployment's cgroup and one outside any, in alternate windows of this many seconds (after warmupS each, and
   * firstWarmupS for a fresh gateway's first: its code is not optimised yet).
   */
  saturation: { rounds: 3, firstWarmupS: 2, warmupS: 0.5, windowS: 2 },
  /**
   * Parts 1–3 time large reviews, so they must be admitted: the 40,000-container Pod weighs more than the default
   * budget leaves under the Deployment's limit (it is answered 413 there), so those parts set this budget.
   */
  partsInflightBytes: 112 * MiB,
  /** The share of the memory limit the peak of part 4 must stay within. */
  peakShare: 0.8,
};

const round = (v, digits = 1) => (v === null || v === undefined ? null : Math.round(v * 10 ** digits) / 10 ** digits);

/** The median of `xs` (the mean of the two middle values of an even count); null for none. */
export const median = (xs) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// ------------------------------------------------------------------------------------------------ reviews
/** The fixture's Pod review with `spec.containers` replaced by `count` small containers. */
export function podReview(base, count) {
  const review = structuredClone(base);
  review.request.object.spec.containers = Array.from({ length: count }, (_, i) => ({
    name: `c${i}`,
    image: 'nginx:1.25.3',
  }));
  return review;
}

/**
 * A config-file-like value of exactly `bytes` characters: 64-character lines, so the JSON has escapes to decode
 * (`\n`), as real configuration data does.
 */
function configText(key, bytes) {
  const lines = [];
  for (let i = 0, size = 0; size < bytes; i++, size += 64) lines.push(`${key}.setting-${i} = `.padEnd(63, 'x'));
  return lines.join('\n').padEnd(bytes, '\n').slice(0, bytes);
}

/** A ConfigMap CREATE review (same namespace and user as the fixture) whose data holds `keys` values. */
export function configMapReview(base, name, keys, valueBytes) {
  const { request } = base;
  const kind = { group: '', version: 'v1', kind: 'ConfigMap' };
  const resource = { group: '', version: 'v1', resource: 'configmaps' };
  const data = {};
  for (let k = 0; k < keys; k++) data[`file-${k}.conf`] = configText(`file-${k}`, valueBytes);
  return {
    apiVersion: base.apiVersion,
    kind: base.kind,
    request: {
      ...request,
      kind,
      resource,
      requestKind: kind,
      requestResource: resource,
      name,
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: request.namespace, creationTimestamp: null, labels: { app: name } },
        data,
      },
    },
  };
}

// ------------------------------------------------------------------------------------------------ sending
/** One review on `conn`; resolves (never rejects) with { ms, status, body, error }. */
function send(conn, buf, timeoutMs = LARGE.answerTimeoutMs) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const timer = setTimeout(() => conn.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    conn.send(buf, (err, status, body) => {
      clearTimeout(timer);
      const ms = performance.now() - t0;
      resolve(err ? { ms, status: 0, body: null, error: err.message } : { ms, status, body, error: null });
    });
  });
}

/** The answer's AdmissionReview response, decoded and checked: { ok, why, patchOps }. */
function inspect(answer, uid, { decodePatch = false } = {}) {
  if (answer.error) return { ok: false, why: answer.error };
  if (answer.status !== 200)
    return { ok: false, why: `HTTP ${answer.status}: ${answer.body?.toString('utf8', 0, 200)}` };
  if (!decodePatch) {
    return answeredAllowed(answer.status, answer.body, uid)
      ? { ok: true }
      : { ok: false, why: `not allowed: ${answer.body.toString('utf8', 0, 300)}` };
  }
  const response = JSON.parse(answer.body.toString('utf8')).response ?? {};
  if (response.uid !== uid || response.allowed !== true)
    return { ok: false, why: `not allowed or wrong uid: ${JSON.stringify(response).slice(0, 300)}` };
  const patch = response.patch ? JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) : [];
  return { ok: true, patchOps: patch.length };
}

/**
 * Sends one kind of large review sequentially on one connection (each after the previous answer), from min to
 * max times within the time budget; the first answer is decoded in full when `decodePatch`. `proc()` reads the
 * gateway's /proc figures around each send: its CPU time per review, and how long it waited for its core (on
 * a shared machine the answer times move with other tenants' load; the CPU time much less).
 */
async function sequential(conn, builder, uidBase, proc, { decodePatch = false, minPatchOps = 0 } = {}) {
  const times = [];
  const cpu = [];
  let waitUs = 0;
  let elapsedMs = 0;
  const failures = [];
  let patchOps = null;
  let answerBytes = null;
  const t0 = performance.now();
  let sends = 0;
  for (let i = 0; i < LARGE.sends.max; i++) {
    if (i >= LARGE.sends.min && performance.now() - t0 > LARGE.sends.budgetMs) break;
    sends++;
    const uid = uidFor(uidBase + i);
    const before = proc();
    const answer = await send(conn, builder.build(uid));
    const after = proc();
    cpu.push((after.cpuUs - before.cpuUs) / 1000);
    waitUs += after.runDelayUs - before.runDelayUs;
    elapsedMs += answer.ms;
    const checked = inspect(answer, uid, { decodePatch: decodePatch && i === 0 });
    if (i === 0 && checked.ok && decodePatch) {
      patchOps = checked.patchOps;
      if (patchOps < minPatchOps)
        failures.push(`the patch has ${patchOps} operations, expected at least ${minPatchOps}`);
    }
    answerBytes ??= answer.body?.length ?? null;
    if (checked.ok) times.push(answer.ms);
    else failures.push(checked.why);
    if (answer.error?.startsWith('no answer within')) break; // the next would wait as long
  }
  return {
    bodyBytes: builder.bodyBytes,
    answerBytes,
    sends,
    timesMs: times.map((t) => round(t)),
    medianMs: round(median(times)),
    maxMs: times.length ? round(Math.max(...times)) : null,
    gatewayCpuMs: round(median(cpu)),
    gatewayWaitPct: elapsedMs > 0 ? round(waitUs / 10 / elapsedMs, 1) : null,
    ...(decodePatch ? { patchOps } : {}),
    ok: failures.length === 0 && times.length > 0,
    failures,
  };
}

// -------------------------------------------------------------------------------------------------- parts
/**
 * The scenario. env: { chain, gatewayConfig(chain, extra), startGateway(name, config, { cgroupProcs }), loadgen(cfg),
 * startKubeStandIn() (resolves with { kubeconfigFile, close() }),
 * loadCfg(target, path, extra), ordinaryReview(port) (rejects unless allowed), fixture (parsed),
 * mutatePath, validatePath, ca, memoryLimitBytes, maxRequestBytes, fixedConnections, closedConnections, clockTicks,
 * progress }.
 */
export async function runLarge(env) {
  const { progress } = env;
  const reviews = {
    pod: podReview(env.fixture, LARGE.podContainers),
    configMap: configMapReview(env.fixture, 'large-3mib', LARGE.configMapKeys, LARGE.valueBytes),
    memory: memoryReview(env.fixture, env.maxRequestBytes),
  };
  const result = {
    label: env.label,
    memoryLimitBytes: env.memoryLimitBytes,
    memoryRequestBytes: env.memoryRequestBytes,
    settings: LARGE,
  };
  result.footprint = {
    standalone: await part(progress, '      0. without a cluster: idle, then steady', async () => {
      const r = await footprint(env, 'standalone', env.gatewayConfig(env.chain));
      return [r, footprintLine(r)];
    }),
    cluster: await part(progress, '      0. in cluster mode (a stand-in apiserver): idle, then steady', async () => {
      const standIn = await env.startKubeStandIn();
      try {
        const kube = { enabled: true, kubeconfig: standIn.kubeconfigFile, watchProviders: true };
        const r = await footprint(env, 'cluster', env.gatewayConfig(env.chain, { kube }));
        return [r, footprintLine(r)];
      } finally {
        await standIn.close();
      }
    }),
  };
  result.saturation = await part(
    progress,
    '      0. ordinary reviews as fast as answered, in the cgroup and outside one',
    async () => {
      const r = await saturation(env);
      return [r, saturationLine(r)];
    },
  );
  try {
    await withGateway(env, reviews, result);
  } catch (err) {
    // The gateway did not start or answer an ordinary review: parts 1–3 have nothing to measure.
    const error = err instanceof Error ? err.message : String(err);
    progress(`      gateway for parts 1–3 failed: ${error.split('\n')[0]}\n`);
    for (const key of ['pod', 'configMap', 'meanwhile']) result[key] ??= { ok: false, error };
  }
  result.memory = await part(
    progress,
    `      4. ${LARGE.concurrent} × ${mib(reviews.memory.bodyBytes)} at once, ${LARGE.waves} waves`,
    async () => {
      const r = await memoryUnderLoad(env, reviews.memory);
      return [r, `${r.method}: ${memorySummary(r)}`];
    },
  );
  return result;
}

/**
 * The memory limit of parts 1–3: the Deployment's, raised by as much as their budget is raised over the default one
 * (measured in part 0), as an operator who admits reviews this large must raise the pod's. Under the Deployment's
 * own limit the raised budget does not fit: the kernel reclaims memory through the large reviews, and can kill the
 * gateway (bench/README.md, "Where a large Pod's time goes").
 */
function partsLimitBytes(env, result) {
  const defaultMiB = result.footprint?.standalone?.maxInflightMiB;
  const raised = typeof defaultMiB === 'number' ? Math.max(0, LARGE.partsInflightBytes - defaultMiB * MiB) : 0;
  return Math.round(env.memoryLimitBytes + raised);
}

/** Parts 1–3, on one gateway with the shipped chain, in a memory cgroup as part 4 is (partsLimitBytes). */
async function withGateway(env, reviews, result) {
  const { progress } = env;
  const limitBytes = partsLimitBytes(env, result);
  const cgroup = createMemoryCgroup('large-parts', limitBytes);
  const config = env.gatewayConfig(env.chain, { server: { maxInflightBytes: LARGE.partsInflightBytes } });
  const gw = await env.startGateway('large', config, { cgroupProcs: cgroup.procsFile });
  try {
    await env.ordinaryReview(gw.port);
    const target = (path) => ({ host: `127.0.0.1:${gw.port}`, path });
    const builders = {
      pod: reviewRequestBuilder(reviews.pod, target(env.mutatePath)),
      cmMutate: reviewRequestBuilder(reviews.configMap, target(env.mutatePath)),
      cmValidate: reviewRequestBuilder(reviews.configMap, target(env.validatePath)),
    };
    const proc = () => readProc(gw.pid, env.clockTicks);
    const conn = new Connection({ host: '127.0.0.1', port: gw.port, ca: env.ca });
    try {
      await conn.connect();
      result.pod = await part(progress, `      1. ${LARGE.podContainers}-container Pod`, async () => {
        const r = await sequential(conn, builders.pod, 1_000_000, proc, {
          decodePatch: true,
          minPatchOps: LARGE.podContainers,
        });
        return [r, `${mb(r.bodyBytes)} → ${r.patchOps ?? '?'} patch ops, ${times(r)}`];
      });
      result.configMap = await part(progress, '      2. 3 MiB ConfigMap', async () => {
        const mutate = await sequential(conn, builders.cmMutate, 2_000_000, proc);
        const validate = await sequential(conn, builders.cmValidate, 3_000_000, proc);
        const r = { bodyBytes: builders.cmMutate.bodyBytes, mutate, validate, ok: mutate.ok && validate.ok };
        return [r, `${mb(r.bodyBytes)}: /mutate ${times(mutate)}; /validate ${times(validate)}`];
      });
    } finally {
      conn.close();
    }
    result.meanwhile = await part(
      progress,
      `      3. ordinary reviews at ${LARGE.ordinaryRate}/s while large ones are sent back to back`,
      async () => {
        const r = await meanwhile(env, gw, [builders.pod, builders.cmMutate, builders.cmValidate]);
        return [
          r,
          `p50 ${r.latencyMs.p50} / p99 ${r.latencyMs.p99} / max ${r.latencyMs.max} ms, ${r.errors} errors, ` +
            `${r.large.answered} large answered`,
        ];
      },
    );
    if (!gw.exitStatus()) result.peakRssMiB = round(readProc(gw.pid, env.clockTicks).hwmMiB);
    result.partsLimit = limitMethod(cgroup, limitBytes);
    result.partsKilled = gw.exitStatus() !== null;
  } finally {
    await gw.stop();
    if (cgroup.kind) await cgroup.remove();
  }
}

/**
 * Part 0: a fresh gateway with `config` in a memory cgroup with the Deployment's limit (none when none can be
 * made here): its RSS after a rest (idle), then after ordinary reviews at a fixed rate and the same rest
 * (steady), and the baseline and budget it measured at start (its log line).
 */
async function footprint(env, name, config) {
  const cgroup = createMemoryCgroup(`footprint-${name}`, env.memoryLimitBytes);
  const gw = await env.startGateway(`footprint-${name}`, config, { cgroupProcs: cgroup.procsFile });
  try {
    const rss = () => round(readProc(gw.pid, env.clockTicks).rssMiB);
    await sleep(LARGE.footprint.restMs);
    const idleMiB = rss();
    const run = await env.loadgen(
      env.loadCfg(gw, env.mutatePath, {
        mode: 'fixed',
        rate: LARGE.ordinaryRate,
        connections: env.fixedConnections,
        warmupS: 1,
        durationS: LARGE.footprint.loadS,
      }),
    );
    await sleep(LARGE.footprint.restMs);
    const bounded = gw.startupLines().find((l) => l.msg === 'review memory and connections bounded') ?? {};
    return {
      method: limitMethod(cgroup, env.memoryLimitBytes),
      idleMiB,
      steadyMiB: rss(),
      peakMiB: round(readProc(gw.pid, env.clockTicks).hwmMiB),
      baselineMiB: bounded.baseline === undefined ? null : round(bounded.baseline / MiB),
      maxInflightMiB: bounded.maxInflightBytes === undefined ? null : round(bounded.maxInflightBytes / MiB),
      reviews: run.requests ?? null,
      // In the Deployment's cgroup, where V8 sizes the heap from its limit: compare with the scenarios' fixed rate.
      cpuUsPerReview: run.procs?.server?.cpuUsPerReview ?? null,
      errors: run.errors,
      ok: run.errors === 0 && !gw.exitStatus(),
    };
  } finally {
    await gw.stop();
    if (cgroup.kind) await cgroup.remove();
  }
}

/**
 * Part 0: what an ordinary review costs a saturated gateway in the Deployment's cgroup, against the same gateway
 * outside any cgroup. Under a memory cgroup Node sizes V8's heap from the limit, and with it the young
 * generation every review's garbage goes through: the throughput scenarios, run outside a cgroup, would not show
 * what that costs a pod. The two run in alternate windows, so that the machine's drift falls on both.
 */
async function saturation(env) {
  const { rounds, firstWarmupS, warmupS, windowS } = LARGE.saturation;
  const cgroup = createMemoryCgroup('saturation', env.memoryLimitBytes);
  const gateways = {};
  try {
    const config = env.gatewayConfig(env.chain);
    gateways.pod = await env.startGateway('saturation-pod', config, { cgroupProcs: cgroup.procsFile });
    gateways.host = await env.startGateway('saturation-host', config);
    const windows = { pod: [], host: [] };
    for (let i = 0; i < rounds; i++) {
      for (const side of ['pod', 'host']) {
        const run = await env.loadgen(
          env.loadCfg(gateways[side], env.mutatePath, {
            mode: 'closed',
            connections: env.closedConnections,
            warmupS: i === 0 ? firstWarmupS : warmupS,
            durationS: windowS,
          }),
        );
        if (run.errors) throw new Error(`${run.errors} errors in a window on saturation-${side}`);
        windows[side].push({ cpuUsPerReview: run.procs?.server?.cpuUsPerReview ?? null, rps: round(run.rps, 0) });
      }
    }
    const cpu = (side) => median(windows[side].map((w) => w.cpuUsPerReview).filter((v) => v !== null));
    const pod = cpu('pod');
    const host = cpu('host');
    return {
      method: limitMethod(cgroup, env.memoryLimitBytes),
      connections: env.closedConnections,
      podCpuUsPerReview: round(pod),
      hostCpuUsPerReview: round(host),
      ratio: pod && host ? round(pod / host, 2) : null,
      windows,
      ok: Boolean(cgroup.kind && pod && host) && !gateways.pod.exitStatus() && !gateways.host.exitStatus(),
      ...(cgroup.kind ? {} : { error: `no memory cgroup: ${cgroup.why}` }),
    };
  } finally {
    for (const gw of Object.values(gateways)) await gw.stop();
    if (cgroup.kind) await cgroup.remove();
  }
}

const saturationLine = (r) =>
  `${r.podCpuUsPerReview} µs of gateway CPU a review in the cgroup against ${r.hostCpuUsPerReview} µs outside ` +
  `(× ${r.ratio}; medians of ${r.windows.pod.length} windows, ${r.connections} connections; ` +
  `${r.windows.pod.map((w) => w.rps).join('/')} against ${r.windows.host.map((w) => w.rps).join('/')} reviews/s) (${r.method})`;

const footprintLine = (r) =>
  `idle ${r.idleMiB} MiB, steady ${r.steadyMiB} MiB after ordinary reviews at ${LARGE.ordinaryRate}/s ` +
  `(peak ${r.peakMiB}; ${r.cpuUsPerReview} µs of gateway CPU a review; ${r.errors} errors); measured baseline ${r.baselineMiB} MiB → maxInflightBytes ` +
  `${r.maxInflightMiB} MiB (${r.method})`;

/** One part: prints its line, and records an error instead of throwing it, so that the next part runs. */
async function part(progress, title, fn) {
  progress(`${title} ...`);
  try {
    const [r, line] = await fn();
    progress(` ${line}\n`);
    return r;
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    progress(` failed: ${error.split('\n')[0]}\n`);
    return { ok: false, error };
  }
}

/** How a part's gateway was held to `limitBytes`, as its line and the JSON say (`without`: when it was not). */
const limitMethod = (cgroup, limitBytes, without = 'no memory cgroup') =>
  cgroup.kind ? `${cgroup.kind}, limit ${mib(limitBytes)}` : without;
const mb = (bytes) => `${round(bytes / 1e6, 2)} MB`;
const mib = (bytes) => `${round(bytes / MiB, 2)} MiB`;
const times = (r) =>
  `${r.timesMs.length ? `median ${r.medianMs} / max ${r.maxMs} ms of ${r.timesMs.length}` : 'no answer'}` +
  `; gateway CPU ${r.gatewayCpuMs} ms per review, waited for its core ${r.gatewayWaitPct}%` +
  `${r.failures.length ? ` (${r.failures.length} failed: ${r.failures[0].slice(0, 120)})` : ''}`;

/** A ConfigMap review of just under `memoryReviewBytes` (and so under the body limit). */
function memoryReview(fixture, maxRequestBytes) {
  const bytes = (keys) =>
    reviewRequestBuilder(configMapReview(fixture, 'large-mem', keys, LARGE.valueBytes), { host: 'x', path: '/' })
      .bodyBytes;
  const overhead = bytes(0);
  const keys = Math.floor((LARGE.memoryReviewBytes - overhead) / (bytes(1) - overhead));
  const review = configMapReview(fixture, 'large-mem', keys, LARGE.valueBytes);
  const bodyBytes = bytes(keys);
  if (bodyBytes > maxRequestBytes)
    throw new Error(
      `the memory part's review (${bodyBytes} bytes) is over server.maxRequestBytes (${maxRequestBytes})`,
    );
  return { review, keys, bodyBytes };
}

/**
 * Part 3: the ordinary Pod review at a fixed rate (loadgen.mjs, latency from each scheduled send) on /mutate,
 * while this process sends the large reviews back to back on one more connection during its schedule.
 */
async function meanwhile(env, gw, builders) {
  const conn = new Connection({ host: '127.0.0.1', port: gw.port, ca: env.ca });
  await conn.connect();
  const warmupS = 1;
  let running = true;
  const large = [];
  // Large reviews are sent back to back from the generator's first scheduled send (its warm-up included, so that
  // they are under way when its measured window opens) until its schedule ends: after that it only waits for
  // the answers still due, and further large reviews would only hold those up (and the bench with them).
  let sender = Promise.resolve();
  const onStart = (scheduleStart) => {
    const begin = scheduleStart - performance.timeOrigin;
    const end = begin + (warmupS + LARGE.ordinaryS) * 1000;
    sender = (async () => {
      await sleep(Math.max(0, begin - performance.now()));
      for (let i = 0; running && performance.now() < end; i++) {
        const uid = uidFor(4_000_000 + i);
        const answer = await send(conn, builders[i % builders.length].build(uid));
        if (!running) break; // cut off below: not an answer
        const checked = inspect(answer, uid);
        large.push({ ms: round(answer.ms), ok: checked.ok, ...(checked.ok ? {} : { why: checked.why }) });
        if (answer.error) await sleep(100); // not a tight reconnect loop against a gateway that is gone
      }
    })();
  };
  let run;
  try {
    run = await env.loadgen(
      env.loadCfg(gw, env.mutatePath, {
        mode: 'fixed',
        rate: LARGE.ordinaryRate,
        connections: env.fixedConnections,
        warmupS,
        durationS: LARGE.ordinaryS,
      }),
      { onStart },
    );
  } finally {
    running = false;
    conn.abort(); // a large review still unanswered once the ordinary ones are all in: not waited for
    await sender;
  }
  const done = large.filter((l) => l.ok);
  return {
    ...run,
    ok: run.errors === 0,
    large: {
      answered: done.length,
      failed: large.length - done.length,
      medianMs: round(median(done.map((l) => l.ms))),
      maxMs: done.length ? Math.max(...done.map((l) => l.ms)) : null,
      sends: large,
    },
  };
}

/**
 * Part 4: a fresh gateway in a memory cgroup with the Deployment's limit (peak RSS only when no cgroup can be
 * made here); waves of `concurrent` reviews, each on its own connection, all sent at once; then one ordinary
 * review, which must still be answered.
 */
async function memoryUnderLoad(env, memory) {
  const cgroup = createMemoryCgroup('large', env.memoryLimitBytes);
  const result = {
    method: limitMethod(cgroup, env.memoryLimitBytes, 'no memory cgroup: VmHWM only'),
    cgroup: cgroup.dir ?? null,
    ...(cgroup.kind ? {} : { noCgroup: cgroup.why }),
    bodyBytes: memory.bodyBytes,
    keys: memory.keys,
    waves: [],
  };
  let gw;
  let sampler;
  try {
    gw = await env.startGateway('largeMemory', env.gatewayConfig(env.chain), { cgroupProcs: cgroup.procsFile });
    result.startMiB = round(readProc(gw.pid, env.clockTicks).rssMiB);
    // VmHWM dies with the process; sampled here so that the last value before an OOM kill is kept.
    let hwm = 0;
    let currentPeak = 0;
    const sample = () => {
      try {
        hwm = Math.max(hwm, readProc(gw.pid, env.clockTicks).hwmMiB);
      } catch {
        // gone
      }
      if (cgroup.kind) currentPeak = Math.max(currentPeak, cgroup.stats().usageBytes ?? 0);
    };
    sampler = setInterval(sample, 50);
    const builder = reviewRequestBuilder(memory.review, { host: `127.0.0.1:${gw.port}`, path: env.mutatePath });
    for (let w = 0; w < LARGE.waves; w++) {
      const wave = await concurrentWave(env, gw, builder, 5_000_000 + w * 1000);
      result.waves.push(wave);
      // Connections reset by a killed gateway are seen before its exit: give that a moment to arrive.
      if (wave.answers.some((a) => a.outcome === 'no answer')) await sleep(200);
      if (wave.timedOut || gw.exitStatus()) break;
    }
    await sleep(200); // an OOM kill at the end of the last wave: let its exit be seen
    sample();
    clearInterval(sampler);
    result.vmHwmMiB = round(hwm);
    const exit = gw.exitStatus();
    const stats = cgroup.kind ? cgroup.stats() : null;
    result.cgroupStats = stats;
    result.cgroupPeakMiB = stats ? round(Math.max(stats.peakBytes ?? 0, currentPeak) / MiB) : null;
    // The larger of the two: the cgroup is not charged for the pages of the node binary and libraries, which
    // other processes read first (a pod's cgroup would be), and VmHWM does not count the page cache (the log).
    result.peakMiB = round(Math.max(result.cgroupPeakMiB ?? 0, hwm));
    result.oomKills = stats?.oomKills ?? null;
    result.exit = exit;
    result.killed = exit !== null;
    result.oomKilled = exit !== null && (exit.signal === 'SIGKILL' || (stats?.oomKills ?? 0) > 0);
    if (exit) result.stderr = gw.stderrTail();
    result.answeringAfter = await env.ordinaryReview(gw.port).then(
      () => true,
      () => false,
    );
    result.statuses = tally(result.waves.flatMap((w) => w.answers));
    result.ok =
      !result.killed && result.answeringAfter && result.peakMiB <= (LARGE.peakShare * env.memoryLimitBytes) / MiB;
    return result;
  } finally {
    if (sampler) clearInterval(sampler);
    if (gw) await gw.stop();
    if (cgroup.kind) await cgroup.remove();
  }
}

/**
 * One wave: `concurrent` connections, opened first (TLS handshakes), then one review written on each at once, so
 * that all of them are in the gateway together (the worst case for its memory); waits for every answer.
 */
async function concurrentWave(env, gw, builder, uidBase) {
  const conns = Array.from(
    { length: LARGE.concurrent },
    () => new Connection({ host: '127.0.0.1', port: gw.port, ca: env.ca }),
  );
  const connected = await Promise.all(
    conns.map((c) =>
      c.connect().then(
        () => null,
        (err) => err.message,
      ),
    ),
  );
  const requests = conns.map((_, i) => builder.build(uidFor(uidBase + i)));
  const t0 = performance.now();
  const answers = await Promise.all(
    conns.map(async (conn, i) => {
      if (connected[i] !== null) return { outcome: 'no answer', why: `connect: ${connected[i]}`, ms: 0 };
      const answer = await send(conn, requests[i], LARGE.waveTimeoutMs);
      const ms = round(performance.now() - t0);
      if (answer.error) return { outcome: 'no answer', why: answer.error, ms };
      if (answer.status === 200)
        return answeredAllowed(200, answer.body, uidFor(uidBase + i))
          ? { outcome: '200', ms }
          : { outcome: '200 not allowed', ms };
      return { outcome: String(answer.status), ms };
    }),
  ).finally(() => conns.forEach((c) => c.close()));
  const timedOut = answers.some((a) => a.why?.startsWith('no answer within'));
  return { ms: round(performance.now() - t0), timedOut, answers };
}

/** Outcome → count: "200", "429", other statuses, "no answer" (connection refused or reset, timeout). */
function tally(answers) {
  const counts = {};
  for (const a of answers) counts[a.outcome] = (counts[a.outcome] ?? 0) + 1;
  return counts;
}

function memorySummary(r) {
  const fate = r.oomKilled
    ? `OOM-KILLED (${r.exit.signal ?? `exit ${r.exit.code}`}, oom_kill ${r.oomKills ?? '?'})`
    : r.killed
      ? `DIED (${r.exit.signal ?? `exit ${r.exit.code}`})`
      : 'not killed';
  const statuses = Object.entries(r.statuses)
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ');
  return (
    `peak ${r.peakMiB} MiB (${r.cgroupPeakMiB === null ? '' : `cgroup max usage ${r.cgroupPeakMiB}, `}` +
    `VmHWM ${r.vmHwmMiB}; ${r.startMiB} at start), ${fate}; answers ${statuses || 'none'} over ${r.waves.length} ` +
    `wave(s); an ordinary review afterwards: ${r.answeringAfter ? 'answered' : 'NOT answered'}`
  );
}

/** The lines the report prints for the scenario. */
export function largeReport(r) {
  const lines = [];
  const failed = (what, part) => lines.push(`  ${what}: ${part?.error?.split('\n')[0] ?? r.error ?? 'not run'}`);
  const { pod, configMap: cm, meanwhile: m, memory: mem, footprint: fp } = r;
  for (const [what, f] of [
    ['without a cluster', fp?.standalone],
    ['in cluster mode (stand-in apiserver)', fp?.cluster],
  ]) {
    if (f?.idleMiB !== undefined) lines.push(`  a fresh gateway ${what}: ${footprintLine(f)}`);
    else failed(`a fresh gateway ${what}`, f);
  }
  lines.push(
    `  parts 1–3 set server.maxInflightBytes ${mib(LARGE.partsInflightBytes)} (the 40,000-container Pod weighs more ` +
      `than the default leaves under the limit), and raise the memory limit by as much (${r.partsLimit ?? 'not run'})`,
  );
  if (pod?.timesMs) {
    lines.push(
      `  ${LARGE.podContainers}-container Pod on /mutate: ${mb(pod.bodyBytes)} → answer ${mb(pod.answerBytes ?? 0)}, ${pod.patchOps} patch ops`,
    );
    lines.push(`      ${times(pod)}; each ${pod.timesMs.join(', ')} ms`);
  } else failed(`${LARGE.podContainers}-container Pod`, pod);
  if (cm?.mutate) {
    lines.push(`  3 MiB ConfigMap (${mb(cm.bodyBytes)})`);
    lines.push(`      /mutate   ${times(cm.mutate)}`);
    lines.push(`      /validate ${times(cm.validate)}`);
  } else failed('3 MiB ConfigMap', cm);
  if (m?.latencyMs) {
    lines.push(
      `  ordinary reviews at ${m.targetRate}/s on /mutate (achieved ${m.achievedRate}/s) while large ones are sent back to back ` +
        `(${m.large.answered} answered meanwhile, median ${m.large.medianMs} ms)`,
    );
    lines.push(
      `      p50 ${m.latencyMs.p50} / p99 ${m.latencyMs.p99} / max ${m.latencyMs.max} ms from the scheduled send, ${m.errors} errors; ` +
        `send lag p99 ${m.sendLagMs.p99} ms (${m.maxQueued ? `up to ${m.maxQueued} waited for one of its ${m.connections} connections` : 'none waited for a connection'}); ` +
        `gateway waited for its core ${m.procs.server.runQueueWaitPct}%`,
    );
  } else failed('ordinary reviews meanwhile', m);
  if (r.peakRssMiB !== undefined || r.partsKilled)
    lines.push(
      `  peak RSS (VmHWM) of the gateway of the three parts above (${r.partsLimit}): ` +
        (r.partsKilled ? 'KILLED' : `${r.peakRssMiB} MiB, not killed`),
    );
  if (mem?.waves) {
    lines.push(
      `  ${LARGE.concurrent} × ${mib(mem.bodyBytes)} ConfigMap at once on /mutate, in a fresh gateway: ${mem.method}`,
    );
    lines.push(`      ${memorySummary(mem)}`);
    if (mem.stderr) lines.push(`      its stderr: ${mem.stderr.split('\n').slice(-3).join(' | ')}`);
  } else failed(`${LARGE.concurrent} concurrent reviews`, mem);
  return lines;
}
