/**
 * What a recording and a decision trace must not keep: a Secret's `data` and `stringData` values always, and
 * the fields the operator names in `record.redact` as JSON pointers (a `*` segment matches any key or index).
 * Redacted values become `<redacted>` in place, so the object keeps its shape (a selector or a rule on the key
 * still replays), in the request's objects and in every patch the recording or the trace carries. The
 * `kubectl.kubernetes.io/last-applied-configuration` annotation is a copy of the object as applied (a Secret
 * created with `kubectl apply` has its data there): the same fields are redacted inside it, and an annotation
 * that cannot be read as a JSON object is replaced whole.
 */
import type { AdmissionRequest, JsonPatchOperation, KubeObject } from '../admission/types.js';
import { nestsDeeperThan } from '../base/limits.js';

export const REDACTED = '<redacted>';

/** A Secret's fields whose values are always redacted. */
const SECRET_FIELDS: readonly (readonly string[])[] = [
  ['data', '*'],
  ['stringData', '*'],
];

/** `/a/b~1c` → `['a', 'b/c']` (RFC 6901 escapes). */
export function pointerSegments(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function isContainer(value: unknown): value is Record<string, unknown> | unknown[] {
  return typeof value === 'object' && value !== null;
}

/** A field to redact, and what its value becomes. */
interface Rule {
  readonly segments: readonly string[];
  readonly redact: (value: unknown) => unknown;
}

const toRedacted = (): string => REDACTED;

/** Replaces, in place, every value `segments` reaches in `value` by what `redact` makes of it. */
function redactIn(value: unknown, segments: readonly string[], redact: Rule['redact']): void {
  if (!isContainer(value) || segments.length === 0) return;
  const [head, ...rest] = segments as [string, ...string[]];
  const record = value as Record<string, unknown>;
  const keys = head === '*' ? Object.keys(record) : Object.hasOwn(record, head) ? [head] : [];
  for (const key of keys) {
    if (rest.length === 0) record[key] = redact(record[key]);
    else redactIn(record[key], rest, redact);
  }
}

export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** The last-applied annotation with `rules` redacted inside it; REDACTED when it is not a JSON object. */
function redactedLastApplied(value: unknown, rules: readonly Rule[]): unknown {
  if (typeof value !== 'string' || nestsDeeperThan(value)) return REDACTED;
  let applied: unknown;
  try {
    applied = JSON.parse(value);
  } catch {
    return REDACTED;
  }
  if (!isContainer(applied) || Array.isArray(applied)) return REDACTED;
  for (const rule of rules) redactIn(applied, rule.segments, rule.redact);
  // kubectl ends it with a newline: kept, so that only the redacted values differ.
  return `${JSON.stringify(applied)}${value.endsWith('\n') ? '\n' : ''}`;
}

/** The rules for `fields`, and the last-applied annotation redacted by them, when there are any. */
function rulesOf(fields: readonly (readonly string[])[]): readonly Rule[] {
  if (fields.length === 0) return [];
  const rules = fields.map((segments): Rule => ({ segments, redact: toRedacted }));
  // Last: a pointer that redacts the annotation whole is found first.
  const lastApplied: Rule = {
    segments: ['metadata', 'annotations', LAST_APPLIED],
    redact: (value) => redactedLastApplied(value, rules),
  };
  return [...rules, lastApplied];
}

/** Whether the pointer `segments` (with `*`) covers the path `path` or a prefix of it. */
function covers(segments: readonly string[], path: readonly string[]): boolean {
  return segments.length <= path.length && segments.every((s, i) => s === '*' || s === path[i]);
}

/** Whether `path` leads towards `segments`: a proper prefix of what they match. */
function leadsTo(path: readonly string[], segments: readonly string[]): boolean {
  return path.length < segments.length && path.every((p, i) => segments[i] === '*' || segments[i] === p);
}

export interface Redaction {
  /** A copy of the request, its object and oldObject redacted (the request itself is never changed). */
  request(request: AdmissionRequest): AdmissionRequest;
  /** A copy of a patch of the request's object, the values it writes at redacted paths redacted. */
  patch(request: AdmissionRequest, ops: readonly JsonPatchOperation[] | undefined): JsonPatchOperation[] | undefined;
  /**
   * Whether anything of the request's objects is redacted (a Secret; any object once `record.redact` names
   * fields): values computed from them (a policy's variables) are then left out whole, as nobody can tell
   * which of them came from a redacted field.
   */
  redacts(request: AdmissionRequest): boolean;
}

const isSecret = (request: AdmissionRequest): boolean =>
  request.kind.group === '' && request.kind.kind === 'Secret' && request.resource.resource === 'secrets';

export function compileRedaction(pointers: readonly string[]): Redaction {
  const configured = pointers.map(pointerSegments);
  const ofSecrets = rulesOf([...SECRET_FIELDS, ...configured]);
  const ofOthers = rulesOf(configured);
  const rulesFor = (request: AdmissionRequest) => (isSecret(request) ? ofSecrets : ofOthers);
  const redactObject = (object: KubeObject | null | undefined, rules: readonly Rule[]) => {
    if (!object) return object;
    const copy = structuredClone(object);
    for (const rule of rules) redactIn(copy, rule.segments, rule.redact);
    return copy;
  };
  return {
    redacts: (request) => rulesFor(request).length > 0,
    request(request) {
      const rules = rulesFor(request);
      const copy: AdmissionRequest = { ...request };
      if (request.object !== undefined) copy.object = redactObject(request.object, rules);
      if (request.oldObject !== undefined) copy.oldObject = redactObject(request.oldObject, rules);
      return copy;
    },
    patch(request, ops) {
      if (!ops) return undefined;
      const rules = rulesFor(request);
      if (rules.length === 0) return [...ops];
      return ops.map((op) => {
        if (!('value' in op)) return op;
        const path = pointerSegments(op.path);
        const covering = rules.find((rule) => covers(rule.segments, path));
        if (covering) {
          // Below the redacted field (inside a value redacted whole) there is nothing to keep.
          return { ...op, value: covering.segments.length === path.length ? covering.redact(op.value) : REDACTED };
        }
        const inside = rules.filter((rule) => leadsTo(path, rule.segments));
        if (inside.length === 0) return op;
        const value: unknown = structuredClone(op.value);
        for (const rule of inside) redactIn(value, rule.segments.slice(path.length), rule.redact);
        return { ...op, value };
      });
    },
  };
}
