/**
 * What a recording must not keep: a Secret's `data` and `stringData` values always, and the fields the
 * operator names in `record.redact` as JSON pointers (a `*` segment matches any key or index). Redacted values
 * become `<redacted>` in place, so the object keeps its shape (a selector or a rule on the key still replays),
 * in the request's objects and in every patch the recording carries.
 */
import type { AdmissionRequest, JsonPatchOperation, KubeObject } from '../admission/types.js';

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

/** Replaces, in place, every value `segments` reaches in `value`. */
function redactIn(value: unknown, segments: readonly string[]): void {
  if (!isContainer(value) || segments.length === 0) return;
  const [head, ...rest] = segments as [string, ...string[]];
  const record = value as Record<string, unknown>;
  const keys = head === '*' ? Object.keys(record) : Object.hasOwn(record, head) ? [head] : [];
  for (const key of keys) {
    if (rest.length === 0) record[key] = REDACTED;
    else redactIn(record[key], rest);
  }
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
}

const isSecret = (request: AdmissionRequest): boolean =>
  request.kind.group === '' && request.kind.kind === 'Secret' && request.resource.resource === 'secrets';

export function compileRedaction(pointers: readonly string[]): Redaction {
  const configured = pointers.map(pointerSegments);
  const rulesFor = (request: AdmissionRequest) => (isSecret(request) ? [...SECRET_FIELDS, ...configured] : configured);
  const redactObject = (object: KubeObject | null | undefined, rules: readonly (readonly string[])[]) => {
    if (!object) return object;
    const copy = structuredClone(object);
    for (const rule of rules) redactIn(copy, rule);
    return copy;
  };
  return {
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
        if (rules.some((rule) => covers(rule, path))) return { ...op, value: REDACTED };
        const inside = rules.filter((rule) => leadsTo(path, rule));
        if (inside.length === 0) return op;
        const value: unknown = structuredClone(op.value);
        for (const rule of inside) redactIn(value, rule.slice(path.length));
        return { ...op, value };
      });
    },
  };
}
