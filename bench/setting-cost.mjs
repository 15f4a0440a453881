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
/* global process, console */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import YAML from 'yaml';
import { benchGateways, loadgen } from './gateway-process.mjs';
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
const gateways = await benchGateways(ROOT, 'setting-cost');
const shipped = YAML.parse(fs.readFileSync(path.join(ROOT, 'gateway.yaml'), 'utf8'));
const ticks = clockTicks();

/** The bench's configuration of the shipped chain, with `variant` set. */
function configOf(variant) {
  const config = {
    ...shipped,
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

/** A closed loop's result as bench/loadgen.mjs prints it: `durationS` measured after `warmS`. */
async function closedLoop(gateway, warmS, durationS) {
  const cfg = {
    port: gateway.port,
    path: route,
    caFile: gateways.certs.caCertFile,
    fixture: path.join(ROOT, 'test/fixtures/reviews/pod-create.json'),
    clockTicks: ticks,
    pids: { server: gateway.pid },
    mode: 'closed',
    connections: 16,
    warmupS: warmS,
    durationS,
  };
  return loadgen(ROOT, cfg);
}

const cpu = positionals.map(() => []);
const rps = positionals.map(() => []);
const roundsText = `${rounds} round${rounds === 1 ? '' : 's'}`;
console.log(`the shipped chain on ${route.split('?')[0]}, ${roundsText}; gateway CPU µs a review (reviews/s):`);
for (let round = 0; round < rounds; round++) {
  const started = [];
  try {
    for (const variant of positionals) started.push(await gateways.start(variant, configOf(variant)));
    for (const [i, gateway] of started.entries()) {
      const warm = await closedLoop(gateway, warmupS, 0.5);
      if (warm.errors > 0) throw new Error(`${positionals[i]}: ${warm.errors} errors in its warm-up`);
    }
    const served = started.map(() => ({ cpuUs: 0, reviews: 0 }));
    for (let w = 0; w < windows; w++) {
      for (const [i, gateway] of started.entries()) {
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
    for (const gateway of started) await gateway.stop();
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
