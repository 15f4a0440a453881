// The large-review lane's work on the 40,000-container Pod of `npm run bench -- --only large` (part 1), in process:
// decode → review (the shipped chain, /mutate) → encode → the answer's bytes, in a worker thread with the lane's
// heap (gateway.yaml's largeReviews.youngGenerationMiB of young generation, under the Deployment's NODE_OPTIONS),
// without HTTP, TLS or the hand-over between threads. Each run is a process of its own, pinned to core 0 when
// taskset is there. Uses dist/ (npm run build first).
//
//   node bench/large-in-process.mjs                 CPU ms a Pod: the median of LARGE_PODS (12) after two (the
//                                                   first starts the code; the second still compiles it), over
//                                                   LARGE_ROUNDS (3) processes; and each Pod in turn (the warm-up)
//   node bench/large-in-process.mjs --alloc         MB allocated a Pod and the functions that allocate most, from
//                                                   the sampling heap profiler (the garbage counted too): unlike
//                                                   time, it does not move with the machine's other load
//   node bench/large-in-process.mjs --compare DIR   the same CPU figure for this checkout and the built checkout
//                                                   DIR, processes taking turns, so that the machine's other load
//                                                   falls on both alike
//
// LARGE_CONTAINERS changes the Pod's size (40,000). The process's CPU time is counted (the collector's threads
// included); the event loop that would serve ordinary reviews is idle here.
/* global process, console, Buffer, structuredClone */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { deploymentNodeOptions, runAsPod } from './deployment.mjs';
import { LARGE, median, podReview } from './large.mjs';
import { reviewSetup } from './review-setup.mjs';

const HERE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SELF = fileURLToPath(import.meta.url);
const PODS = Number(process.env.LARGE_PODS ?? 12);
const WARM = 2;
const ROUNDS = Number(process.env.LARGE_ROUNDS ?? 3);
const CONTAINERS = Number(process.env.LARGE_CONTAINERS ?? LARGE.podContainers);
/** Functions listed by --alloc. */
const TOP = 12;

if (!isMainThread) await worker(workerData);
else if (process.argv[2] === '--child') await child(process.argv[3], process.argv[4] === '--alloc');
else parent();

/** The Pods, one after another, in this worker; posts each one's CPU ms and, with `alloc`, the allocation. */
async function worker({ root, alloc }) {
  const load = (file) => import(pathToFileURL(path.join(root, file)).href);
  const { decodeReview, encodeReview } = await load('dist/server/admission/codec.js');
  const { selectionOf } = await load('dist/server/http/routes.js');
  const { reviewer } = await reviewSetup(root, readFileSync(path.join(root, 'gateway.yaml'), 'utf8'));
  const fixture = JSON.parse(readFileSync(path.join(HERE, 'test/fixtures/reviews/pod-create.json'), 'utf8'));
  const body = Buffer.from(JSON.stringify(podReview(structuredClone(fixture), CONTAINERS)));
  const route = selectionOf('mutate');
  const profiler = alloc ? await heapProfiler() : undefined;
  const cpuMs = [];
  let answerBytes = 0;
  for (let i = 0; i < PODS; i++) {
    if (profiler && i === WARM) await profiler.start();
    const before = process.cpuUsage();
    const { apiVersion, request } = decodeReview(body.toString('utf8'));
    const { response } = await reviewer.review(request, route, { timeoutMs: 60_000 });
    answerBytes = Buffer.from(encodeReview(apiVersion, response), 'utf8').length;
    const used = process.cpuUsage(before);
    cpuMs.push((used.user + used.system) / 1000);
  }
  const allocation = profiler ? allocationOf(await profiler.stop(), PODS - WARM) : undefined;
  parentPort.postMessage({ cpuMs, answerBytes, allocation });
}

/** The inspector's sampling heap profiler, on this thread. */
async function heapProfiler() {
  const { Session } = await import('node:inspector');
  const session = new Session();
  session.connect();
  const post = (method, params) =>
    new Promise((resolve, reject) => session.post(method, params, (err, r) => (err ? reject(err) : resolve(r))));
  await post('HeapProfiler.enable');
  return {
    start: () =>
      post('HeapProfiler.startSampling', {
        samplingInterval: 4096,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      }),
    stop: async () => (await post('HeapProfiler.stopSampling')).profile,
  };
}

/** Bytes allocated a Pod in all, and by the function that allocated them (its file and line), the most first. */
function allocationOf(profile, pods) {
  const byFunction = new Map();
  let total = 0;
  const stack = [profile.head];
  while (stack.length > 0) {
    const node = stack.pop();
    const { functionName, url, lineNumber } = node.callFrame;
    if (node.selfSize > 0) {
      const where = `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
      byFunction.set(where, (byFunction.get(where) ?? 0) + node.selfSize);
      total += node.selfSize;
    }
    stack.push(...node.children);
  }
  const top = [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, TOP);
  return { bytes: total / pods, top: top.map(([where, bytes]) => ({ where, bytes: bytes / pods })) };
}

/** One process: the worker with the lane's heap, as worker-pool.ts starts it; prints what it posted. */
async function child(root, alloc) {
  const { parseConfigText } = await import(pathToFileURL(path.join(root, 'dist/server/config/load.js')).href);
  const config = parseConfigText(readFileSync(path.join(root, 'gateway.yaml'), 'utf8'), 'gateway.yaml', root);
  const young = config.server.largeReviews.youngGenerationMiB;
  // As WorkerPool does: the Deployment's --max-semi-space-size would otherwise cap the worker's young generation.
  if (young > 0) setFlagsFromString('--max-semi-space-size=0');
  const w = new Worker(SELF, {
    workerData: { root, alloc },
    resourceLimits: young > 0 ? { maxYoungGenerationSizeMb: young } : undefined,
  });
  const message = await new Promise((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
    // A worker that ends without a word (out of memory, say) would otherwise leave this process waiting.
    w.once('exit', (code) => reject(new Error(`the worker exited (code ${code}) before it answered`)));
  });
  console.log(JSON.stringify({ ...message, young }));
  await w.terminate();
}

function parent() {
  const args = process.argv.slice(2);
  const alloc = args.includes('--alloc');
  const compareAt = args.indexOf('--compare');
  const other = compareAt >= 0 ? path.resolve(args[compareAt + 1] ?? '') : undefined;
  if (compareAt >= 0 && !args[compareAt + 1]) {
    console.error('usage: node bench/large-in-process.mjs [--alloc | --compare DIR]');
    process.exit(2);
  }
  const roots = other ? [HERE, other] : [HERE];
  for (const root of roots) {
    if (!existsSync(path.join(root, 'dist/server/admission/codec.js'))) {
      console.error(`${root}: no dist/ (npm run build there first)`);
      process.exit(2);
    }
  }
  const nodeOptions = deploymentNodeOptions(HERE);
  const run = (root, withAlloc) =>
    runAsPod(HERE, SELF, ['--child', root, ...(withAlloc ? ['--alloc'] : [])], `large-in-process ${root}`);
  console.log(
    `${CONTAINERS}-container Pod on /mutate, the shipped chain, in a worker (NODE_OPTIONS ${nodeOptions || 'none'}, ` +
      `young generation as largeReviews.youngGenerationMiB)`,
  );
  if (alloc) {
    const result = run(HERE, true);
    const mb = (bytes) => (bytes / 1e6).toFixed(1).padStart(6);
    console.log(`  ${mb(result.allocation.bytes)} MB allocated a Pod (sampled, Pods ${WARM + 1}–${PODS}), most by:`);
    for (const { where, bytes } of result.allocation.top) console.log(`  ${mb(bytes)} MB  ${where}`);
    return;
  }
  /** Each process's CPU ms a Pod, by checkout. */
  const perPod = new Map(roots.map((root) => [root, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const root of r % 2 ? [...roots].reverse() : roots) {
      const result = run(root, false);
      perPod.get(root).push(result.cpuMs);
      if (r === 0 && root === HERE)
        console.log(`  young generation ${result.young} MiB; answer ${result.answerBytes} bytes`);
    }
  }
  const ms = (xs) => xs.map((x) => x.toFixed(1)).join(', ');
  for (const root of roots) {
    const runs = perPod.get(root).map((cpuMs) => median(cpuMs.slice(WARM)));
    // The worker's first Pods cost more while its code settles (bench/README.md, "Where a large Pod's time goes").
    const byPod = Array.from({ length: PODS }, (_, i) => median(perPod.get(root).map((cpuMs) => cpuMs[i])));
    console.log(
      `  ${root === HERE ? 'this checkout' : root}: ${median(runs).toFixed(1)} ms of CPU a Pod, median of ` +
        `${ROUNDS} process${ROUNDS === 1 ? '' : 'es'} (each the median of Pods ${WARM + 1}–${PODS}: ${ms(runs)})\n` +
        `    each Pod in turn, the median over the processes: ${ms(byPod)}`,
    );
  }
}
