// `npm start` builds first when dist/ is missing or older than any source file (no work when fresh).
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const SOURCES = ['server', 'plugins', 'certs'];
const OUTPUT = 'dist/server/main.js';

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, newest(path));
    else if (entry.name.endsWith('.ts')) latest = Math.max(latest, statSync(path).mtimeMs);
  }
  return latest;
}

let built = 0;
try {
  built = statSync(OUTPUT).mtimeMs;
} catch {
  // not built yet
}
const sources = Math.max(
  ...SOURCES.map(newest),
  statSync('tsconfig.json').mtimeMs,
  statSync('tsconfig.build.json').mtimeMs,
);
if (built < sources) {
  console.error('building dist/ (tsc -p tsconfig.build.json)');
  const result = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
    stdio: 'inherit',
  });
  process.exit(result.status ?? 1);
}
