/**
 * What a mutating step declares about the object (README "Declared write sets"): `supplies`, the JSON
 * pointers it writes, and `dependsOn`, the pointers it reads or the names of steps it must run after. Read
 * alike for chain entries, AdmissionProvider specs and discovered handlers. A pointer may use `*` for any one
 * segment (`/spec/containers/*\/resources`); each covers everything below it.
 */
import { JSON_POINTER_PATTERN, MAX_DECLARED_PATHS, MAX_DECLARED_PATH_CHARS } from '../base/step-rules.js';
import { childPath, type Reader } from './reader.js';
import { isDnsLabel } from './names.js';

export { MAX_DECLARED_PATHS, MAX_DECLARED_PATH_CHARS };

export interface StepDeclarations {
  /** JSON pointers (with `*` segments) the step writes. Present: the step is declared. */
  readonly supplies?: readonly string[];
  /** JSON pointers (with `*` segments) the step reads, and names of steps it runs after. */
  readonly dependsOn?: readonly string[];
}

export const DECLARATION_FIELDS = ['supplies', 'dependsOn'] as const;

const JSON_POINTER = new RegExp(JSON_POINTER_PATTERN);

/** Whether `text` is a JSON pointer below the root: `/` then segments, `~` only in `~0` and `~1`. */
export function isPointerPattern(text: string): boolean {
  return JSON_POINTER.test(text);
}

function readList(r: Reader, value: unknown, p: string, names: boolean): string[] | undefined {
  const list = r.stringList(value, p);
  if (list === undefined) return undefined;
  if (list.length > MAX_DECLARED_PATHS) r.fail(p, `expected at most ${MAX_DECLARED_PATHS} entries`, list.length);
  list.forEach((item, i) => {
    const at = childPath(p, i);
    if (item.length > MAX_DECLARED_PATH_CHARS) r.fail(at, `expected at most ${MAX_DECLARED_PATH_CHARS} characters`);
    if (isPointerPattern(item)) return;
    if (names && isDnsLabel(item)) return;
    r.fail(
      at,
      names
        ? 'expected a JSON pointer below the root (/metadata/labels/team, * for any one segment) or a step name'
        : 'expected a JSON pointer below the root (/metadata/labels/team, * for any one segment)',
      item,
    );
  });
  return [...new Set(list)];
}

/** The declarations of a map (entry, spec or handler); only those present are returned. */
export function readStepDeclarations(r: Reader, m: Record<string, unknown>, path: string): StepDeclarations {
  const supplies = readList(r, m.supplies, childPath(path, 'supplies'), false);
  const dependsOn = readList(r, m.dependsOn, childPath(path, 'dependsOn'), true);
  return {
    ...(supplies !== undefined ? { supplies } : {}),
    ...(dependsOn !== undefined ? { dependsOn } : {}),
  };
}
