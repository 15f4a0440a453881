/**
 * scripts/admission-gateway.mjs, the package's `bin`: in a checkout it runs the sources through tsx (never a
 * stale or missing dist/), elsewhere the build. Checked on small trees laid out like each case, with entry
 * points that say which one ran, and once on the repository itself.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
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

  /** server/main.ts, in TypeScript only tsx can run, and a dist/ build; each prints which it is. */
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
      'runs the build where tsx is not installed (production dependencies only)',
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
      stderr: `admission-gateway: neither the sources with tsx (npm ci) nor a build (npm run build) under ${tree}/\n`,
    });
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
