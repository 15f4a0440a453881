/**
 * Which npm packages a process of the command line loads: node's module hooks (module.register) append the
 * URL of every module the process imports to a file, one a line, and `packagesIn` names the packages of
 * node_modules among them. What a process loads is what it holds in memory, whether or not it uses it.
 */
import { readFile } from 'node:fs/promises';

/** Hooks, run on node's loader thread: every resolved URL appended to the file `initialize` is given. */
const HOOKS = `
import { appendFileSync } from 'node:fs';
let file;
export function initialize(data) { file = data.file; }
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(file, resolved.url + '\\n');
  return resolved;
}
`;

const dataUrl = (code: string): string => `data:text/javascript,${encodeURIComponent(code)}`;

/** Node options that make the process log the URL of each module it imports to `file` (after tsx's hooks). */
export function importLogOptions(file: string): string[] {
  const register =
    `import { register } from 'node:module';` +
    `register(${JSON.stringify(dataUrl(HOOKS))}, { data: { file: ${JSON.stringify(file)} } });`;
  return ['--import', 'tsx', '--import', dataUrl(register)];
}

/** The packages (`koa`, `@kubernetes/client-node`) whose modules the log names, sorted. */
export async function packagesIn(file: string): Promise<string[]> {
  const packages = new Set<string>();
  for (const url of (await readFile(file, 'utf8')).split('\n')) {
    // The last node_modules of the path: a dependency installed under another package is its own package.
    const name = [...url.matchAll(/\/node_modules\/((?:@[^/]+\/)?[^/]+)\//g)].at(-1)?.[1];
    if (name) packages.add(name);
  }
  return [...packages].sort();
}
