/**
 * The apiserver's semver library (Kubernetes 1.33): `semver('1.2.3')`, `isSemver()`, with `normalize` (a leading
 * `v`, missing minor or patch, leading zeros tolerated), and the precedence of semantic versioning 2.0 for
 * comparison (build metadata ignored, a pre-release before its release).
 */
import type { Comparable } from './equality.js';
import type { Library } from './library.js';
import { CelEvalError, parses } from './library.js';
import { compileRegex } from './regex.js';

const NUM = '(0|[1-9]\\d*)';
const PRE = '(?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*)';
// RE2, not RegExp: the alternatives of a pre-release part make a backtracking engine quadratic in the length.
const STRICT = compileRegex(
  `^${NUM}\\.${NUM}\\.${NUM}(?:-(${PRE}(?:\\.${PRE})*))?(?:\\+([0-9a-zA-Z-]+(?:\\.[0-9a-zA-Z-]+)*))?$`,
);

export class Semver implements Comparable {
  constructor(
    readonly major: bigint,
    readonly minor: bigint,
    readonly patch: bigint,
    readonly pre: readonly string[],
  ) {}
  compareTo(o: Semver): number {
    for (const [a, b] of [
      [this.major, o.major],
      [this.minor, o.minor],
      [this.patch, o.patch],
    ] as const)
      if (a !== b) return a < b ? -1 : 1;
    if (this.pre.length === 0 || o.pre.length === 0)
      return o.pre.length - this.pre.length === 0 ? 0 : this.pre.length === 0 ? 1 : -1;
    for (let i = 0; i < Math.min(this.pre.length, o.pre.length); i++) {
      const [a = '', b = ''] = [this.pre[i], o.pre[i]];
      if (a === b) continue;
      const [an, bn] = [/^\d+$/.test(a), /^\d+$/.test(b)];
      if (an && bn) return BigInt(a) < BigInt(b) ? -1 : 1;
      if (an !== bn) return an ? -1 : 1;
      return a < b ? -1 : 1;
    }
    return Math.sign(this.pre.length - o.pre.length);
  }
  equals(other: unknown): boolean {
    return other instanceof Semver && this.compareTo(other) === 0;
  }
}

/** What `normalize` tolerates, rewritten to the strict form. */
function normalized(s: string): string {
  const text = s.startsWith('v') ? s.slice(1) : s;
  const cut = text.search(/[-+]/);
  const core = cut < 0 ? text : text.slice(0, cut);
  const rest = cut < 0 ? '' : text.slice(cut);
  const parts = core.split('.');
  if (parts.length > 3 || parts.some((p) => !/^\d+$/.test(p))) return s;
  while (parts.length < 3) parts.push('0');
  return parts.map((p) => p.replace(/^0+(?=\d)/, '')).join('.') + rest;
}

export function parseSemver(s: string, normalize = false): Semver {
  const m = STRICT.exec(normalize ? normalized(s) : s) as (string | undefined)[] | null;
  if (!m) throw new CelEvalError('invalid_argument', `could not parse "${s}" as a semantic version`);
  const [, major = '0', minor = '0', patch = '0', pre] = m;
  return new Semver(BigInt(major), BigInt(minor), BigInt(patch), pre === undefined ? [] : pre.split('.'));
}

export const semverLibrary: Library = {
  types: [['kubernetes.Semver', Semver]],
  functions: [
    ['semver(string): kubernetes.Semver', (s: string) => parseSemver(s)],
    ['semver(string, bool): kubernetes.Semver', (s: string, n: boolean) => parseSemver(s, n)],
    ['isSemver(string): bool', (s: string) => parses(() => parseSemver(s))],
    ['isSemver(string, bool): bool', (s: string, n: boolean) => parses(() => parseSemver(s, n))],
    ['kubernetes.Semver.major(): int', (v: Semver) => v.major],
    ['kubernetes.Semver.minor(): int', (v: Semver) => v.minor],
    ['kubernetes.Semver.patch(): int', (v: Semver) => v.patch],
    ['kubernetes.Semver.isGreaterThan(kubernetes.Semver): bool', (v: Semver, o: Semver) => v.compareTo(o) > 0],
    ['kubernetes.Semver.isLessThan(kubernetes.Semver): bool', (v: Semver, o: Semver) => v.compareTo(o) < 0],
    ['kubernetes.Semver.compareTo(kubernetes.Semver): int', (v: Semver, o: Semver) => BigInt(v.compareTo(o))],
  ],
  operators: [['kubernetes.Semver == kubernetes.Semver', (a: Semver, b: Semver) => a.equals(b)]],
};
