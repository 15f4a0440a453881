/**
 * plugins/README.md's five-minute tutorial, followed to the letter: its module and its test are written
 * where the tutorial says (inside a scratch copy of the layout, so the repository's own plugin list is left
 * alone), type-checked with the project's compiler settings, linted and formatted, and the test is run.
 * The `plugins/index.ts` snippet must be what prettier would write, and the `gateway.yaml` entry must be
 * accepted by the gateway's config reader with the tutorial's plugin registered.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { format, resolveConfig } from 'prettier';
import { parse } from 'yaml';
import type { Plugin } from '../../server/plugin-api/index.js';
import { settingsOf } from '../../server/plugin-api/testing/index.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

interface Block {
  readonly lang: string;
  readonly code: string;
  /** The heading the block sits under. */
  readonly section: string;
}

function tutorialBlocks(): Block[] {
  const text = readFileSync(path.join(ROOT, 'plugins/README.md'), 'utf8');
  const start = text.indexOf('## Write a plugin in five minutes');
  const end = text.indexOf('\n## ', start + 1);
  const blocks: Block[] = [];
  let section = '';
  const lines = text.slice(start, end).split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('### ')) section = line.slice(4);
    const fence = /^```(\w+)$/.exec(line);
    if (!fence) continue;
    const body: string[] = [];
    for (i++; lines[i] !== '```'; i++) body.push(lines[i]!);
    blocks.push({ lang: fence[1]!, code: `${body.join('\n')}\n`, section });
  }
  return blocks;
}

function blockOf(blocks: Block[], section: string, lang: string): string {
  const found = blocks.find((b) => b.section.startsWith(section) && b.lang === lang);
  assert.ok(found, `the tutorial has a ${lang} block under "${section}"`);
  return found.code;
}

describe('plugins/README.md: the five-minute tutorial', function () {
  // Type-checking and a child mocha take seconds on a busy machine; nothing here measures time.
  this.timeout(120_000);
  const blocks = tutorialBlocks();
  const scratch = path.join(ROOT, '.scratch', `tutorial-${process.pid}`);
  const moduleFile = path.join(scratch, 'plugins/max-replicas.ts');
  const testFile = path.join(scratch, 'test/plugins/max-replicas.test.ts');

  before(() => {
    rmSync(scratch, { recursive: true, force: true });
    mkdirSync(path.dirname(testFile), { recursive: true });
    mkdirSync(path.dirname(moduleFile), { recursive: true });
    // The tutorial's imports climb to server/ from plugins/ and test/plugins/, as in the real layout (and
    // the compiler follows server/'s own imports of certs/ through the same links).
    for (const folder of ['server', 'certs']) symlinkSync(path.join(ROOT, folder), path.join(scratch, folder), 'dir');
    writeFileSync(moduleFile, blockOf(blocks, '1.', 'ts'));
    writeFileSync(testFile, blockOf(blocks, '4.', 'ts'));
    writeFileSync(
      path.join(scratch, 'tsconfig.json'),
      JSON.stringify({ extends: '../../tsconfig.json', include: ['plugins/*.ts', 'test/plugins/*.ts'] }),
    );
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('gives a module and a test that type-check with the project settings', async () => {
    const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
    await run(process.execPath, [tsc, '--noEmit', '-p', scratch], { cwd: ROOT }).catch(
      (err: Error & { stdout?: string }) => {
        assert.fail(`tsc refused the tutorial:\n${err.stdout ?? err.message}`);
      },
    );
  });

  it('gives a module and a test that lint and format clean', async () => {
    for (const file of [moduleFile, testFile]) {
      const text = readFileSync(file, 'utf8');
      assert.equal(await format(text, { ...(await resolveConfig(file)), filepath: file }), text);
    }
    await run(process.execPath, [path.join(ROOT, 'node_modules/eslint/bin/eslint.js'), moduleFile, testFile], {
      cwd: ROOT,
    });
  });

  it('gives a test that passes, run the way the tutorial says', async () => {
    const { stdout } = await run(
      process.execPath,
      [path.join(ROOT, 'node_modules/mocha/bin/mocha.js'), path.relative(ROOT, testFile)],
      { cwd: ROOT },
    );
    assert.match(stdout, /3 passing/);
  });

  it('registers the plugin in plugins/index.ts with a list prettier leaves as it is', async () => {
    const snippet = blockOf(blocks, '2.', 'ts');
    const listed = snippet.slice(snippet.indexOf('export const plugins'));
    const indexFile = path.join(ROOT, 'plugins/index.ts');
    assert.equal(await format(listed, { ...(await resolveConfig(indexFile)), filepath: indexFile }), listed);
    const index = readFileSync(indexFile, 'utf8');
    const current = /export const plugins = \[([^\]]*)\]/
      .exec(index)?.[1]
      ?.split(',')
      .map((s) => s.trim());
    const tutorial = /export const plugins = \[([^\]]*)\]/
      .exec(listed)?.[1]
      ?.split(',')
      .map((s) => s.trim());
    assert.deepEqual(tutorial?.filter(Boolean), [...(current ?? []).filter(Boolean), 'maxReplicas']);
  });

  it('turns it on with a gateway.yaml entry the gateway accepts', async () => {
    const { default: plugin } = (await import(moduleFile)) as { default: Plugin<unknown> };
    const [entry] = parse(blockOf(blocks, '3.', 'yaml')) as [{ plugin: string; mode: string; settings: unknown }];
    assert.deepEqual({ plugin: entry.plugin, mode: entry.mode }, { plugin: plugin.name, mode: 'warn' });
    assert.deepEqual(settingsOf(plugin, entry.settings), { max: 20 });
  });
});
