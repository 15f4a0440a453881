/**
 * The source reads one way: no folder of server/ imports, directly or through others, a folder that imports it
 * back, no file imports, directly or through others, a file of its own folder that imports it back (in server/
 * and plugins/), and no folder imports the composition root (server/gateway.ts, cli.ts, main.ts: the files
 * directly in server/), which gets what it wires passed in.
 *
 * Each folder of server/ is a node, with whatever lies below it (a subfolder is part of its folder, so that a
 * module cannot step out of a cycle by moving one floor down); an edge is any static `import` or `export … from`
 * of a relative path, `import type` included: a cycle of types is still a cycle for whoever reads the code.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SERVER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../server');

/** The relative module specifiers a file imports or re-exports statically. */
export function relativeImports(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const specifiers: string[] = [];
  for (const statement of source.statements) {
    if (
      (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) &&
      statement.moduleSpecifier &&
      ts.isStringLiteral(statement.moduleSpecifier) &&
      statement.moduleSpecifier.text.startsWith('.')
    ) {
      specifiers.push(statement.moduleSpecifier.text);
    }
  }
  return specifiers;
}

/** One import of a module of server/ from another: the importing file, what it names, and both folders. */
interface FolderImport {
  readonly file: string;
  readonly specifier: string;
  readonly from: string;
  readonly to: string;
}

/** A file's top folder below server/ ('' for server/ itself). */
const folderOf = (file: string): string => (file.includes('/') ? file.slice(0, file.indexOf('/')) : '');

/** A folder's name for messages. */
const folderName = (dir: string): string => (dir === '' ? 'server/' : dir);

/** The module a relative specifier of `file` names: its path in the same tree, `.js` read as `.ts`. */
const targetOf = (file: string, specifier: string): string =>
  path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)).replace(/\.js$/, '.ts');

/** Every import between modules of server/ (those of modules outside it left out). */
function importsBetween(files: ReadonlyMap<string, string>): FolderImport[] {
  const found: FolderImport[] = [];
  for (const [file, text] of files) {
    for (const specifier of relativeImports(file, text)) {
      const target = targetOf(file, specifier);
      if (!target.startsWith('../')) found.push({ file, specifier, from: folderOf(file), to: folderOf(target) });
    }
  }
  return found;
}

/**
 * Each cycle of imports between the files of one folder (`files`: paths relative to the tree's root, with `/`,
 * mapped to their text), each file with the name it takes the next one by.
 */
export function fileCycles(files: ReadonlyMap<string, string>, tree: string): string[] {
  const edges = new Map<string, Map<string, string>>();
  for (const [file, text] of files) {
    const out = new Map<string, string>();
    for (const specifier of relativeImports(file, text)) {
      const target = targetOf(file, specifier);
      if (files.has(target) && path.posix.dirname(target) === path.posix.dirname(file)) out.set(target, specifier);
    }
    edges.set(file, out);
  }
  return cyclesOf(edges).map((cycle) => {
    const hops = cycle.map(
      (file, i) => `${tree}${file} imports ${edges.get(file)!.get(cycle[(i + 1) % cycle.length]!)!}`,
    );
    const folder = path.posix.dirname(cycle[0]!);
    return `import cycle inside ${tree}${folder === '.' ? '' : `${folder}/`}: ${hops.join('; ')}`;
  });
}

/** The folders each folder imports, each with the first import that shows it. */
export function folderEdges(files: ReadonlyMap<string, string>): Map<string, Map<string, FolderImport>> {
  const edges = new Map<string, Map<string, FolderImport>>();
  for (const found of importsBetween(files)) {
    if (found.to === found.from) continue;
    let out = edges.get(found.from);
    if (!out) edges.set(found.from, (out = new Map<string, FolderImport>()));
    if (!out.has(found.to)) out.set(found.to, found);
  }
  return edges;
}

/**
 * Everything wrong with the imports of `files` (paths relative to server/, with `/`, mapped to their text):
 * each import of the composition root from a folder, and each cycle between folders.
 */
export function importProblems(files: ReadonlyMap<string, string>): string[] {
  const problems = importsBetween(files)
    .filter(({ from, to }) => to === '' && from !== '')
    .map(
      ({ file, specifier }) =>
        `server/${file} imports the composition root: ${specifier} (pass what it needs in instead)`,
    );
  const edges = folderEdges(files);
  for (const cycle of cyclesOf(edges)) {
    const hops = cycle.map((dir, i) => {
      const { file, specifier } = edges.get(dir)!.get(cycle[(i + 1) % cycle.length]!)!;
      return `server/${file} imports ${specifier}`;
    });
    problems.push(
      `import cycle between folders: ${[...cycle, cycle[0]!].map(folderName).join(' → ')} (${hops.join('; ')})`,
    );
  }
  return [...problems, ...fileCycles(files, 'server/')];
}

/**
 * One cycle through each group of folders that reach one another (Tarjan's strongly connected components),
 * each the shortest way round from its alphabetically first folder.
 */
function cyclesOf(edges: ReadonlyMap<string, ReadonlyMap<string, unknown>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const group: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        group.push(member);
      } while (member !== node);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const node of [...edges.keys()].sort()) if (!index.has(node)) visit(node);
  return groups.map((group) => shortestLoop(group[0]!, new Set(group), edges));
}

/** The shortest path from `start` back to itself within `group`, without repeating `start`. */
function shortestLoop(
  start: string,
  group: ReadonlySet<string>,
  edges: ReadonlyMap<string, ReadonlyMap<string, unknown>>,
): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const next of [...(edges.get(node)?.keys() ?? [])].sort()) {
      if (!group.has(next)) continue;
      if (next === start) {
        const loop = [node];
        while (loop[0] !== start) loop.unshift(previous.get(loop[0]!)!);
        return loop;
      }
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return [start];
}

/** The TypeScript files below `root`, by their path relative to it. */
function filesBelow(root: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(root, { recursive: true, encoding: 'utf8' })) {
    const file = entry.split(path.sep).join('/');
    if (file.endsWith('.ts')) files.set(file, readFileSync(path.join(root, entry), 'utf8'));
  }
  return files;
}

const serverFiles = (): Map<string, string> => filesBelow(SERVER);

describe('imports between the folders of server/', () => {
  it('form no cycle, and no folder imports the composition root', function () {
    this.timeout(30_000); // parses every source file
    const files = serverFiles();
    assert.ok(files.has('chain/chain.ts') && files.has('gateway.ts'), [...files.keys()].join(', '));
    assert.deepEqual(importProblems(files), []);
  });

  it('and of plugins/ form no cycle inside a folder', () => {
    const files = filesBelow(path.join(SERVER, '../plugins'));
    assert.ok(files.has('index.ts'), [...files.keys()].join(', '));
    assert.deepEqual(fileCycles(files, 'plugins/'), []);
  });

  it('are the ones docs/architecture.md lists for each folder', () => {
    const edges = folderEdges(serverFiles());
    const doc = readFileSync(path.join(SERVER, '../docs/architecture.md'), 'utf8');
    const listed = new Map<string, string[]>();
    for (const [, folder, imports] of doc.matchAll(/^\| `([\w/-]+)\/` +\|[^|]*\| ([^|]*?) *\|$/gm)) {
      listed.set(folder!, imports === '—' ? [] : imports!.replace(/ \([^)]*\)/g, '').split(', '));
    }
    const actual = new Map(
      [...edges].filter(([from]) => from !== '').map(([from, out]) => [from, [...out.keys()].sort()]),
    );
    for (const folder of listed.keys()) if (!actual.has(folder)) actual.set(folder, []);
    assert.deepEqual(new Map([...listed].sort()), new Map([...actual].sort()));
  });

  describe('the check itself', () => {
    const check = (files: Record<string, string>) => importProblems(new Map(Object.entries(files)));

    it('names a cycle, type imports and re-exports included, with an import for each step of it', () => {
      assert.deepEqual(
        check({
          'chain/manager.ts': "import type { Runtime } from '../providers/runtime.js';",
          'providers/runtime.ts': "export { step } from '../admission/step.js';",
          'admission/step.ts': "import { manager } from '../chain/manager.js';\nimport { a } from './a.js';",
          'admission/a.ts': '',
        }),
        [
          'import cycle between folders: admission → chain → providers → admission ' +
            '(server/admission/step.ts imports ../chain/manager.js; ' +
            'server/chain/manager.ts imports ../providers/runtime.js; ' +
            'server/providers/runtime.ts imports ../admission/step.js)',
        ],
      );
    });

    it('takes a subfolder as part of its folder, and ignores imports from outside server/', () => {
      assert.deepEqual(
        check({
          'chain/step.ts': "import type { Plugin } from '../plugin-api/types.js';",
          'plugin-api/types.ts': "import { x } from '../../plugins/index.js';",
          'plugin-api/testing/harness.ts': "import { step } from '../../chain/step.js';\nimport '../types.js';",
        }),
        [
          'import cycle between folders: chain → plugin-api → chain ' +
            '(server/chain/step.ts imports ../plugin-api/types.js; ' +
            'server/plugin-api/testing/harness.ts imports ../../chain/step.js)',
        ],
      );
      assert.deepEqual(
        check({
          'chain/step.ts': "import type { Plugin } from '../plugin-api/types.js';",
          'plugin-api/types.ts': "import { x } from '../../plugins/index.js';",
          'plugin-testing/harness.ts': "import { step } from '../chain/step.js';\nimport '../plugin-api/types.js';",
        }),
        [],
      );
    });

    it('names a cycle between the files of one folder, and only within a folder', () => {
      assert.deepEqual(
        check({
          'steps/step.ts': "import type { Plan } from './step-graph.js';\nimport { x } from '../trace/x.js';",
          'steps/step-graph.ts': "import type { Step } from './step.js';",
          'trace/x.ts': "import type { Step } from '../steps/step.js';",
        }),
        [
          'import cycle between folders: steps → trace → steps ' +
            '(server/steps/step.ts imports ../trace/x.js; server/trace/x.ts imports ../steps/step.js)',
          'import cycle inside server/steps/: server/steps/step-graph.ts imports ./step.js; ' +
            'server/steps/step.ts imports ./step-graph.js',
        ],
      );
      assert.deepEqual(
        check({ 'steps/a.ts': "import { b } from './b.js';", 'steps/b.ts': "import { c } from '../trace/c.js';" }),
        [],
      );
    });

    it('names a folder module that imports a root file, and lets the root import any folder', () => {
      assert.deepEqual(
        check({
          'gateway.ts': "import { mode } from './kube/cluster-mode.js';",
          'kube/cluster-mode.ts': "import type { Gateway } from '../gateway.js';",
        }),
        [
          'server/kube/cluster-mode.ts imports the composition root: ../gateway.js (pass what it needs in instead)',
          'import cycle between folders: server/ → kube → server/ ' +
            '(server/gateway.ts imports ./kube/cluster-mode.js; server/kube/cluster-mode.ts imports ../gateway.js)',
        ],
      );
    });
  });
});
