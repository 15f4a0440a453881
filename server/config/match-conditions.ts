/**
 * `matchConditions` of a chain entry or an AdmissionProvider (README "Match conditions"): CEL expressions that
 * must all be true for the entry's steps to run, with the webhook's semantics. Compiled when the configuration
 * loads.
 */
import type { CelProgram, Declaration } from '../cel/index.js';
import { boundedList, program, uniqueName } from './cel-field.js';
import { isQualifiedName, QUALIFIED_NAME_RULE } from './names.js';
import { childPath, type Reader } from './reader.js';

/** As many as the apiserver accepts on a webhook or a policy. */
export const MAX_MATCH_CONDITIONS = 64;

/**
 * What a condition reads: a webhook condition's variables (`authorizer` aside), and `namespaceObject` as a
 * policy's conditions do (the reviewer looks the namespace up when one reads it). Not `params`, nor `variables`.
 */
export const CONDITION_DECLARATIONS: readonly Declaration[] = ['object', 'oldObject', 'request', 'namespaceObject'];

export interface MatchCondition {
  readonly name: string;
  readonly program: CelProgram;
}

/** The conditions at `p`, compiled; undefined when there are none. */
export function readMatchConditions(
  r: Reader,
  value: unknown,
  p: string,
  declarations: readonly Declaration[] = CONDITION_DECLARATIONS,
): MatchCondition[] | undefined {
  const seen = new Set<string>();
  const conditions = boundedList(r, value, p, MAX_MATCH_CONDITIONS).map((item, i) => {
    const at = childPath(p, i);
    const m = r.map(item, at, ['name', 'expression'], false);
    const name = r.requiredString(m.name, childPath(at, 'name'));
    if (!isQualifiedName(name)) r.fail(childPath(at, 'name'), `expected a name of ${QUALIFIED_NAME_RULE}`, name);
    uniqueName(r, seen, name, childPath(at, 'name'));
    const compiled = program(r, m.expression, childPath(at, 'expression'), {
      declarations,
      resultType: 'bool',
    });
    return { name, program: compiled };
  });
  return conditions.length > 0 ? conditions : undefined;
}
