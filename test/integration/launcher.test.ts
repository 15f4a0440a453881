/**
 * scripts/admission-gateway.mjs, the package's `bin`: in a checkout it runs the sources (never a stale or
 * missing dist/), transpiled into .launcher-cache/ and run from there as JavaScript, only what changed since
 * the last call transpiled again; elsewhere the build. Checked on small trees laid out like each case, with
 * entry points that say which one ran, and once on the repository itself.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../helpers/cli.js';

const LAUNCHER = join(REPO_ROOT, 'scripts', 'admission-gateway.mjs');

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

async function launch(launcher: string, args: readonly string[]): Promise<Run> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [launcher, ...args], { timeout: 60000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

describe('the admission-gateway launcher (package.json bin)', function () {
  this.timeout(60000);
  let tree: string;

  beforeEach(async function () {
    tree = await mkdtemp(join(tmpdir(), 'gateway-launcher-'));
    await mkdir(join(tree, 'scripts'));
    await copyFile(LAUNCHER, join(tree, 'scripts', 'admission-gateway.mjs'));
    await writeFile(join(tree, 'package.json'), JSON.stringify({ name: 'admission-gateway', type: 'module' }));
  });

  afterEach(async function () {
    await rm(tree, { recursive: true, force: true });
  });

  /** server/main.ts, in TypeScript Node cannot run as it is, and a dist/ build; each prints which it is. */
  async function checkout(parts: { sources: boolean; build: boolean; tsx: boolean }): Promise<void> {
    if (parts.sources) {
      await mkdir(join(tree, 'server'));
      await writeFile(
        join(tree, 'server', 'main.ts'),
        "const ran: string = 'sources';\nconsole.log(`${ran}: ${process.argv.slice(2).join(' ')}`);\n",
      );
    }
    if (parts.build) {
      await mkdir(join(tree, 'dist', 'server'), { recursive: true });
      await writeFile(
        join(tree, 'dist', 'server', 'main.js'),
        "console.log(`build: ${process.argv.slice(2).join(' ')}`);\n",
      );
    }
    if (parts.tsx) await symlink(join(REPO_ROOT, 'node_modules'), join(tree, 'node_modules'));
    else await mkdir(join(tree, 'node_modules'));
  }

  const launcher = () => join(tree, 'scripts', 'admission-gateway.mjs');

  const cases: Array<[string, Parameters<typeof checkout>[0], string[], string]> = [
    [
      'runs the sources in a checkout, even when a build is there (it may be stale)',
      { sources: true, build: true, tsx: true },
      ['review', '-', '--exit-code'],
      'sources: review - --exit-code\n',
    ],
    [
      'runs the sources in a fresh clone that has no build',
      { sources: true, build: false, tsx: true },
      ['--version'],
      'sources: --version\n',
    ],
    [
      'runs the build where esbuild is not installed (production dependencies only)',
      { sources: true, build: true, tsx: false },
      ['serve'],
      'build: serve\n',
    ],
    [
      'runs the build where there are no sources',
      { sources: false, build: true, tsx: true },
      ['serve'],
      'build: serve\n',
    ],
  ];
  for (const [what, parts, args, stdout] of cases) {
    it(what, async function () {
      await checkout(parts);

      const run = await launch(launcher(), args);

      assert.deepEqual(run, { code: 0, stdout, stderr: '' });
    });
  }

  it('says what is missing and exits 1 when it has neither', async function () {
    await checkout({ sources: false, build: false, tsx: false });

    const run = await launch(launcher(), ['serve']);

    assert.deepEqual(run, {
      code: 1,
      stdout: '',
      stderr: `admission-gateway: neither the sources with esbuild (npm ci) nor a build (npm run build) under ${tree}/\n`,
    });
  });

  /** Writes `text` as the tree's server/`file`. */
  const source = (file: string, text: string) => writeFile(join(tree, 'server', file), text);
  const cached = (file: string) => join(tree, '.launcher-cache', 'server', file);

  it('runs the sources as JavaScript from its cache, and the next call runs an edit of a module they import', async function () {
    await checkout({ sources: true, build: false, tsx: true });
    await source('main.ts', "import { word } from './word.js';\nconsole.log(`${word} ${import.meta.url}`);\n");
    await source('word.ts', "export const word: string = 'before';\n");

    const first = await launch(launcher(), []);
    await source('word.ts', "export const word: string = 'after!';\n");
    const second = await launch(launcher(), []);

    const url = `file://${cached('main.js')}`;
    assert.deepEqual(
      [first, second],
      [
        { code: 0, stdout: `before ${url}\n`, stderr: '' },
        { code: 0, stdout: `after! ${url}\n`, stderr: '' },
      ],
    );
  });

  it('transpiles nothing again when no source changed, nor when one was only touched', async function () {
    await checkout({ sources: true, build: false, tsx: true });
    await launch(launcher(), ['--version']);
    const before = (await stat(cached('main.js'))).mtimeMs;

    await launch(launcher(), ['--version']);
    const later = new Date(Date.now() + 5000);
    await utimes(join(tree, 'server', 'main.ts'), later, later);
    const run = await launch(launcher(), ['--version']);

    assert.deepEqual(
      { run, mtimeMs: (await stat(cached('main.js'))).mtimeMs },
      { run: { code: 0, stdout: 'sources: --version\n', stderr: '' }, mtimeMs: before },
    );
  });

  it('runs an edit that kept the size and the modification time of the file (written within one clock tick)', async function () {
    await checkout({ sources: true, build: false, tsx: true });
    // A whole second, so that setting it again gives the very same time; the next one, so that it is recent.
    const tick = Math.ceil(Date.now() / 1000);
    await source('main.ts', "console.log('first');\n");
    await utimes(join(tree, 'server', 'main.ts'), tick, tick);
    const first = await launch(launcher(), []);

    await source('main.ts', "console.log('other');\n");
    await utimes(join(tree, 'server', 'main.ts'), tick, tick);
    const second = await launch(launcher(), []);

    assert.deepEqual([first.stdout, second.stdout], ['first\n', 'other\n']);
  });

  it('never runs what a deleted source was transpiled to', async function () {
    await checkout({ sources: true, build: false, tsx: true });
    await source('main.ts', "const { word } = await import('./word.js');\nconsole.log(word);\n");
    await source('word.ts', "export const word: string = 'here';\n");
    const first = await launch(launcher(), []);

    await rm(join(tree, 'server', 'word.ts'));
    const second = await launch(launcher(), []);

    assert.deepEqual(first, { code: 0, stdout: 'here\n', stderr: '' });
    assert.equal(second.code, 1);
    assert.match(second.stderr, /ERR_MODULE_NOT_FOUND/);
  });

  it('says where a source does not compile, and exits 1 without running anything', async function () {
    await checkout({ sources: true, build: false, tsx: true });
    await source('main.ts', "console.log('ran');\nconst broken: string = ;\n");

    const run = await launch(launcher(), []);

    assert.deepEqual(run, {
      code: 1,
      stdout: '',
      stderr: 'admission-gateway: the sources do not compile:\nserver/main.ts:2:24: Unexpected ";"\n',
    });
  });

  it("names the TypeScript source and line in an error's stack", async function () {
    await checkout({ sources: true, build: false, tsx: true });
    await source('main.ts', "type Unused = string;\n\nthrow new Error('from the source');\n");

    const run = await launch(launcher(), []);

    assert.equal(run.code, 1);
    assert.match(run.stderr, new RegExp(`${join(tree, 'server', 'main.ts')}:3:7`));
  });

  it("runs this repository's command line", async function () {
    const { version } = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };

    const run = await launch(LAUNCHER, ['--version']);

    assert.deepEqual(run, { code: 0, stdout: `admission-gateway ${version}\n`, stderr: '' });
  });

  it('is what package.json names as the bin', async function () {
    const pkg = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: unknown };

    assert.deepEqual(pkg.bin, { 'admission-gateway': 'scripts/admission-gateway.mjs' });
  });
});
