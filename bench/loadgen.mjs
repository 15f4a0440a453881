// The load generator, run by run.mjs as a child process pinned to the other core than the server.
// usage: node bench/loadgen.mjs '<json config>'   → prints one JSON result line on stdout.
//
// closed: `connections` keep-alive connections, each sending the next review as soon as the previous answer
//         arrives (a closed loop: measures capacity, requests/s).
// fixed:  an open loop at `rate` reviews/s: request i is scheduled at start + i/rate; it goes out on an idle
//         connection (or waits for one), and its latency is measured from the SCHEDULED time, so any queueing
//         — in the server, in the kernel, or here — counts. The send lag (actual − scheduled send time) is
//         reported too, so the generator's own contribution is visible.
// Both: a warm-up (not recorded), then a measured window; the server's CPU time (/proc/<pid>/stat), run-queue
// wait and RSS are read at the window's edges (RSS also every `rssEveryS`).
/* global process, console, setTimeout, setInterval, clearInterval */
import { createHistogram, performance } from 'node:perf_hooks';
import { URL } from 'node:url';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import {
  Connection,
  answerChecks,
  answeredAllowed,
  fixedRequestBuilder,
  patchLacks,
  readProc,
  requestBuilder,
  summarize,
  uidFor,
} from './lib.mjs';

const cfg = JSON.parse(process.argv[2] ?? '{}');
process.on('SIGTERM', () => process.exit(143));
process.on('SIGINT', () => process.exit(130));

// An AdmissionReview fixture with a fresh uid per request, or (cfg.review) one fixed body, e.g. a
// SubjectAccessReview, whose answers cfg.answer names the check of (lib.mjs answerChecks).
const target = { host: `127.0.0.1:${cfg.port}`, path: cfg.path };
const builder = cfg.review ? fixedRequestBuilder(cfg.review, target) : requestBuilder(cfg.fixture, target);
const accepted = cfg.answer ? answerChecks[cfg.answer] : answeredAllowed;
if (!accepted) throw new Error(`loadgen: unknown answer check "${cfg.answer}"`);
const ca = readFileSync(cfg.caFile);
const newHistogram = () => createHistogram({ lowest: 1, highest: 600_000_000, figures: 3 });
const usSince = (t0) => Math.max(1, Math.round((performance.now() - t0) * 1000));

function snapshot() {
  const procs = {};
  for (const [name, pid] of Object.entries(cfg.pids ?? {})) procs[name] = readProc(pid, cfg.clockTicks);
  return { t: performance.now(), self: process.cpuUsage(), procs };
}

/** Per-process figures over a window: CPU µs, CPU % of one core, run-queue wait % (contention). */
function windowStats(before, after, completed) {
  const seconds = (after.t - before.t) / 1000;
  const out = {};
  for (const name of Object.keys(after.procs)) {
    const a = after.procs[name];
    const b = before.procs[name];
    const cpuUs = a.cpuUs - b.cpuUs;
    out[name] = {
      cpuUs,
      cpuPct: Math.round(cpuUs / seconds / 100) / 100,
      cpuUsPerReview: completed > 0 ? Math.round((cpuUs / completed) * 10) / 10 : null,
      runQueueWaitPct: Math.round((a.runDelayUs - b.runDelayUs) / seconds / 100) / 100,
      rssMiB: Math.round(a.rssMiB * 10) / 10,
      hwmMiB: Math.round(a.hwmMiB * 10) / 10,
    };
  }
  const selfUs = after.self.user + after.self.system - (before.self.user + before.self.system);
  out.loadgen = { cpuUs: selfUs, cpuPct: Math.round(selfUs / seconds / 100) / 100 };
  return { seconds, procs: out };
}

function rssSampler(pid, everyS) {
  const samples = [];
  let max = 0;
  const sample = () => {
    try {
      const { rssMiB } = readProc(pid, cfg.clockTicks);
      max = Math.max(max, rssMiB);
      samples.push({ t: Math.round(performance.now()), rssMiB: Math.round(rssMiB * 10) / 10 });
    } catch {
      // the server is gone; the run will report errors
    }
  };
  sample();
  const timer = setInterval(sample, everyS * 1000);
  return {
    stop() {
      clearInterval(timer);
      sample();
      const t0 = samples[0]?.t ?? 0;
      return { maxRssMiB: Math.round(max * 10) / 10, samples: samples.map((s) => ({ ...s, t: (s.t - t0) / 1000 })) };
    },
  };
}

async function openConnections(count) {
  const conns = Array.from({ length: count }, () => new Connection({ host: '127.0.0.1', port: cfg.port, ca }));
  await Promise.all(conns.map((c) => c.connect()));
  return conns;
}

/**
 * Why an answer does not count, or undefined when it does: allowed with its uid (or what `cfg.answer` names),
 * and with `cfg.patchPaths` (pointers every answer's patch must add) a patch adding each of them.
 */
function failureOf(err, status, body, uid) {
  if (err) return `error: ${err.message}`;
  if (!accepted(status, body, uid)) return `HTTP ${status}: ${body ? body.toString('utf8', 0, 300) : ''}`;
  return cfg.patchPaths ? patchLacks(body, cfg.patchPaths) : undefined;
}

async function closedLoop() {
  const conns = await openConnections(cfg.connections);
  const latency = newHistogram();
  let phase = 'warmup';
  let ok = 0;
  let errors = 0;
  let firstError;
  let n = 0;
  let active = conns.length;
  let resolveDone;
  const done = new Promise((resolve) => (resolveDone = resolve));
  const loop = (conn) => {
    if (phase === 'done') {
      if (--active === 0) resolveDone();
      return;
    }
    const uid = uidFor(n++);
    const t0 = performance.now();
    conn.send(builder.build(uid), (err, status, body) => {
      if (phase === 'measure') {
        const failure = failureOf(err, status, body, uid);
        if (failure === undefined) {
          ok++;
          latency.record(usSince(t0));
        } else {
          errors++;
          firstError ??= failure;
        }
      }
      if (err) setTimeout(() => loop(conn), 10);
      else loop(conn);
    });
  };
  conns.forEach(loop);
  await sleep(cfg.warmupS * 1000);
  const rss = rssSampler(cfg.pids.server, cfg.rssEveryS ?? 1);
  const before = snapshot();
  phase = 'measure';
  await sleep(cfg.durationS * 1000);
  const after = snapshot();
  phase = 'done';
  const rssResult = rss.stop();
  await Promise.race([done, sleep(5000)]);
  conns.forEach((c) => c.close());
  const stats = windowStats(before, after, ok);
  return {
    mode: 'closed',
    connections: cfg.connections,
    requests: ok,
    errors,
    firstError,
    rps: Math.round(ok / stats.seconds),
    latencyMs: summarize(latency),
    ...stats,
    ...rssResult,
  };
}

async function fixedRate() {
  const conns = await openConnections(cfg.connections);
  const idle = [...conns];
  const queue = [];
  const latency = newHistogram();
  const sendLag = newHistogram();
  const periodMs = 1000 / cfg.rate;
  const warmN = Math.round(cfg.rate * cfg.warmupS);
  const total = warmN + Math.round(cfg.rate * cfg.durationS);
  const start = performance.now() + 100;
  // The orchestrator can time other load by this schedule (the `large` scenario sends its large reviews
  // during it): its epoch time, as a line before the result line.
  if (cfg.announceStart) process.stdout.write(`${JSON.stringify({ scheduleStart: performance.timeOrigin + start })}\n`);
  let ok = 0;
  let errors = 0;
  let firstError;
  let completed = 0;
  let inflight = 0;
  let maxInflight = 0;
  let maxQueued = 0;
  let before;
  let rss;
  let lastMeasuredDone = 0;
  let spinMs = 0;
  let resolveDone;
  const done = new Promise((resolve) => (resolveDone = resolve));

  const dispatch = (conn, i) => {
    const scheduled = start + i * periodMs;
    const measured = i >= warmN;
    if (performance.now() < scheduled) {
      const spinFrom = performance.now();
      while (performance.now() < scheduled) {
        // the clock woke us up to leadMs early: wait out the rest so nothing is sent before its time
      }
      spinMs += performance.now() - spinFrom;
    }
    if (measured) sendLag.record(usSince(scheduled));
    inflight++;
    maxInflight = Math.max(maxInflight, inflight);
    const uid = uidFor(i);
    conn.send(builder.build(uid), (err, status, body) => {
      if (measured) {
        const failure = failureOf(err, status, body, uid);
        if (failure === undefined) {
          ok++;
          latency.record(usSince(scheduled));
        } else {
          errors++;
          firstError ??= failure;
        }
        lastMeasuredDone = performance.now();
      }
      inflight--;
      completed++;
      const next = queue.shift();
      if (next !== undefined) dispatch(conn, next);
      else idle.push(conn);
      if (completed === total) resolveDone();
    });
  };
  const submit = (i) => {
    if (i === warmN) {
      rss = rssSampler(cfg.pids.server, cfg.rssEveryS ?? 1);
      before = snapshot();
    }
    const conn = idle.pop();
    if (conn) dispatch(conn, i);
    else {
      queue.push(i);
      maxQueued = Math.max(maxQueued, queue.length);
    }
  };

  let next = 0;
  const clock = new Worker(new URL('./clock.mjs', import.meta.url), {
    workerData: { startAbs: performance.timeOrigin + start, periodMs, count: total, leadMs: cfg.leadMs ?? 0.1 },
  });
  clock.on('message', (latestDue) => {
    while (next <= latestDue) submit(next++);
  });
  clock.on('error', (err) => {
    console.error(`loadgen: clock worker failed: ${err.message}`);
    process.exit(1);
  });
  const deadline = (cfg.warmupS + cfg.durationS + 30) * 1000;
  const finished = await Promise.race([done.then(() => true), sleep(deadline).then(() => false)]);
  const after = snapshot();
  const rssResult = rss ? rss.stop() : { maxRssMiB: null, samples: [] };
  await clock.terminate();
  conns.forEach((c) => c.close());
  const unanswered = total - completed;
  // The window runs from the first measured scheduled send to the last measured answer.
  const windowEnd = { ...after, t: lastMeasuredDone || after.t };
  const windowStart = before ? { ...before, t: start + warmN * periodMs } : after;
  const stats = windowStats(windowStart, windowEnd, ok);
  return {
    mode: 'fixed',
    connections: cfg.connections,
    targetRate: cfg.rate,
    achievedRate: Math.round(ok / stats.seconds),
    requests: ok,
    errors: errors + (finished ? 0 : unanswered),
    unanswered: finished ? 0 : unanswered,
    firstError: firstError ?? (finished ? undefined : `${unanswered} requests unanswered after ${deadline / 1000}s`),
    maxInflight,
    maxQueued,
    spinMs: Math.round(spinMs),
    latencyMs: summarize(latency),
    sendLagMs: summarize(sendLag),
    ...stats,
    ...rssResult,
  };
}

const result = cfg.mode === 'closed' ? await closedLoop() : await fixedRate();
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
