/**
 * What the repository ships, told apart from what a plugin author adds to it by following plugins/README.md:
 * the shipped plugins are the ones its "Shipped plugins" section documents; an author's own plugin is listed in
 * plugins/index.ts and configured in gateway.yaml, but not documented there. The checks of the shipped plugin
 * list and of the shipped gateway.yaml look through these, so that an author's addition never fails them.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { availablePlugins } from '../../plugins/index.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The names of the plugins plugins/README.md documents under "## Shipped plugins", in its order. */
export function shippedPluginNames(root: string = ROOT): string[] {
  const text = readFileSync(path.join(root, 'plugins/README.md'), 'utf8');
  const start = text.indexOf('\n## Shipped plugins\n');
  if (start < 0) throw new Error('plugins/README.md has no "## Shipped plugins" section');
  const end = text.indexOf('\n## ', start + 1);
  const section = text.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^### ([a-z0-9-]+)$/gm)].map((m) => m[1]!);
}

/**
 * How a refused plugin name's message lists the known ones: those of plugins/index.ts, shipped or an
 * author's, so the message's tests hold whatever is listed.
 */
export const KNOWN_PLUGINS = `(known: ${availablePlugins
  .map((p) => p.name)
  .sort()
  .join(', ')}): a plugin module is known once plugins/index.ts lists it`;

/** `default-labels` → `defaultLabels`: the name plugins/index.ts imports a plugin's module as. */
export const identifierOf = (name: string): string => name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** The chain entry's plugin name, or undefined for a provider entry (or text that is not one entry). */
function pluginOf(entryLines: readonly string[]): string | undefined {
  const parsed: unknown = parse(entryLines.join('\n'));
  const [entry] = Array.isArray(parsed) ? (parsed as unknown[]) : [];
  const plugin = (entry as { plugin?: unknown } | undefined)?.plugin;
  return typeof plugin === 'string' ? plugin : undefined;
}

/**
 * `gateway.yaml`'s text without the chain entries of plugins that are not shipped: the file as shipped, byte for
 * byte, when all an author did was add entries for plugins of their own. The chain is read as the shipped file
 * writes it, a block list under the top-level `chain:` key; an entry runs from its `- ` to the next entry or the
 * next line indented no deeper than the dash.
 */
export function withoutAddedEntries(text: string, shipped: readonly string[]): string {
  const kept: string[] = [];
  let inChain = false;
  let dash = -1;
  let entry: string[] | undefined;
  // Blank lines after an entry belong to whatever follows it: to the entry only if it goes on below them.
  let blanks: string[] = [];
  const close = () => {
    if (entry) {
      const plugin = pluginOf(entry);
      if (plugin === undefined || shipped.includes(plugin)) kept.push(...entry);
    }
    entry = undefined;
  };
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      blanks.push(line);
      continue;
    }
    const indent = line.length - line.trimStart().length;
    const item = /^(\s*)- /.exec(line);
    if (indent === 0) {
      close();
      inChain = /^chain:\s*(#.*)?$/.test(line);
      dash = -1;
    } else if (inChain && item && (dash < 0 || item[1]!.length === dash)) {
      close();
      dash = item[1]!.length;
    } else if (entry && indent <= dash) {
      close();
    }
    (entry ?? kept).push(...blanks);
    blanks = [];
    if (inChain && item && item[1]!.length === dash && !entry) entry = [line];
    else (entry ?? kept).push(line);
  }
  close();
  kept.push(...blanks);
  return kept.join('\n');
}
