// What keeping decision traces costs a review, in process (decode → review → encode of the bench's Pod review,
// shipped chain, a fresh uid each): a reviewer without traces (explain.bufferSize 0) against one keeping every
// review's trace (explain.keep: all, the path of a notable review). Prints CPU µs per review of each on /mutate and
// /validate, the overhead, and PASS/FAIL against the target (issue: keeping traces of notable reviews costs ≤ 5 %
// CPU even when every review is notable). Uses dist/ (npm run build first).
//
// Each variant runs in a process of its own (the traces one keeps would make the other's collections dearer in a
// shared heap), ROUNDS times each, taking turns, so that other load on the machine falls on both alike; the medians
// are compared. Each process runs under the heap limit the shipped Deployment sets (its NODE_OPTIONS): near a small
// limit V8 grows the heap little after each mark-compact, so what kept traces cost there is what a pod pays. Its
// loop gives the event loop a turn every YIELD_EVERY reviews, as a server does between requests, so that the log
// lines are written and let go. On Linux each process is pinned to core 0 (taskset) when taskset is there.
//
// TRACE_COST_ROUNDS, TRACE_COST_REVIEWS and TRACE_COST_WARMUP (reviews before the measured ones, 20,000 by default)
// change the run's shape.
//
// `--parts` says where the cost is: besides `off` and `kept`, `recorded` (the trace's input recorded while the
// review runs, handed to a listener that keeps nothing, no audit annotation) and `annotated` (the same with the
// `decision-trace` audit annotation); it prints each variant's median and fastest process, and no PASS/FAIL.
/* global process, console, setTimeout */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runAsPod } from './deployment.mjs';

const TARGET_OVERHEAD = 0.05;
const ROUNDS = Number(process.env.TRACE_COST_ROUNDS ?? 5);
const REVIEWS = Number(process.env.TRACE_COST_REVIEWS ?? 60_000);
const WARMUP = Number(process.env.TRACE_COST_WARMUP ?? 20_000);
const YIELD_EVERY = 200;

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SELF = fileURLToPath(import.meta.url);

if (process.argv[2] === '--child') await child(process.argv[3], process.argv[4]);
else parent(process.argv.includes('--parts'));

/** One variant on one route: prints its CPU µs per review over REVIEWS reviews after WARMUP. */
async function child(variant, routeName) {
  const DIST = path.join(ROOT, 'dist');
  const { decodeReview, encodeReview } = await import(`${DIST}/server/admission/codec.js`);
  const { selectionOf } = await import(`${DIST}/server/http/routes.js`);
  const { reviewSetup, withUid } = await import('./review-setup.mjs');
  const body = readFileSync(path.join(ROOT, 'test/fixtures/reviews/pod-create.json'), 'utf8');
  const yaml = readFileSync(path.join(ROOT, 'gateway.yaml'), 'utf8');
  const explain = {
    off: 'explain: { bufferSize: 0 }',
    recorded: 'explain: { keep: all, auditAnnotation: false }',
    annotated: 'explain: { keep: all }',
    kept: 'explain: { keep: all }',
  }[variant];
  const keepNothing = variant === 'recorded' || variant === 'annotated' ? { keepTrace: () => {} } : {};
  const { reviewer } = await reviewSetup(ROOT, `${yaml}\n${explain}\n`, keepNothing);
  const route = selectionOf(routeName);
  let n = 0;
  const run = async (count) => {
    for (let i = 0; i < count; i++) {
      if (i % YIELD_EVERY === YIELD_EVERY - 1) await new Promise((resolve) => setTimeout(resolve, 0));
      // A fresh uid each, as the apiserver sends: every kept trace is a new one.
      const text = withUid(body, n++);
      const { apiVersion, request } = decodeReview(text);
      const { response } = await reviewer.review(request, route, { timeoutMs: 10_000 });
      encodeReview(apiVersion, response);
    }
  };
  await run(WARMUP);
  const before = process.cpuUsage();
  await run(REVIEWS);
  const used = process.cpuUsage(before);
  console.log(JSON.stringify({ cpuUs: (used.user + used.system) / REVIEWS }));
}

function parent(parts) {
  const measure = (variant, route) =>
    runAsPod(ROOT, SELF, ['--child', variant, route], `trace-cost ${variant} ${route}`).cpuUs;
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  if (parts) {
    const variants = ['off', 'recorded', 'annotated', 'kept'];
    for (const route of ['mutate', 'validate']) {
      const cpu = Object.fromEntries(variants.map((v) => [v, []]));
      for (let r = 0; r < ROUNDS; r++)
        for (const variant of r % 2 ? [...variants].reverse() : variants) cpu[variant].push(measure(variant, route));
      for (const variant of variants)
        console.log(
          `  /${route} ${variant.padEnd(9)} ${median(cpu[variant]).toFixed(1)} µs CPU per review, median ` +
            `(fastest ${Math.min(...cpu[variant]).toFixed(1)}) of ${ROUNDS} processes`,
        );
    }
    return;
  }
  let pass = true;
  for (const route of ['mutate', 'validate']) {
    const cpu = { off: [], kept: [] };
    for (let r = 0; r < ROUNDS; r++)
      for (const variant of r % 2 ? ['kept', 'off'] : ['off', 'kept']) cpu[variant].push(measure(variant, route));
    const off = median(cpu.off);
    const kept = median(cpu.kept);
    const overhead = kept / off - 1;
    const ok = overhead <= TARGET_OVERHEAD;
    pass &&= ok;
    const runs = (xs) => xs.map((x) => x.toFixed(1)).join(', ');
    console.log(
      `  ${ok ? 'PASS' : 'FAIL'}  /${route}: ${off.toFixed(1)} µs CPU per review without traces, ${kept.toFixed(1)} ` +
        `keeping every review's (medians of ${ROUNDS} processes each: ${runs(cpu.off)} / ${runs(cpu.kept)}): ` +
        `+${(overhead * 100).toFixed(1)} % (≤ ${TARGET_OVERHEAD * 100} %)`,
    );
  }
  process.exitCode = pass ? 0 : 1;
}
