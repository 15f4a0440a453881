/**
 * Optional fields of a message construction, `Object{?name: value}` (value an optional): set when the optional
 * has a value, left out when it has none. The engine has no optional map entries, so message-syntax.ts writes a
 * construction with one as a call of OPTIONAL_FIELDS on its map literal, the optional fields' keys marked with a
 * leading `?` (no field name can have one), and this function makes the message's map.
 */
import { Optional } from '@marcbachmann/cel-js';
import { CelEvalError, type Library } from './library.js';

/** The function a construction with an optional field is handed to; the name is reserved (CEL's `__` prefix). */
export const OPTIONAL_FIELDS = '__optional_fields__';

function entriesOf(value: unknown): Array<[string, unknown]> {
  if (value instanceof Map) return [...(value as Map<string, unknown>)];
  if (value !== null && typeof value === 'object') return Object.entries(value);
  throw new CelEvalError('no_such_overload', 'a construction must be a map');
}

/** The message's map: each `?name` entry as `name` with its optional's value, or left out without one. */
export function optionalFields(fields: unknown): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const [key, value] of entriesOf(fields)) {
    if (!key.startsWith('?')) {
      out.set(key, value);
      continue;
    }
    if (!(value instanceof Optional))
      throw new CelEvalError(
        'no_such_overload',
        `the optional field "${key.slice(1)}" must be set to an optional value`,
      );
    if (value.hasValue()) out.set(key.slice(1), value.value());
  }
  return out;
}

export const optionalFieldsLibrary: Library = {
  functions: [[`${OPTIONAL_FIELDS}(map<string, dyn>): map<string, dyn>`, optionalFields]],
};
