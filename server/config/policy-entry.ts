/**
 * Reads a `policy` chain entry's body (variables, validations, auditAnnotations, mutations; its matchConditions are every
 * entry's, match-conditions.ts) from gateway.yaml and compiles every expression, so that a mistake is refused when
 * the configuration loads: the error names the field and, through the loader, the file and line; its message says
 * where in the expression.
 */
import { boundedList, program, uniqueName } from './cel-field.js';
import { isQualifiedName, QUALIFIED_NAME_RULE } from './names.js';
import { childPath, type Reader } from './reader.js';
import {
  PATCH_TYPES,
  VALIDATION_REASONS,
  type PolicyAuditAnnotation,
  type PolicyMutation,
  type PolicySpec,
  type PolicyValidation,
  type PolicyVariable,
} from '../policy/policy-spec.js';

/** The entry's fields besides the common ones. */
export const POLICY_FIELDS = ['policy', 'variables', 'validations', 'auditAnnotations', 'mutations'];
/** Bounds of our own: each is compiled once and may run on every review. */
export const MAX_VARIABLES = 64;
export const MAX_VALIDATIONS = 64;
export const MAX_AUDIT_ANNOTATIONS = 20;
export const MAX_MUTATIONS = 16;

/** A variable is read as `variables.<name>`: a CEL identifier. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

function readVariables(r: Reader, value: unknown, p: string): PolicyVariable[] {
  const names: string[] = [];
  return boundedList(r, value, p, MAX_VARIABLES).map((item, i) => {
    const at = childPath(p, i);
    const m = r.map(item, at, ['name', 'expression'], false);
    const name = r.requiredString(m.name, childPath(at, 'name'));
    if (!IDENTIFIER.test(name)) r.fail(childPath(at, 'name'), 'expected a CEL identifier (letters, digits, _)', name);
    if (names.includes(name)) r.fail(childPath(at, 'name'), `the name "${name}" is already used in this list`);
    // The engine finds a value's type by its `constructor`: a variable of that name would make `variables` unusable.
    if (name === 'constructor')
      r.fail(
        childPath(at, 'name'),
        'the name "constructor" is not supported here (the CEL engine takes it for the type of `variables`); choose another',
      );
    // As in the apiserver, a variable reads only those defined before it.
    const compiled = program(r, m.expression, childPath(at, 'expression'), { variables: [...names] });
    names.push(name);
    return { name, program: compiled };
  });
}

function readValidations(r: Reader, value: unknown, p: string, variables: readonly string[]): PolicyValidation[] {
  return boundedList(r, value, p, MAX_VALIDATIONS).map((item, i) => {
    const at = childPath(p, i);
    const m = r.map(item, at, ['expression', 'message', 'messageExpression', 'reason'], false);
    const compiled = program(r, m.expression, childPath(at, 'expression'), { variables, resultType: 'bool' });
    const message = r.string(m.message, childPath(at, 'message'));
    if (message !== undefined && /[\r\n]/.test(message))
      r.fail(childPath(at, 'message'), 'expected a message without line breaks');
    const messageProgram =
      m.messageExpression === undefined
        ? undefined
        : program(r, m.messageExpression, childPath(at, 'messageExpression'), { variables, resultType: 'string' });
    return {
      program: compiled,
      ...(message ? { message } : {}),
      ...(messageProgram ? { messageProgram } : {}),
      reason: r.oneOf(m.reason, childPath(at, 'reason'), VALIDATION_REASONS) ?? 'Invalid',
    };
  });
}

function readAuditAnnotations(
  r: Reader,
  value: unknown,
  p: string,
  variables: readonly string[],
): PolicyAuditAnnotation[] {
  const seen = new Set<string>();
  return boundedList(r, value, p, MAX_AUDIT_ANNOTATIONS).map((item, i) => {
    const at = childPath(p, i);
    const m = r.map(item, at, ['key', 'valueExpression'], false);
    const key = r.requiredString(m.key, childPath(at, 'key'));
    if (!isQualifiedName(key)) r.fail(childPath(at, 'key'), `expected a key of ${QUALIFIED_NAME_RULE}`, key);
    uniqueName(r, seen, key, childPath(at, 'key'));
    const compiled = program(r, m.valueExpression, childPath(at, 'valueExpression'), { variables });
    return { key, program: compiled };
  });
}

/**
 * `mutations`, as the apiserver's MutatingAdmissionPolicy writes them: `patchType` and the one expression of its
 * kind, compiled with the constructions it may build (JSONPatch{…} for a JSON patch, Object{…} for both).
 */
function readMutations(r: Reader, value: unknown, p: string, variables: readonly string[]): PolicyMutation[] {
  return boundedList(r, value, p, MAX_MUTATIONS).map((item, i) => {
    const at = childPath(p, i);
    const m = r.map(item, at, ['patchType', 'jsonPatch', 'applyConfiguration'], false);
    const patchType =
      r.oneOf(m.patchType, childPath(at, 'patchType'), PATCH_TYPES) ??
      r.fail(childPath(at, 'patchType'), 'is required (JSONPatch or ApplyConfiguration)');
    const field = patchType === 'JSONPatch' ? 'jsonPatch' : 'applyConfiguration';
    const other = patchType === 'JSONPatch' ? 'applyConfiguration' : 'jsonPatch';
    if (m[other] !== undefined) r.fail(childPath(at, other), `not allowed with patchType ${patchType}`);
    if (m[field] === undefined) r.fail(childPath(at, field), `is required with patchType ${patchType}`);
    const body = r.map(m[field], childPath(at, field), ['expression'], false);
    const compiled = program(r, body.expression, childPath(childPath(at, field), 'expression'), {
      variables,
      messages: field,
    });
    return { patchType, program: compiled };
  });
}

/** The compiled body of the policy entry at `p` (whose keys the caller has checked). */
export function readPolicySpec(r: Reader, m: Record<string, unknown>, p: string): PolicySpec {
  const variables = readVariables(r, m.variables, childPath(p, 'variables'));
  const names = variables.map((v) => v.name);
  const validations = readValidations(r, m.validations, childPath(p, 'validations'), names);
  const auditAnnotations = readAuditAnnotations(r, m.auditAnnotations, childPath(p, 'auditAnnotations'), names);
  const mutations = readMutations(r, m.mutations, childPath(p, 'mutations'), names);
  if (validations.length === 0 && auditAnnotations.length === 0 && mutations.length === 0)
    r.fail(p, 'expected validations, auditAnnotations or mutations: a policy entry without any does nothing');
  return { variables, validations, auditAnnotations, ...(mutations.length > 0 ? { mutations } : {}) };
}
