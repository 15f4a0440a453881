/**
 * The apiserver's quantity library (Kubernetes 1.28): `quantity('250m')`, `isQuantity()`, and comparison and
 * arithmetic on resource quantities, held exactly (a BigInt numerator over a power of ten) as the apiserver's
 * arbitrary-precision decimals are.
 */
import type { Comparable } from './equality.js';
import type { Library } from './library.js';
import { CelEvalError, parses } from './library.js';

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);
/** An exponent past this (`1e100000`) is refused rather than turned into a huge number. */
const MAX_EXPONENT = 10_000;

const BINARY: Readonly<Record<string, bigint>> = { Ki: 1n, Mi: 2n, Gi: 3n, Ti: 4n, Pi: 5n, Ei: 6n };
const DECIMAL: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

/** numerator / 10^scale. */
export class Quantity implements Comparable {
  constructor(
    readonly numerator: bigint,
    readonly scale: number,
  ) {}
  /** a and b over one denominator. */
  private static align(a: Quantity, b: Quantity): [bigint, bigint, number] {
    const scale = Math.max(a.scale, b.scale);
    return [a.numerator * 10n ** BigInt(scale - a.scale), b.numerator * 10n ** BigInt(scale - b.scale), scale];
  }
  compareTo(other: Quantity): number {
    const [x, y] = Quantity.align(this, other);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  equals(other: unknown): boolean {
    return other instanceof Quantity && this.compareTo(other) === 0;
  }
  add(other: Quantity, sign: 1n | -1n): Quantity {
    const [x, y, scale] = Quantity.align(this, other);
    return new Quantity(x + sign * y, scale);
  }
  /** The integer value, when there is one. */
  integer(): bigint | undefined {
    const d = 10n ** BigInt(Math.max(0, this.scale));
    const n = this.scale < 0 ? this.numerator * 10n ** BigInt(-this.scale) : this.numerator;
    return n % d === 0n ? n / d : undefined;
  }
  approximate(): number {
    return Number(this.numerator) / 10 ** this.scale;
  }
}

const GRAMMAR = /^([+-]?)(\d*)(?:\.(\d*))?(?:([eE])([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;

export function parseQuantity(s: string): Quantity {
  const m = GRAMMAR.exec(s);
  const [, sign = '', whole = '', fraction = '', e, exponent, suffix = ''] = m ?? [];
  if (!m || (whole === '' && fraction === '') || (e === undefined && exponent !== undefined))
    throw new CelEvalError(
      'invalid_argument',
      `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
    );
  let numerator = BigInt(whole + fraction || '0') * (sign === '-' ? -1n : 1n);
  let scale = fraction.length;
  const binary = BINARY[suffix];
  if (binary !== undefined) numerator *= 1024n ** binary;
  else {
    const power = exponent !== undefined ? Number(exponent) : (DECIMAL[suffix] ?? 0);
    if (Math.abs(power) > MAX_EXPONENT)
      throw new CelEvalError('invalid_argument', `quantity exponent ${power} is out of range`);
    scale -= power;
  }
  if (scale < 0) {
    numerator *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return new Quantity(numerator, scale);
}

function asInteger(q: Quantity): bigint {
  const n = q.integer();
  if (n === undefined || n > INT64_MAX || n < INT64_MIN)
    throw new CelEvalError('invalid_argument', 'cannot convert value to integer');
  return n;
}

const ofInt = (n: bigint): Quantity => new Quantity(n, 0);

export const quantityLibrary: Library = {
  types: [['kubernetes.Quantity', Quantity]],
  functions: [
    ['quantity(string): kubernetes.Quantity', (s: string) => parseQuantity(s)],
    ['isQuantity(string): bool', (s: string) => parses(() => parseQuantity(s))],
    [
      'kubernetes.Quantity.isInteger(): bool',
      (q: Quantity) => {
        const n = q.integer();
        return n !== undefined && n <= INT64_MAX && n >= INT64_MIN;
      },
    ],
    ['kubernetes.Quantity.asInteger(): int', (q: Quantity) => asInteger(q)],
    ['kubernetes.Quantity.asApproximateFloat(): double', (q: Quantity) => q.approximate()],
    ['kubernetes.Quantity.sign(): int', (q: Quantity) => BigInt(q.compareTo(ofInt(0n)))],
    ['kubernetes.Quantity.add(kubernetes.Quantity): kubernetes.Quantity', (q: Quantity, o: Quantity) => q.add(o, 1n)],
    ['kubernetes.Quantity.add(int): kubernetes.Quantity', (q: Quantity, n: bigint) => q.add(ofInt(n), 1n)],
    ['kubernetes.Quantity.sub(kubernetes.Quantity): kubernetes.Quantity', (q: Quantity, o: Quantity) => q.add(o, -1n)],
    ['kubernetes.Quantity.sub(int): kubernetes.Quantity', (q: Quantity, n: bigint) => q.add(ofInt(n), -1n)],
    ['kubernetes.Quantity.isGreaterThan(kubernetes.Quantity): bool', (q: Quantity, o: Quantity) => q.compareTo(o) > 0],
    ['kubernetes.Quantity.isLessThan(kubernetes.Quantity): bool', (q: Quantity, o: Quantity) => q.compareTo(o) < 0],
    ['kubernetes.Quantity.compareTo(kubernetes.Quantity): int', (q: Quantity, o: Quantity) => BigInt(q.compareTo(o))],
  ],
  operators: [['kubernetes.Quantity == kubernetes.Quantity', (a: Quantity, b: Quantity) => a.equals(b)]],
};
