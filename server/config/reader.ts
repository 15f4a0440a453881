/**
 * Typed readers over untrusted YAML/JSON that throw ConfigError naming the file, the field path and
 * what was expected: `gateway.yaml: chain[2].timeoutSeconds: expected an integer from 1 to 30, got "ten"`.
 * Used for gateway.yaml and for AdmissionProvider resources alike.
 */
import { didYouMean, didYouMeanOrKnown } from '../base/did-you-mean.js';
import { ConfigError } from '../base/errors.js';

/**
 * A configured value as an error message quotes it: scalars as JSON, containers by kind (base/limits.ts's
 * describeValue is the one for review and provider input).
 */
export function describeConfigValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a map';
  return JSON.stringify(value);
}

/**
 * A URL as an error message may quote it: its user info (`user:password@`), query and fragment replaced, since
 * any of them may be a credential, and the message is logged and printed. Works on text that does not parse.
 */
export function urlForMessage(raw: string): string {
  return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1***@').replace(/([?#])[^]*$/, '$1…');
}

export const childPath = (path: string, key: string | number): string =>
  typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key;

export class Reader {
  constructor(readonly file: string) {}

  /** Throws the ConfigError for `path`; with `value`, says what was given, then `after` (a suggestion). */
  fail(path: string, expected: string, value?: unknown, after = ''): never {
    const got = arguments.length >= 3 ? `, got ${describeConfigValue(value)}` : '';
    throw new ConfigError(this.file, path, `${expected}${got}${after}`);
  }

  /** A map with only the `known` keys (a typo must not pass silently); absent → `{}` when optional. */
  map(value: unknown, path: string, known: readonly string[], optional = true): Record<string, unknown> {
    if (value === undefined || value === null) {
      if (optional) return {};
      this.fail(path, 'is required');
    }
    if (typeof value !== 'object' || Array.isArray(value)) this.fail(path, 'expected a map', value);
    const obj = value as Record<string, unknown>;
    for (const key of Object.keys(obj)) {
      if (!known.includes(key)) this.fail(childPath(path, key), `unknown field${didYouMeanOrKnown(key, known)}`);
    }
    return obj;
  }

  list(value: unknown, path: string): unknown[] | undefined {
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value)) this.fail(path, 'expected a list', value);
    return value as unknown[];
  }

  string(value: unknown, path: string): string | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') this.fail(path, 'expected a string', value);
    return value;
  }

  requiredString(value: unknown, path: string): string {
    const s = this.string(value, path);
    if (s === undefined || s === '') this.fail(path, 'is required (a non-empty string)');
    return s;
  }

  boolean(value: unknown, path: string): boolean | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'boolean') this.fail(path, 'expected true or false', value);
    return value;
  }

  integer(value: unknown, path: string, min: number, max: number): number | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      this.fail(path, `expected an integer from ${min} to ${max}`, value);
    }
    return value;
  }

  number(value: unknown, path: string, min: number, max: number): number | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
      this.fail(path, `expected a number from ${min} to ${max}`, value);
    }
    return value;
  }

  oneOf<E extends string>(value: unknown, path: string, allowed: readonly E[]): E | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
      const typo = typeof value === 'string' ? didYouMean(value, allowed) : '';
      this.fail(path, `expected one of ${allowed.join(', ')}`, value, typo);
    }
    return value as E;
  }

  stringList(value: unknown, path: string): string[] | undefined {
    const list = this.list(value, path);
    return list?.map((item, i) => {
      if (typeof item !== 'string') this.fail(childPath(path, i), 'expected a string', item);
      return item;
    });
  }

  stringMap(value: unknown, path: string): Record<string, string> | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'object' || Array.isArray(value)) this.fail(path, 'expected a map of strings', value);
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (typeof v !== 'string') this.fail(childPath(path, k), 'expected a string', v);
    }
    return value as Record<string, string>;
  }
}
