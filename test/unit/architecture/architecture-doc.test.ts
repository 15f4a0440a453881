/**
 * docs/architecture.md is a map of the source, so it names every module of server/: by its path, or by its file
 * name in a paragraph or list item that names its folder (`server/kube/`: `kube-config.ts` …). Its table of
 * folders has one row per folder; the imports each row lists are checked against the code in imports.test.ts.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The doc's paragraphs, list items and table rows: the places a folder and its files are named together. */
const blocksOf = (doc: string): string[] => doc.split(/\n(?=\s*(?:- |\d+\. |\| )|\n)/);

/** The files of `files` (paths below the repository, with `/`) that `doc` names nowhere. */
export function unnamedFiles(doc: string, files: readonly string[]): string[] {
  const blocks = blocksOf(doc);
  return files.filter((file) => {
    if (doc.includes(`\`${file}\``)) return false;
    const folder = `${path.posix.dirname(file)}/`;
    const name = `\`${path.posix.basename(file)}\``;
    return !blocks.some((block) => block.includes(`\`${folder}`) && block.includes(name));
  });
}

/** The folders the table of folders has more than one row for. */
export function duplicatedRows(doc: string): string[] {
  const folders = [...doc.matchAll(/^\| `([\w/-]+)\/` +\|/gm)].map(([, folder]) => folder!);
  return folders.filter((folder, i) => folders.indexOf(folder) !== i);
}

function serverFiles(): string[] {
  return readdirSync(path.join(ROOT, 'server'), { recursive: true, encoding: 'utf8' })
    .map((entry) => `server/${entry.split(path.sep).join('/')}`)
    .filter((file) => file.endsWith('.ts'))
    .sort();
}

describe('docs/architecture.md', () => {
  const doc = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');

  it('names every module of server/', () => {
    const files = serverFiles();
    assert.ok(files.includes('server/dispatch/reviewer.ts'), files.join(', '));
    assert.deepEqual(unnamedFiles(doc, files), []);
  });

  it('has one row per folder in its table', () => {
    assert.ok(doc.includes('| `dispatch/`'));
    assert.deepEqual(duplicatedRows(doc), []);
  });

  describe('the check itself', () => {
    it('takes a file named by its path, or by its name beside its folder, and names the others', () => {
      const text = [
        '1. **Reviewer** — `server/dispatch/reviewer.ts` runs the phases.',
        '- **Cluster mode** — `server/kube/`: `kube-config.ts` finds credentials,',
        '  `cluster-mode.ts` wires the rest.',
        '- **Audit** — `server/audit/`: `audit.ts`; `kube-errors.ts` is elsewhere.',
      ].join('\n');
      assert.deepEqual(
        unnamedFiles(text, [
          'server/dispatch/reviewer.ts',
          'server/dispatch/mutate.ts',
          'server/kube/kube-config.ts',
          'server/kube/cluster-mode.ts',
          'server/kube/kube-errors.ts',
        ]),
        ['server/dispatch/mutate.ts', 'server/kube/kube-errors.ts'],
      );
    });

    it('names a folder with two rows', () => {
      const table = [
        '| Folder | Owns | Imports |',
        '| --- | --- | --- |',
        '| `protocol/` | versions | admission |',
        '| `config/` | gateway.yaml | base |',
        '| `protocol/` | schemas | admission, base |',
      ].join('\n');
      assert.deepEqual(duplicatedRows(table), ['protocol']);
    });
  });
});
