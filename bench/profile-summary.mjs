// Summarises a .cpuprofile: the functions with the most self time, and the share of a few cost centres.
// usage: node bench/profile-summary.mjs FILE [TOP]
/* global process, console */
import { readFileSync } from 'node:fs';

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
