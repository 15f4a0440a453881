// The gateway's review path without HTTP or TLS: decode → review → encode of the bench's Pod review, in a loop,
// in this process. Two ways to read it:
//   node bench/in-process.mjs [CHAIN]               CPU µs per review (process.cpuUsage), after a warm-up
//   node bench/in-process.mjs [CHAIN] --callgrind   instructions per review under valgrind's callgrind: the
//                                                   difference between runs of 3,000 and 1,000 reviews after
//                                                   the same warm-up, divided by 2,000. Repeats within ~3% on
//                                                   a machine whose timings move by ±30%; takes about a minute.
// CHAIN: shipped (gateway.yaml, the default), empty, breaker (an open breaker's provider, as the bench's (e)), or
// noopN (N default-labels steps that change nothing).
// --validate: the review on /validate instead of /mutate (the shipped chain warns on it: it is notable).
// --tracing[=RATIO]: with tracing on (sampleRatio RATIO, default 1), exporting over OTLP/HTTP to a receiver in
// a process of its own (bench/otlp-sink.mjs); the spans it received are printed after the figure.
// Uses dist/ (npm run build first). The log goes to /dev/null at level info, batched as the gateway does.
// --turns: the loop gives the event loop a turn every 64 reviews, as requests would, so that timers and I/O
// run meanwhile (the span exporter's, and the log's writes, which without turns all wait for the end of the
// loop); --tracing implies it. Compare tracing on with `--turns`, not with the plain loop.
/* global process, console, fetch, setImmediate */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIST = path.join(ROOT, 'dist');
const args = process.argv.slice(2);
const chainName = args.find((a) => !a.startsWith('--')) ?? 'shipped';
const tracingArg = args.find((a) => a === '--tracing' || a.startsWith('--tracing='));
// A turn of the event loop every 64 reviews: implied by --tracing, whose exporter needs them to run.
const turns = Boolean(tracingArg) || args.includes('--turns');
// --validate: the same review on /validate (the shipped chain warns on it, so its trace is kept).
const phase = args.includes('--validate') ? 'validate' : 'mutate';
const sampleRatio = tracingArg?.includes('=') ? Number(tracingArg.split('=')[1]) : 1;
if (!/^(shipped|empty|breaker|noop\d+)$/.test(chainName) || !(sampleRatio >= 0 && sampleRatio <= 1)) {
  console.error(
    'usage: node bench/in-process.mjs [shipped|empty|breaker|noopN] [--validate] [--callgrind] [--turns] [--tracing[=RATIO]]',
  );
  process.exit(2);
}
const label = tracingArg
  ? `${chainName}, tracing on (sampleRatio ${sampleRatio})`
  : `${chainName}${turns ? ', with event-loop turns' : ''}`;
const routeLabel = `${label}, /${phase}`;

/** The OTLP receiver's process (with --tracing, unless a parent gave its endpoint): its endpoint and its count. */
async function startSink() {
  const sink = spawn(process.execPath, [path.join(path.dirname(fileURLToPath(import.meta.url)), 'otlp-sink.mjs')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = await once(createInterface({ input: sink.stdout }), 'line');
  return {
    endpoint: line,
    count: async () => Number(await (await fetch(line)).text()),
    stop: () => sink.kill('SIGTERM'),
  };
}

if (args.includes('--callgrind')) {
  const sink = tracingArg ? await startSink() : undefined;
  const run = async (reviews, core) => {
    const { stderr } = await promisify(execFile)(
      'taskset',
      [
        '-c',
        String(core),
        'valgrind',
        '--tool=callgrind',
        '--callgrind-out-file=/dev/null',
        process.execPath,
        // Without these the count moves by ±20% with the timing of garbage collection (and so with other load
        // on the machine): deterministic V8 internals and a fixed young generation make it repeat within ~2%.
        '--predictable',
        '--min-semi-space-size=16',
        '--max-semi-space-size=16',
        fileURLToPath(import.meta.url),
        chainName,
        ...(tracingArg ? [tracingArg] : []),
        ...(turns ? ['--turns'] : []),
        ...(phase === 'validate' ? ['--validate'] : []),
      ],
      {
        env: {
          ...process.env,
          IN_PROCESS_REVIEWS: String(reviews),
          IN_PROCESS_QUIET: '1',
          ...(sink ? { IN_PROCESS_OTLP: sink.endpoint } : {}),
        },
        maxBuffer: 1 << 24,
      },
    );
    const collected = /Collected : (\d+)/.exec(stderr);
    if (!collected) throw new Error(`callgrind printed no total:\n${stderr}`);
    return Number(collected[1]);
  };
  const cores = cpus().length;
  const [few, many] = await Promise.all([run(1000, 0), run(3000, cores > 1 ? 1 : 0)]);
  console.log(`${routeLabel}: ${Math.round((many - few) / 2000)} instructions per review`);
  if (sink) console.log(`  spans received by the OTLP receiver (both runs, warm-ups included): ${await sink.count()}`);
  sink?.stop();
  process.exit(0);
}

const { decodeReview, encodeReview } = await import(`${DIST}/server/admission/codec.js`);
const { selectionOf } = await import(`${DIST}/server/http/routes.js`);
const { reviewSetup } = await import('./review-setup.mjs');

const body = readFileSync(path.join(ROOT, 'test/fixtures/reviews/pod-create.json'), 'utf8');
const noop = (n) =>
  `chain:\n${Array.from({ length: n }, (_, i) => `  - plugin: default-labels\n    name: noop-${i}\n    settings: { labels: { app: web } }\n`).join('')}`;
// breaker: one remote provider (nothing listens on its port) behind a breaker that opens on the first failure,
// failurePolicy Ignore: after the first review, every review fails fast and is answered with a warning, as (e).
const breaker = `chain:
  - provider: closed-port
    url: https://127.0.0.1:1/admit
    phases: [mutate]
    timeoutSeconds: 1
    failurePolicy: Ignore
    circuitBreaker: { volumeThreshold: 1, errorThresholdPercentage: 1, resetTimeoutSeconds: 600 }
`;
const yaml =
  chainName === 'empty'
    ? 'chain: []'
    : chainName === 'breaker'
      ? breaker
      : chainName.startsWith('noop')
        ? noop(Number(chainName.slice(4)))
        : readFileSync(path.join(ROOT, 'gateway.yaml'), 'utf8');
const sink = tracingArg && !process.env.IN_PROCESS_OTLP ? await startSink() : undefined;
const endpoint = process.env.IN_PROCESS_OTLP ?? sink?.endpoint;
const tracing = tracingArg ? `\ntracing:\n  otlpEndpoint: ${endpoint}\n  sampleRatio: ${sampleRatio}\n` : '';
// IN_PROCESS_TRACES=0: without decision traces (explain.bufferSize 0), to measure what keeping them costs;
// IN_PROCESS_TRACES=all: every review's trace kept (explain.keep: all), the path of a notable review;
// IN_PROCESS_TRACES=noannot: traces kept as by default, without the decision-trace audit annotation.
const explain = {
  0: '\nexplain: { bufferSize: 0 }\n',
  all: '\nexplain: { keep: all }\n',
  noannot: '\nexplain: { auditAnnotation: false }\n',
}[process.env.IN_PROCESS_TRACES];
const { reviewer, chains, log, tracer } = await reviewSetup(ROOT, yaml + (explain ?? '') + tracing);

const selection = selectionOf(phase);
const review = async () => {
  const { apiVersion, request } = decodeReview(body);
  const { response } = await reviewer.review(request, selection, { timeoutMs: 10_000 });
  return encodeReview(apiVersion, response);
};
async function loop(n) {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    await review();
    if (turns && i % 64 === 63) await new Promise((resolve) => setImmediate(resolve));
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / n;
}

await loop(3000); // warm-up: the optimising compiler has settled by then
const reviews = Number(process.env.IN_PROCESS_REVIEWS ?? 30_000);
const cpuUs = await loop(reviews);
// Exporting what is left is part of the cost of tracing (in the instruction counts too).
await tracer?.shutdown();
if (!process.env.IN_PROCESS_QUIET) {
  console.log(`${routeLabel}: ${cpuUs.toFixed(1)} µs of CPU per review (${reviews} reviews)`);
  if (sink) console.log(`  spans received by the OTLP receiver (warm-up included): ${await sink.count()}`);
}
sink?.stop();
await chains.close();
log.flush();
