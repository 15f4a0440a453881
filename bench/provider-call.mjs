// Micro-benchmark: gateway CPU per remote provider call. Runs N sequential calls through the real provider
// client (optionally through the step and its breaker) against bench/servers.mjs `allow` running as a
// separate process pinned to another core, and reports process.cpuUsage() (user+sys) µs per call of THIS
// process — only the gateway side of the call. Several runs; the median is the figure to compare.
//
// usage (TypeScript sources are loaded through tsx):
//   taskset -c 0 node --import tsx bench/provider-call.mjs [--calls 4000] [--warmup 2000] [--runs 5]
//     [--step] [--client FILE] [--provider-core 1]
//   --step    call through createProviderStep + the opossum breaker (what the chain does), not client.call
//   --client  a module exporting createProviderClient (default server/providers/provider-client.ts), to
//             compare another implementation under the same load
// Profile with: node --cpu-prof --cpu-prof-dir=.scratch/prof --import tsx bench/provider-call.mjs ...
//               node bench/profile-summary.mjs .scratch/prof/<file>.cpuprofile
/* global process, console, structuredClone, AbortController */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT, imp, startProviderBench } from './provider-bench.mjs';

const { values: argv } = parseArgs({
  options: {
    calls: { type: 'string', default: '4000' },
    warmup: { type: 'string', default: '2000' },
    runs: { type: 'string', default: '5' },
    step: { type: 'boolean', default: false },
    client: { type: 'string', default: path.join(ROOT, 'server/providers/provider-client.ts') },
    'provider-core': { type: 'string', default: '1' },
  },
});
const calls = Number(argv.calls);
const warmup = Number(argv.warmup);
const runs = Number(argv.runs);

const {
  client,
  url,
  request,
  stop: stopProvider,
} = await startProviderBench({
  clientFile: argv.client,
  core: argv['provider-core'],
  script: path.join(ROOT, 'bench/servers.mjs'),
  args: (certFile, keyFile) => ['allow', certFile, keyFile],
});
const object = structuredClone(request.object);
const signal = new AbortController().signal;

let once = () => client.call({ request, object, mutating: true, timeoutMs: 2000, signal });
if (argv.step) {
  const { Registry } = await import('prom-client');
  const { createMetrics } = await imp('server/metrics/metrics.ts');
  const { createProviderBreaker } = await imp('server/providers/provider-breaker.ts');
  const { createProviderStep } = await imp('server/providers/provider-step.ts');
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  const breaker = createProviderBreaker(
    'bench',
    { errorThresholdPercentage: 50, volumeThreshold: 5, resetTimeoutMs: 30_000, rollingWindowMs: 10_000 },
    { metrics: createMetrics(new Registry(), { defaultMetrics: false }), log: quiet },
  );
  const step = createProviderStep({
    name: 'bench',
    provider: 'bench',
    phase: 'mutate',
    url,
    client,
    breaker,
    match: { rules: [] },
    failurePolicy: 'Fail',
    timeoutMs: 2000,
    mode: 'enforce',
    sideEffects: 'None',
    reinvocationPolicy: 'Never',
    order: 0,
    extension: 'bench',
    attach: 'Always',
  });
  const inv = {
    request,
    plainObject: object,
    timeoutMs: 2000,
    signal,
    warn() {},
    annotate() {},
  };
  once = () => step.invoke(inv);
}

async function loop(n) {
  for (let i = 0; i < n; i++) {
    const answer = await once();
    if (answer.allowed !== true) throw new Error(`call ${i}: not allowed: ${JSON.stringify(answer)}`);
  }
}

await loop(warmup);
const results = [];
for (let r = 0; r < runs; r++) {
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await loop(calls);
  const wallUs = Number(process.hrtime.bigint() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  results.push({ cpuUs: (cpu.user + cpu.system) / calls, userUs: cpu.user / calls, wallUs: wallUs / calls });
  console.log(
    `run ${r + 1}: ${results[r].cpuUs.toFixed(1)} µs CPU/call (user ${results[r].userUs.toFixed(1)}), ` +
      `${results[r].wallUs.toFixed(1)} µs wall/call`,
  );
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `median of ${runs} × ${calls} calls (${argv.step ? 'step + breaker' : 'client.call'}, ${path.relative(ROOT, argv.client)}): ` +
    `${median(results.map((x) => x.cpuUs)).toFixed(1)} µs CPU/call (user ${median(results.map((x) => x.userUs)).toFixed(1)}), ` +
    `${median(results.map((x) => x.wallUs)).toFixed(1)} µs wall/call`,
);
await client.close();
stopProvider();
process.exit(0);
