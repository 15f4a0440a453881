// What keeping decision traces costs a review, in process (decode → review → encode of the bench's Pod review,
// shipped chain): a reviewer without traces (explain.bufferSize 0) and one keeping every review's trace
// (explain.keep: all, the path of a notable review) run in alternating batches, so that other load on the machine
// falls on both alike. Prints CPU µs per review of each on /mutate and /validate, the overhead, and PASS/FAIL
// against the target (issue: keeping traces of notable reviews costs ≤ 5 % CPU even when every review is notable).
// Uses dist/ (npm run build first).
/* global process, console */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TARGET_OVERHEAD = 0.05;
const ROUNDS = Number(process.env.TRACE_COST_ROUNDS ?? 30);
const BATCH = 1000;

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIST = path.join(ROOT, 'dist');
const { decodeReview, encodeReview } = await import(`${DIST}/server/admission/codec.js`);
const { selectionOf } = await import(`${DIST}/server/http/routes.js`);
const { reviewSetup } = await import('./review-setup.mjs');
const body = readFileSync(path.join(ROOT, 'test/fixtures/reviews/pod-create.json'), 'utf8');
const yaml = readFileSync(path.join(ROOT, 'gateway.yaml'), 'utf8');
const variants = {
  off: (await reviewSetup(ROOT, `${yaml}\nexplain: { bufferSize: 0 }\n`)).reviewer,
  kept: (await reviewSetup(ROOT, `${yaml}\nexplain: { keep: all }\n`)).reviewer,
};

/** CPU µs of `n` reviews by `reviewer` on `route`. */
async function batch(reviewer, route, n) {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const { apiVersion, request } = decodeReview(body);
    const { response } = await reviewer.review(request, route, { timeoutMs: 10_000 });
    encodeReview(apiVersion, response);
  }
  const used = process.cpuUsage(before);
  return used.user + used.system;
}

let pass = true;
for (const name of ['mutate', 'validate']) {
  const route = selectionOf(name);
  for (const reviewer of Object.values(variants)) await batch(reviewer, route, 3 * BATCH);
  const cpu = { off: 0, kept: 0 };
  for (let r = 0; r < ROUNDS; r++)
    for (const [v, reviewer] of Object.entries(variants)) cpu[v] += await batch(reviewer, route, BATCH);
  const off = cpu.off / ROUNDS / BATCH;
  const kept = cpu.kept / ROUNDS / BATCH;
  const overhead = kept / off - 1;
  const ok = overhead <= TARGET_OVERHEAD;
  pass &&= ok;
  console.log(
    `  ${ok ? 'PASS' : 'FAIL'}  /${name}: ${off.toFixed(1)} µs CPU per review without traces, ${kept.toFixed(1)} keeping every ` +
      `review's: +${(overhead * 100).toFixed(1)} % (≤ ${TARGET_OVERHEAD * 100} %)`,
  );
}
process.exitCode = pass ? 0 : 1;
