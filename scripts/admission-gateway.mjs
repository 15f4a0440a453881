#!/usr/bin/env node
// The `admission-gateway` command as npm installs it (package.json "bin", what `npx admission-gateway` runs).
// In a source checkout it runs the sources through tsx, so the command always runs what is in the tree: a
// dist/ built before the last change (or none at all, in a fresh clone) cannot shadow it. Without the
// sources or without tsx (an installed package, production dependencies only) it runs the build. The
// image's CMD runs dist/server/main.js itself and never comes here.
import { existsSync } from 'node:fs';
import { URL } from 'node:url';

const root = new URL('../', import.meta.url);
const sources = new URL('server/main.ts', root);
const built = new URL('dist/server/main.js', root);

/** tsx's ESM loader API, or undefined when tsx is not installed (it is a devDependency). */
async function tsxApi() {
  try {
    return await import('tsx/esm/api');
  } catch (err) {
    if (err?.code === 'ERR_MODULE_NOT_FOUND') return undefined;
    throw err;
  }
}

const tsx = existsSync(sources) ? await tsxApi() : undefined;
if (tsx) {
  tsx.register();
  await import(sources.href);
} else if (existsSync(built)) {
  await import(built.href);
} else {
  process.stderr.write(
    `admission-gateway: neither the sources with tsx (npm ci) nor a build (npm run build) under ${root.pathname}\n`,
  );
  process.exitCode = 1;
}
