/**
 * The `exceptions` section of gateway.yaml (README "Exceptions"): which steps accept exceptions at all, the
 * longest an exception may live, and the files of exceptions read at start (without a cluster, or beside it).
 */
import path from 'node:path';
import { childPath, type Reader } from './reader.js';

export const EXCEPTIONS_FIELDS = ['allowedSteps', 'maxLifetime', 'files'] as const;

export const DEFAULT_MAX_LIFETIME_MS = 90 * 86_400_000;
/** The longest a configuration may allow: a year. */
const MAX_MAX_LIFETIME_MS = 366 * 86_400_000;
const MAX_ALLOWED_STEPS = 1024;
const MAX_FILES = 64;

export interface ExceptionsConfig {
  /** The only steps exceptions may let off; undefined: every step. */
  readonly allowedSteps?: readonly string[];
  /** The longest an exception may live, from its creation to its expiresAt, in ms. Default 90 days. */
  readonly maxLifetimeMs: number;
  /** Files of AdmissionException / ClusterAdmissionException objects (absolute). */
  readonly files: readonly string[];
}

/** The units of a lifetime, largest first. */
const UNITS: Readonly<Record<string, number>> = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 };

/** `90d`, `12h`, `30m`, `45s` → milliseconds. */
export function readLifetime(r: Reader, value: unknown, p: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const match = typeof value === 'string' ? /^([1-9]\d{0,5})([dhms])$/.exec(value) : null;
  if (!match) return r.fail(p, 'expected a duration such as "90d", "12h", "30m"', value);
  const ms = Number(match[1]) * UNITS[match[2]!]!;
  if (ms > MAX_MAX_LIFETIME_MS) r.fail(p, 'must be at most 366d', value);
  return ms;
}

/** `90d`, `36h`, `90m`: a lifetime as the configuration writes it (readLifetime's inverse). */
export function describeLifetime(ms: number): string {
  for (const [unit, size] of Object.entries(UNITS)) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

export function readExceptionsConfig(r: Reader, value: unknown, p: string, baseDir: string): ExceptionsConfig {
  const m = r.map(value, p, EXCEPTIONS_FIELDS);
  const at = (key: string) => childPath(p, key);
  const allowedSteps = r.stringList(m.allowedSteps, at('allowedSteps'));
  if (allowedSteps && allowedSteps.length > MAX_ALLOWED_STEPS) {
    r.fail(at('allowedSteps'), `expected at most ${MAX_ALLOWED_STEPS} step names`);
  }
  const files = r.stringList(m.files, at('files')) ?? [];
  if (files.length > MAX_FILES) r.fail(at('files'), `expected at most ${MAX_FILES} files`);
  files.forEach((file, i) => {
    if (file === '') r.fail(childPath(at('files'), i), 'expected a file path');
  });
  return {
    ...(allowedSteps ? { allowedSteps } : {}),
    maxLifetimeMs: readLifetime(r, m.maxLifetime, at('maxLifetime')) ?? DEFAULT_MAX_LIFETIME_MS,
    files: files.map((file) => path.resolve(baseDir, file)),
  };
}
