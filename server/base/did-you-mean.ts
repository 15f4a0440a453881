/** "Did you mean …?" for a name that is not one of the known ones: a config field, a plugin, a CLI option. */
import { distance } from 'fastest-levenshtein';

/**
 * The known name closest to `input`, when it is close enough to be a likely typo: within a third of its
 * length in edits (two for a name of four or more characters, so a swapped pair counts), or the same name in
 * another case. Undefined when nothing is that close.
 */
export function closestName(input: string, known: Iterable<string>): string | undefined {
  const lower = input.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const name of known) {
    if (name.toLowerCase() === lower) return name;
    const d = distance(lower, name.toLowerCase());
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  const allowed = input.length < 4 ? 1 : Math.max(2, Math.floor(input.length / 3));
  return best !== undefined && bestDistance <= allowed ? best : undefined;
}

/** ` (did you mean "x"?)` to append to a message, or an empty string. */
export function didYouMean(input: string, known: Iterable<string>): string {
  const name = closestName(input, known);
  return name === undefined ? '' : ` (did you mean "${name}"?)`;
}

/** ` (did you mean "x"?)` for a likely typo, else ` (known: a, b, c)`: never leaves the reader guessing. */
export function didYouMeanOrKnown(input: string, known: readonly string[]): string {
  return didYouMean(input, known) || ` (known: ${known.join(', ')})`;
}

/**
 * Why a plugin name is refused: the closest known name for a likely typo, else the known ones and where a
 * plugin becomes known (a module written but not listed in plugins/index.ts is the usual cause).
 */
export function unknownPlugin(name: string, known: Iterable<string>): string {
  const names = [...known].sort();
  const closest = didYouMean(name, names);
  if (closest) return `unknown plugin "${name}"${closest}`;
  return `unknown plugin "${name}" (known: ${names.join(', ')}): a plugin module is known once plugins/index.ts lists it`;
}
