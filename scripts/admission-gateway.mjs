#!/usr/bin/env node
// The `admission-gateway` command as npm installs it (package.json "bin", what `npx admission-gateway` runs).
// In a source checkout it runs what is in the tree, never a build made before the last change: the sources
// are transpiled one file each (esbuild, as tsx does for the tests; no type check) into .launcher-cache/,
// laid out as dist/ is, and run from there as plain JavaScript. A call transpiles only the files that changed
// since the last one (size and modification time differ and so does the content's hash) and removes the
// output of deleted ones, so a call after none pays a directory walk, not a compile (docs/decisions.md, "The
// command runs the tree through a transpile cache"). Without the sources or without esbuild (an installed
// package, production dependencies only) it runs the build. The image's CMD runs dist/server/main.js itself.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { URL, fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const SOURCE_DIRS = ['server', 'plugins', 'certs'];
const CACHE = join(root, '.launcher-cache');
const MANIFEST = join(CACHE, 'manifest.json');
/** Bumped when what the cache holds changes shape. */
const FORMAT = 1;
/** Longer than the coarsest modification-time tick of the file systems a checkout lives on (1 s, 2 s on FAT). */
const RACY_MS = 2500;

/** esbuild, or undefined when it is not installed (it is a devDependency). */
async function esbuildApi() {
  try {
    return await import('esbuild');
  } catch (err) {
    if (err?.code === 'ERR_MODULE_NOT_FOUND') return undefined;
    throw err;
  }
}

/** Every .ts source below the source folders, relative to the root with `/`. */
function sources() {
  const found = [];
  const walk = (dir) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) found.push(path);
    }
  };
  for (const dir of SOURCE_DIRS) if (existsSync(join(root, dir))) walk(dir);
  return found;
}

/** What every output depends on besides its source: a change of any transpiles everything again. */
function settingsOf(esbuild, tsconfig) {
  return `${FORMAT} ${esbuild.version} ${createHash('sha256').update(tsconfig).digest('hex')}`;
}

function readManifest(settings) {
  try {
    const manifest = JSON.parse(readFileSync(MANIFEST, 'utf8'));
    if (manifest.settings === settings) return manifest;
  } catch {
    // none yet, or unreadable: transpile everything
  }
  return { settings, files: {} };
}

/** Writes through a temporary file, so that a concurrent call never reads a half-written one. */
function writeAtomically(file, contents) {
  mkdirSync(dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, contents);
  renameSync(temporary, file);
}

const outputOf = (source) => join(CACHE, source.replace(/\.ts$/, '.js'));

/** Brings the cache up to date with the sources; returns the entry point to import. */
function refresh(esbuild) {
  // The compiler options esbuild heeds (verbatimModuleSyntax, class fields for the target) are the project's.
  const tsconfigFile = join(root, 'tsconfig.json');
  const tsconfig = existsSync(tsconfigFile) ? readFileSync(tsconfigFile, 'utf8') : '{}';
  const manifest = readManifest(settingsOf(esbuild, tsconfig));
  const checkedAt = Date.now();
  const files = {};
  const stale = [];
  let changed = false;
  for (const source of sources()) {
    const { mtimeMs, size } = statSync(join(root, source));
    const known = manifest.files[source];
    // A file modified within RACY_MS of the last check may have been written again since within the same
    // tick of the file system's clock, its size unchanged: only its content tells (git's "racily clean").
    const racy = known !== undefined && !(known.mtimeMs < (manifest.checkedAt ?? 0) - RACY_MS);
    if (known && !racy && known.mtimeMs === mtimeMs && known.size === size && existsSync(outputOf(source))) {
      files[source] = known;
      continue;
    }
    const text = readFileSync(join(root, source));
    const hash = createHash('sha256').update(text).digest('hex');
    files[source] = { mtimeMs, size, hash };
    changed = true;
    if (!known || known.hash !== hash || !existsSync(outputOf(source))) stale.push({ source, text });
  }
  for (const source of Object.keys(manifest.files)) {
    if (files[source]) continue;
    rmSync(outputOf(source), { force: true });
    changed = true;
  }
  for (const { source, text } of stale) {
    const file = join(root, source);
    const { code } = esbuild.transformSync(text.toString('utf8'), {
      loader: 'ts',
      format: 'esm',
      platform: 'node',
      target: 'node20',
      // Stack traces name the TypeScript file and line, as they did when tsx ran the sources.
      sourcemap: 'inline',
      sourcesContent: false,
      sourcefile: file,
      tsconfigRaw: tsconfig,
    });
    writeAtomically(outputOf(source), code);
  }
  if (changed) writeAtomically(MANIFEST, `${JSON.stringify({ settings: manifest.settings, checkedAt, files })}\n`);
  return join(CACHE, 'server', 'main.js');
}

/** esbuild's errors as `<file>:<line>:<column>: <message>` lines, the file relative to the root. */
function transpileErrors(err) {
  if (!Array.isArray(err?.errors)) return undefined;
  return err.errors
    .map(({ text, location }) =>
      location
        ? `${relative(root, location.file).split(sep).join('/')}:${location.line}:${location.column + 1}: ${text}`
        : text,
    )
    .join('\n');
}

const mainSource = join(root, 'server', 'main.ts');
const built = join(root, 'dist', 'server', 'main.js');
const esbuild = existsSync(mainSource) ? await esbuildApi() : undefined;
if (esbuild) {
  let entry;
  try {
    entry = refresh(esbuild);
  } catch (err) {
    const errors = transpileErrors(err);
    if (!errors) throw err;
    process.stderr.write(`admission-gateway: the sources do not compile:\n${errors}\n`);
    process.exit(1);
  }
  process.setSourceMapsEnabled(true);
  await import(pathToFileURL(entry).href);
} else if (existsSync(built)) {
  await import(pathToFileURL(built).href);
} else {
  process.stderr.write(
    `admission-gateway: neither the sources with esbuild (npm ci) nor a build (npm run build) under ${root}\n`,
  );
  process.exitCode = 1;
}
