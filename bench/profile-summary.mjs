// Summarises a .cpuprofile: the functions with the most self time, and the share of a few cost centres.
// usage: node bench/profile-summary.mjs FILE [TOP]
//        node bench/profile-summary.mjs --areas FILE...   one row per profile: its busy CPU (idle left out) by area
/* global process, console */
import { readFileSync } from 'node:fs';

if (process.argv[2] === '--areas') {
  areas(process.argv.slice(3));
  process.exit(0);
}
const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/profile-summary.mjs FILE.cpuprofile [TOP]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
const dt = profile.timeDeltas;
const total = dt.reduce((a, b) => a + b, 0);
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (dt[i] ?? 0)));

const label = (n) => {
  const f = n.callFrame;
  const where = f.url ? `${f.url.replace(/^.*\/(node_modules|dist)\//, '$1/')}:${f.lineNumber + 1}` : '';
  return `${f.functionName || '(anonymous)'} ${where}`.trim();
};
const totals = new Map();
for (const [id, us] of self) {
  const key = label(byId.get(id));
  totals.set(key, (totals.get(key) ?? 0) + us);
}
const top = [...totals].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg ?? 30));
console.log(`total ${(total / 1000).toFixed(0)} ms sampled`);
for (const [key, us] of top) console.log(`${((us / total) * 100).toFixed(1).padStart(5)}%  ${key}`);

const byPackage = new Map();
for (const [id, us] of self) {
  const url = byId.get(id).callFrame.url;
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url) ?? /dist\/(server\/[^/]+|plugins)/.exec(url);
  const key = m ? m[1] : url.startsWith('node:') ? 'node:*' : url ? 'other' : '(native/gc/idle)';
  byPackage.set(key, (byPackage.get(key) ?? 0) + us);
}
console.log('\nby package / area');
for (const [key, us] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 15)) {
  console.log(`${((us / total) * 100).toFixed(1).padStart(5)}%  ${key}`);
}

/** Where a sampled function's self time goes, by what it is part of. */
function areaOf(callFrame) {
  const { url, functionName } = callFrame;
  if (functionName === '(garbage collector)') return 'GC';
  if (/dist\/server\/admission\/codec\.js/.test(url)) return 'JSON decode/encode';
  if (
    /node_modules\/(koa|@koa|koa-compose|delegates|statuses|http-errors|on-finished|content-type|mime|type-is|accepts|cookies|vary)\b/.test(
      url,
    ) ||
    /dist\/server\/http\//.test(url)
  )
    return 'Koa, router, http/';
  if (/dist\/server\/(explain|trace)\//.test(url)) return 'decision traces';
  if (/node_modules\/(pino|sonic-boom|thread-stream)|dist\/server\/base\/log/.test(url)) return 'log';
  if (/node_modules\/prom-client|dist\/server\/metrics\//.test(url)) return 'metrics';
  if (/node_modules\/(undici|opossum)|dist\/server\/providers\//.test(url)) return 'providers (undici, opossum)';
  if (/dist\/(plugins|server\/(dispatch|steps|patch|chain|policy|cel|exceptions|admission|native-policy))\//.test(url))
    return 'chain, steps, patch';
  if (url.startsWith('node:') || !url) return 'Node, TLS, sockets';
  return 'other';
}

function areas(files) {
  const order = [
    'Node, TLS, sockets',
    'Koa, router, http/',
    'JSON decode/encode',
    'chain, steps, patch',
    'decision traces',
    'log',
    'metrics',
    'providers (undici, opossum)',
    'GC',
    'other',
  ];
  console.log(`| profile | ${order.join(' | ')} |`);
  console.log(`| --- | ${order.map(() => '---:').join(' | ')} |`);
  for (const f of files) {
    const p = JSON.parse(readFileSync(f, 'utf8'));
    const nodes = new Map(p.nodes.map((n) => [n.id, n]));
    const by = new Map();
    let busy = 0;
    p.samples.forEach((id, i) => {
      const { callFrame } = nodes.get(id);
      if (callFrame.functionName === '(idle)' || callFrame.functionName === '(program)') return;
      const us = p.timeDeltas[i] ?? 0;
      busy += us;
      const area = areaOf(callFrame);
      by.set(area, (by.get(area) ?? 0) + us);
    });
    const name = f.replace(/^.*\//, '').replace('.cpuprofile', '');
    console.log(`| ${name} | ${order.map((a) => `${(((by.get(a) ?? 0) / busy) * 100).toFixed(0)} %`).join(' | ')} |`);
  }
}
