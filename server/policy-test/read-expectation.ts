/** A case's `expect`: what the answer must say (docs/policy-tests.md, "expect"). */
import type { JsonPatchOperation, Operation } from '../admission/types.js';
import { PatchApplyError } from '../base/errors.js';
import { Reader, childPath } from '../config/reader.js';
import { checkPatchShape } from '../patch/apply.js';
import { MATCH_MODES, type Expectation } from './suite.js';
import { TextPatternError, textPattern, type TextPattern } from './text-pattern.js';

const FIELDS = [
  'allowed',
  'code',
  'message',
  'warnings',
  'warningsMatch',
  'auditAnnotations',
  'auditAnnotationsMatch',
  'patch',
  'patched',
  'patchedMatch',
] as const;

/** The fields that say something of the answer (the `…Match` ones only say how). */
const CHECKS = ['allowed', 'code', 'message', 'warnings', 'auditAnnotations', 'patch', 'patched'] as const;

function pattern(reader: Reader, value: unknown, field: string): TextPattern | undefined {
  const source = reader.string(value, field);
  if (source === undefined) return undefined;
  try {
    return textPattern(source);
  } catch (err) {
    if (err instanceof TextPatternError) reader.fail(field, err.message);
    throw err;
  }
}

function patternMap(reader: Reader, value: unknown, field: string): Record<string, TextPattern> | undefined {
  const map = reader.stringMap(value, field);
  if (!map) return undefined;
  return Object.fromEntries(Object.entries(map).map(([k, v]) => [k, pattern(reader, v, childPath(field, k))!]));
}

function patchOf(reader: Reader, value: unknown, field: string): JsonPatchOperation[] | undefined {
  if (value === undefined || value === null) return undefined;
  try {
    checkPatchShape(value);
  } catch (err) {
    if (err instanceof PatchApplyError) reader.fail(field, `expected a list of JSON patch operations: ${err.message}`);
    throw err;
  }
  return value;
}

export function readExpectation(reader: Reader, value: unknown, field: string, operation: Operation): Expectation {
  const e = reader.map(value, field, FIELDS, false);
  if (!CHECKS.some((key) => e[key] !== undefined)) {
    reader.fail(field, `says nothing to check: give at least one of ${CHECKS.join(', ')}`);
  }
  const allowed = reader.boolean(e.allowed, `${field}.allowed`);
  const code = reader.integer(e.code, `${field}.code`, 400, 599);
  const message = pattern(reader, e.message, `${field}.message`);
  // An allowed answer has neither: the case contradicts itself.
  if (allowed === true && code !== undefined) reader.fail(`${field}.code`, 'goes with allowed: false (a refusal)');
  if (allowed === true && message) reader.fail(`${field}.message`, 'goes with allowed: false (a refusal)');
  const patch = patchOf(reader, e.patch, `${field}.patch`);
  const warnings = reader.stringList(e.warnings, `${field}.warnings`);
  if ((patch || e.patched !== undefined) && (operation === 'DELETE' || operation === 'CONNECT')) {
    reader.fail(`${field}.${patch ? 'patch' : 'patched'}`, `a ${operation} is never patched`);
  }
  if (e.patched === null || (e.patched !== undefined && typeof e.patched !== 'object')) {
    reader.fail(`${field}.patched`, 'expected the object (or the part of it) after the patch', e.patched);
  }
  const auditAnnotations = patternMap(reader, e.auditAnnotations, `${field}.auditAnnotations`);
  return {
    ...(allowed !== undefined ? { allowed } : {}),
    ...(code !== undefined ? { code } : {}),
    ...(message ? { message } : {}),
    ...(warnings ? { warnings: warnings.map((w, i) => pattern(reader, w, `${field}.warnings[${i}]`)!) } : {}),
    warningsMatch: reader.oneOf(e.warningsMatch, `${field}.warningsMatch`, MATCH_MODES) ?? 'subset',
    ...(auditAnnotations ? { auditAnnotations } : {}),
    auditAnnotationsMatch:
      reader.oneOf(e.auditAnnotationsMatch, `${field}.auditAnnotationsMatch`, MATCH_MODES) ?? 'subset',
    ...(patch ? { patch } : {}),
    ...(e.patched !== undefined ? { patched: e.patched } : {}),
    patchedMatch: reader.oneOf(e.patchedMatch, `${field}.patchedMatch`, MATCH_MODES) ?? 'subset',
  };
}
