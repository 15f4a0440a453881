/**
 * Where a field of gateway.yaml is written: maps a ConfigError's field path (`chain[2].settings.labels.team`)
 * back to the YAML node, so the message can name its line and column. A field that is not written (a
 * required one left out) is placed at its nearest written ancestor.
 */
import { isAlias, isMap, isNode, isScalar, isSeq, type Document, type LineCounter, type Node } from 'yaml';
import { ConfigError, type SourcePosition } from '../base/errors.js';

/** The position of a field path in the document; undefined when the document has no content. */
export type LocateField = (fieldPath: string) => SourcePosition | undefined;

/** The map entry whose key `path` starts with (the longest: keys such as label names may hold dots). */
function entryFor(map: Node, path: string): Step | undefined {
  if (!isMap(map)) return undefined;
  let found: Step | undefined;
  let length = -1;
  for (const pair of map.items) {
    if (!isScalar(pair.key)) continue;
    const key = String(pair.key.value);
    const fits = path === key || path.startsWith(`${key}.`) || path.startsWith(`${key}[`);
    if (fits && key.length > length) {
      length = key.length;
      found = { target: pair.key, below: isNode(pair.value) ? pair.value : null, rest: path.slice(key.length) };
    }
  }
  return found;
}

/** One step down a field path: the key or list item it names, the node below it, and the path left. */
interface Step {
  readonly target: Node;
  readonly below: Node | null;
  readonly rest: string;
}

function stepInto(node: Node, path: string): Step | undefined {
  const index = /^\[(\d+)\]/.exec(path);
  if (!index) return entryFor(node, path);
  const item: unknown = isSeq(node) ? node.items[Number(index[1])] : undefined;
  return isNode(item) ? { target: item, below: item, rest: path.slice(index[0].length) } : undefined;
}

export function yamlFieldLocator(doc: Document, lineCounter: LineCounter): LocateField {
  const at = (node: Node | null): SourcePosition | undefined => {
    const offset = node?.range?.[0];
    return offset === undefined ? undefined : lineCounter.linePos(offset);
  };
  return (fieldPath) => {
    let node = doc.contents;
    let position = at(node);
    let rest = fieldPath;
    while (rest !== '' && node) {
      const resolved = isAlias(node) ? node.resolve(doc) : node;
      const step = resolved && stepInto(resolved, rest);
      if (!step) break;
      position = at(step.target) ?? position;
      node = step.below;
      rest = step.rest.replace(/^\./, '');
    }
    return position;
  };
}

/** `err` with the position of its field when it is a ConfigError about `file` that has none yet. */
export function locateConfigError(err: unknown, file: string, locate: LocateField | undefined): unknown {
  if (!(err instanceof ConfigError) || err.file !== file || err.position || !locate) return err;
  const position = locate(err.path);
  return position ? err.at(position) : err;
}
