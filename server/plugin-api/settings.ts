/**
 * Small readers for plugin settings. Each throws `SettingsError` naming the field path relative to the
 * entry's `settings`, so the gateway can report `chain[2].settings.labels.team: expected a string`.
 */
import { describeConfigValue } from '../config/reader.js';

export class SettingsError extends Error {
  readonly code = 'GW_ERR_SETTINGS';
  constructor(
    /** Dotted path below `settings`, e.g. `labels.team`; empty for the settings object itself. */
    readonly path: string,
    message: string,
  ) {
    super(path ? `${path}: ${message}` : message);
    this.name = 'SettingsError';
  }
}

/** A setting's value as configuration describes it, a scalar with its type first (`number 3`). */
function describe(value: unknown): string {
  const described = describeConfigValue(value);
  return value === null || typeof value === 'object' ? described : `${typeof value} ${described}`;
}

const join = (path: string, key: string | number): string =>
  typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key;

/** The settings map itself; `undefined`/`null` become `{}`. Unknown keys are refused (typos should not pass silently). */
export function settingsObject(raw: unknown, known: readonly string[], path = ''): Record<string, unknown> {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new SettingsError(path, `expected a map, got ${describe(raw)}`);
  const obj = raw as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) {
      throw new SettingsError(join(path, key), `unknown setting (known: ${known.join(', ') || 'none'})`);
    }
  }
  return obj;
}

export function optionalString(obj: Record<string, unknown>, key: string, fallback: string, path = ''): string {
  const v = obj[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'string') throw new SettingsError(join(path, key), `expected a string, got ${describe(v)}`);
  return v;
}

export function optionalBoolean(obj: Record<string, unknown>, key: string, fallback: boolean, path = ''): boolean {
  const v = obj[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') throw new SettingsError(join(path, key), `expected true or false, got ${describe(v)}`);
  return v;
}

export function optionalStringMap(
  obj: Record<string, unknown>,
  key: string,
  path = '',
): Readonly<Record<string, string>> | undefined {
  const v = obj[key];
  if (v === undefined) return undefined;
  const p = join(path, key);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new SettingsError(p, `expected a map of strings, got ${describe(v)}`);
  }
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v as Record<string, unknown>)) {
    if (typeof val !== 'string') throw new SettingsError(join(p, k), `expected a string, got ${describe(val)}`);
    out[k] = val;
  }
  return out;
}

export function optionalStringList(
  obj: Record<string, unknown>,
  key: string,
  path = '',
): readonly string[] | undefined {
  const v = obj[key];
  if (v === undefined) return undefined;
  const p = join(path, key);
  if (!Array.isArray(v)) throw new SettingsError(p, `expected a list of strings, got ${describe(v)}`);
  return v.map((item: unknown, i) => {
    if (typeof item !== 'string') throw new SettingsError(join(p, i), `expected a string, got ${describe(item)}`);
    return item;
  });
}

export function optionalEnum<E extends string>(
  obj: Record<string, unknown>,
  key: string,
  allowed: readonly E[],
  fallback: E,
  path = '',
): E {
  const v = obj[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    throw new SettingsError(join(path, key), `expected one of ${allowed.join(', ')}, got ${describe(v)}`);
  }
  return v as E;
}
