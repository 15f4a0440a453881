/**
 * `"...".format([args])` (cel-go's strings extension): %s, %d, %f, %e, %b, %o, %x, %X and %%, with a precision
 * (`%.2f`) of at most 100 for the floating-point ones.
 */
import { Optional } from '@marcbachmann/cel-js';
import { charge, traversal } from './cost.js';
import { typeName } from './equality.js';
import { CelEvalError } from './library.js';

const MAX_PRECISION = 100;

function asString(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (isUint(v)) return String(v.valueOf());
  if (v instanceof Date) return v.toISOString().replace('.000Z', 'Z');
  if (typeof v === 'number')
    return Number.isNaN(v) ? 'NaN' : v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : String(v);
  if (v === null) return 'null';
  if (v instanceof Uint8Array) return Buffer.from(v).toString('utf8');
  if (Array.isArray(v)) return `[${v.map(asString).join(', ')}]`;
  if (v instanceof Optional) return v.hasValue() ? `optional(${asString(v.value())})` : 'optional.none()';
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype)
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${k}: ${asString((v as Record<string, unknown>)[k])}`)
      .join(', ')}}`;
  return typeName(v);
}

/** The engine's uint, whose value is a BigInt. */
const isUint = (v: unknown): v is { valueOf(): bigint } =>
  typeof v === 'object' && v !== null && v.constructor.name === 'UnsignedInt' && typeof v.valueOf() === 'bigint';

function integerArg(v: unknown, verb: string): bigint {
  if (typeof v === 'bigint') return v;
  if (isUint(v)) return v.valueOf();
  if (typeof v === 'number' && verb === 'd' && Number.isInteger(v)) return BigInt(v);
  throw new CelEvalError('invalid_argument', `error during formatting: %${verb} does not take ${typeName(v)}`);
}

function floatArg(v: unknown, verb: string): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  throw new CelEvalError('invalid_argument', `error during formatting: %${verb} does not take ${typeName(v)}`);
}

function special(x: number): string | undefined {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  return undefined;
}

function radix(v: unknown, verb: string, base: number): string {
  if (typeof v === 'string' && (verb === 'x' || verb === 'X')) return Buffer.from(v, 'utf8').toString('hex');
  if (v instanceof Uint8Array && (verb === 'x' || verb === 'X')) return Buffer.from(v).toString('hex');
  const n = integerArg(v, verb);
  return (n < 0n ? '-' : '') + (n < 0n ? -n : n).toString(base);
}

export function formatString(template: string, args: readonly unknown[]): string {
  let out = '';
  let next = 0;
  for (let i = 0; i < template.length; i++) {
    const ch = template[i];
    if (ch !== '%') {
      out += ch;
      continue;
    }
    let j = i + 1;
    let precision: number | undefined;
    if (template[j] === '.') {
      const m = /^\d+/.exec(template.slice(j + 1));
      if (!m) throw new CelEvalError('invalid_argument', 'error during formatting: precision is missing');
      precision = Number(m[0]);
      if (precision > MAX_PRECISION)
        throw new CelEvalError(
          'invalid_argument',
          `error during formatting: precision ${precision} is above ${MAX_PRECISION}`,
        );
      j += 1 + m[0].length;
    }
    const verb = template[j];
    if (verb === undefined)
      throw new CelEvalError('invalid_argument', 'error during formatting: the template ends in %');
    i = j;
    if (verb === '%') {
      out += '%';
      continue;
    }
    if (next >= args.length)
      throw new CelEvalError('invalid_argument', `index ${next} out of range: format has more verbs than arguments`);
    const arg = args[next++];
    const mark = out.length;
    switch (verb) {
      case 's':
        out += asString(arg);
        break;
      case 'd':
        out +=
          typeof arg === 'number' && !Number.isFinite(arg) ? (special(arg) ?? '') : integerArg(arg, verb).toString();
        break;
      case 'f': {
        const x = floatArg(arg, verb);
        out += special(x) ?? x.toFixed(precision ?? 6);
        break;
      }
      case 'e': {
        const x = floatArg(arg, verb);
        out += special(x) ?? x.toExponential(precision ?? 6).replace(/e([+-])(\d)$/, 'e$10$2');
        break;
      }
      case 'b':
        out += typeof arg === 'boolean' ? (arg ? '1' : '0') : radix(arg, verb, 2);
        break;
      case 'o':
        out += radix(arg, verb, 8);
        break;
      case 'x':
        out += radix(arg, verb, 16);
        break;
      case 'X':
        out += radix(arg, verb, 16).toUpperCase();
        break;
      default:
        throw new CelEvalError('invalid_argument', `error during formatting: unrecognized formatting clause "${verb}"`);
    }
    // A list or map argument can print far more than the template is long.
    charge(traversal(out.length - mark));
  }
  return out;
}
