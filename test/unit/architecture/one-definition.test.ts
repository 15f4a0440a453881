/**
 * One name, one thing: no name is exported by the declarations of two modules of server/ (a function, class,
 * interface, type, enum or constant). Two `ReviewContext`s, two `runReview`s or a constant written in three
 * places leave a reader to find out which one is meant, and an import to pick the wrong one. A re-export
 * (`export { X } from`) is not a declaration: it names the one thing again.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SERVER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../server');

const isExported = (statement: ts.Statement): boolean =>
  ts.canHaveModifiers(statement) &&
  (ts.getModifiers(statement) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

/** The names a module's own top-level declarations export. */
export function exportedDeclarations(file: string, text: string): Set<string> {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const names = new Set<string>();
  for (const statement of source.statements) {
    if (!isExported(statement)) continue;
    if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) {
        if (ts.isIdentifier(declaration.name)) names.add(declaration.name.text);
      }
    } else if (
      (ts.isFunctionDeclaration(statement) ||
        ts.isClassDeclaration(statement) ||
        ts.isInterfaceDeclaration(statement) ||
        ts.isTypeAliasDeclaration(statement) ||
        ts.isEnumDeclaration(statement)) &&
      statement.name
    ) {
      names.add(statement.name.text);
    }
  }
  return names;
}

/** Each name exported by the declarations of more than one file, with those files. */
export function namesDefinedTwice(files: ReadonlyMap<string, string>): string[] {
  const definedIn = new Map<string, string[]>();
  for (const [file, text] of files) {
    for (const name of exportedDeclarations(file, text)) definedIn.set(name, [...(definedIn.get(name) ?? []), file]);
  }
  return [...definedIn]
    .filter(([, where]) => where.length > 1)
    .map(([name, where]) => `${name} is defined in ${where.sort().join(', ')}`)
    .sort();
}

function serverFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(SERVER, { recursive: true, encoding: 'utf8' })) {
    const file = entry.split(path.sep).join('/');
    if (file.endsWith('.ts')) files.set(file, readFileSync(path.join(SERVER, entry), 'utf8'));
  }
  return files;
}

describe('the names server/ exports', () => {
  it('are each defined in one module', function () {
    this.timeout(30_000); // parses every source file
    const files = serverFiles();
    assert.ok(files.has('dispatch/review-context.ts') && files.has('base/limits.ts'), [...files.keys()].join(', '));
    assert.deepEqual(namesDefinedTwice(files), []);
  });

  describe('the check itself', () => {
    const check = (files: Record<string, string>) => namesDefinedTwice(new Map(Object.entries(files)));

    it('names a function, type, interface, class, enum or constant exported from two files', () => {
      const kinds = [
        'export function X() {}',
        'export type X = string;',
        'export interface X {}',
        'export class X {}',
        'export enum X { A }',
        "export const X = 'x';",
      ];
      for (const declaration of kinds) {
        assert.deepEqual(check({ 'http/a.ts': declaration, 'dispatch/b.ts': 'export const X = 1;' }), [
          'X is defined in dispatch/b.ts, http/a.ts',
        ]);
      }
    });

    it('leaves out re-exports, local names and declarations merged within one file', () => {
      assert.deepEqual(
        check({
          'base/limits.ts': 'export function describeValue() {}',
          'plugin-api/index.ts': "export { describeValue } from '../base/limits.js';",
          'config/reader.ts': 'function describeValue() {}\nconst X = 1;',
          'admission/types.ts': 'export interface X {}\nexport namespace X {}\nexport const X = 1;',
        }),
        [],
      );
    });
  });
});
