/**
 * plugins/README.md's five-minute tutorial, followed to the letter: its module and its test are written
 * where the tutorial says (inside a scratch copy of the layout, so the repository's own plugin list is left
 * alone), type-checked with the project's compiler settings, linted and formatted, and the test is run.
 * The `plugins/index.ts` snippet must be what prettier would write and list the shipped plugins, and the
 * `gateway.yaml` entry must be accepted by the gateway's config reader with the tutorial's plugin registered.
 * Followed in a scratch copy of the repository, the suite's checks of the shipped plugin list and the shipped
 * gateway.yaml must still pass: an author's plugin is not a mistake in them.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { format, resolveConfig } from 'prettier';
import { parse } from 'yaml';
import type { Plugin } from '../../server/plugin-api/index.js';
import { settingsOf } from '../../server/plugin-testing/index.js';
import { availablePlugins } from '../../plugins/index.js';
import { identifierOf, shippedPluginNames } from '../helpers/shipped-plugins.js';

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

  it('registers the plugin in plugins/index.ts after the shipped ones, with a list prettier leaves as it is', async () => {
    const snippet = blockOf(blocks, '2.', 'ts');
    const listed = snippet.slice(snippet.indexOf('export const plugins'));
    const indexFile = path.join(ROOT, 'plugins/index.ts');
    assert.equal(await format(listed, { ...(await resolveConfig(indexFile)), filepath: indexFile }), listed);
    const tutorial = /export const plugins = \[([^\]]*)\]/
      .exec(listed)?.[1]
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    assert.deepEqual(tutorial, [...shippedPluginNames().map(identifierOf), 'maxReplicas']);
  });

  it("once followed in a copy of the repository, leaves the suite's checks of what is shipped passing", async () => {
    const copy = path.join(ROOT, '.scratch', `followed-${process.pid}`);
    rmSync(copy, { recursive: true, force: true });
    try {
      for (const part of ['server', 'plugins', 'test', 'certs', 'manifests', 'gateway.yaml', 'package.json']) {
        cpSync(path.join(ROOT, part), path.join(copy, part), { recursive: true });
      }
      for (const file of ['tsconfig.json', '.mocharc.json']) cpSync(path.join(ROOT, file), path.join(copy, file));
      symlinkSync(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
      // 1. and 4.: the module and its test.
      writeFileSync(path.join(copy, 'plugins/max-replicas.ts'), blockOf(blocks, '1.', 'ts'));
      writeFileSync(path.join(copy, 'test/plugins/max-replicas.test.ts'), blockOf(blocks, '4.', 'ts'));
      // 2.: the import next to the others, the list as the tutorial writes it.
      const snippet = blockOf(blocks, '2.', 'ts');
      const indexFile = path.join(copy, 'plugins/index.ts');
      const index = readFileSync(indexFile, 'utf8');
      const lastImport = index.lastIndexOf('\nimport ') + 1;
      const afterImports = index.indexOf('\n', lastImport) + 1;
      const list = /export const plugins = \[[^\]]*\] as const;\n/;
      assert.match(index, list);
      writeFileSync(
        indexFile,
        `${index.slice(0, afterImports)}${snippet.slice(0, snippet.indexOf('\n') + 1)}${index.slice(afterImports)}`.replace(
          list,
          snippet.slice(snippet.indexOf('export const plugins')),
        ),
      );
      // 3.: the entry at the end of chain, the file's last key.
      const gatewayYaml = readFileSync(path.join(copy, 'gateway.yaml'), 'utf8');
      assert.match(gatewayYaml, /\nchain:\n(?:[ #].*\n|\n)*$/, 'chain is the last key of gateway.yaml');
      const entry = blockOf(blocks, '3.', 'yaml').replace(/^(?=.)/gm, '  ');
      writeFileSync(path.join(copy, 'gateway.yaml'), `${gatewayYaml}${entry}`);

      const report = path.join(copy, 'report.json');
      const files = [
        'test/unit/config/validate.test.ts',
        'test/unit/plugins-tutorial.test.ts',
        'test/plugins/max-replicas.test.ts',
        'test/integration/cli.test.ts',
        'test/integration/cli-manifests.test.ts',
        'test/integration/provider-command.test.ts',
      ];
      const grep = 'shipped gateway.yaml|registers the plugin|documents as shipped|unknown plugin|max-replicas';
      const mocha = path.join(ROOT, 'node_modules/mocha/bin/mocha.js');
      await run(
        process.execPath,
        [mocha, ...files, '--grep', grep, '--reporter', 'json', '--reporter-option', `output=${report}`],
        { cwd: copy },
      ).catch(() => undefined);
      const results = JSON.parse(readFileSync(report, 'utf8')) as {
        passes: Array<{ fullTitle: string }>;
        failures: Array<{ fullTitle: string; err: { message: string } }>;
      };
      assert.deepEqual(
        {
          failures: results.failures.map((f) => `${f.fullTitle}: ${f.err.message}`),
          passes: results.passes.map((p) => p.fullTitle).sort(),
        },
        {
          failures: [],
          passes: [
            'admission-gateway command line given an invalid gateway.yaml serve exits 2 naming the file, line, column and field for an unknown plugin name, listing the known ones',
            'admission-gateway manifests refuses with exit code 2 and a message naming the problem given an unknown plugin in the config (its line and field path are named)',
            'admission-gateway manifests renders the shipped gateway.yaml as Ignore webhooks only, without a warning: it blocks nobody',
            'admission-gateway provider --plugin … --register (in this process) refuses an unknown plugin with exit code 2, naming the flag',
            'max-replicas lets one close to the limit through with a warning',
            'max-replicas refuses a Deployment with more replicas than allowed, naming the field',
            'max-replicas refuses a maximum that is not a positive integer',
            'plugins/README.md: the five-minute tutorial registers the plugin in plugins/index.ts after the shipped ones, with a list prettier leaves as it is',
            'plugins/index.ts lists every plugin plugins/README.md documents as shipped, under its documented name',
            'the shipped gateway.yaml is as safe as the installed config: the chain of manifests/config.yaml, mutating steps Ignore',
            'the shipped gateway.yaml is the embedded default, byte for byte, less the entries an author added for plugins of their own',
            'the shipped gateway.yaml starts validating plugins in warn mode so a first install blocks nobody',
          ],
        },
      );
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it('turns it on with a gateway.yaml entry the gateway accepts', async () => {
    const { default: plugin } = (await import(moduleFile)) as { default: Plugin<unknown> };
    const [entry] = parse(blockOf(blocks, '3.', 'yaml')) as [{ plugin: string; mode: string; settings: unknown }];
    assert.deepEqual({ plugin: entry.plugin, mode: entry.mode }, { plugin: plugin.name, mode: 'warn' });
    assert.deepEqual(settingsOf(plugin, entry.settings), { max: 20 });
  });
});

describe('plugins/index.ts', () => {
  it('lists every plugin plugins/README.md documents as shipped, under its documented name', () => {
    const listed = availablePlugins.map((p) => p.name);
    assert.deepEqual(
      shippedPluginNames().filter((name) => !listed.includes(name)),
      [],
    );
  });
});
