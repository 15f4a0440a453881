/**
 * What one operator or function call costs, given the values it was called with (cel-go's `CostTracker.costCall`
 * and the apiserver's `library.CostEstimator`, restated). Charged before the call runs, so a call the budget
 * cannot pay for never starts.
 */
import { AuthzValue } from './authz-value.js';
import { deepSize, shallowSize, traversal } from './cost.js';

const keyCounts = new WeakMap<object, number>();

/** The size `size()` reports, and what finding it walks: nothing for a list or string, a map's keys once. */
function sizeCallCost(value: unknown): number {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof Map) return 1;
  if (value instanceof Uint8Array) return 1;
  let keys = keyCounts.get(value);
  if (keys === undefined) keyCounts.set(value, (keys = Object.keys(value).length));
  return 1 + traversal(keys);
}

/** `a op b`. */
export function binaryCost(op: string, left: unknown, right: unknown): number {
  switch (op) {
    case '==':
    case '!=':
      // Lists and maps are compared element by element, down to their leaves.
      return Math.max(1, traversal(Math.min(deepSize(left), deepSize(right))));
    case '<':
    case '<=':
    case '>':
    case '>=':
      return typeof left === 'string' && typeof right === 'string'
        ? Math.max(1, traversal(Math.min(left.length, right.length)))
        : 1;
    case '+':
      // Strings and bytes are copied into a new one; lists too, and this engine checks each element's type as it
      // copies it, which costs about what reading a field does (1 unit, not cel-go's tenth).
      if (Array.isArray(left)) return Math.max(1, shallowSize(left) + shallowSize(right));
      return typeof left === 'object' || typeof left === 'string'
        ? Math.max(1, traversal(shallowSize(left) + shallowSize(right)))
        : 1;
    case 'in':
      // A list of scalars is walked once; one of lists or maps compares each element down to its leaves.
      if (Array.isArray(right))
        return typeof right[0] === 'object' && right[0] !== null
          ? Math.max(1, right.length, traversal(deepSize(right)))
          : Math.max(1, right.length);
      return 1;
    default:
      return 1;
  }
}

/** Regular expressions: the string's length times the pattern's, as cel-go prices `matches`. */
function regexCost(text: unknown, pattern: unknown): number {
  const textCost = Math.ceil((1 + shallowSize(text)) * 0.1);
  const patternCost = Math.ceil(shallowSize(pattern) * 0.25);
  return Math.max(1, textCost * patternCost);
}

/**
 * An authorization check, as the apiserver prices it: a fixed cost that lets an expression make two
 * (library.CostEstimator, "check").
 */
export const AUTHORIZATION_CHECK_COST = 350_000;

/**
 * A field or label selector given to an authorization check: parsed into requirements, about one per two
 * characters, each a list and a struct (the apiserver's selectorCostEstimate).
 */
function selectorCost(selector: unknown): number {
  const length = typeof selector === 'string' ? [...selector].length : 0;
  return 10 + Math.ceil(length * 0.1) + Math.ceil(length * 0.5) * 50;
}

/** `receiver.name(args)` or `name(args)` (receiver undefined). */
export function callCost(name: string, receiver: unknown, args: readonly unknown[]): number {
  if (receiver instanceof AuthzValue) return authzCallCost(name, args);
  switch (name) {
    case 'size':
      return sizeCallCost(receiver === undefined ? args[0] : receiver);
    case 'matches':
    case 'find':
    case 'findAll':
      return receiver === undefined ? regexCost(args[0], args[1]) : regexCost(receiver, args[0]);
    case 'join':
    case 'distinct':
      // Each element is handled on its own (type-checked, hashed): a unit each, and a tenth per character.
      return 1 + shallowSize(receiver) + traversal(receiver === undefined ? 0 : deepSize(receiver));
    case 'flatten':
    case 'sort':
    case 'contains':
    case 'equivalent':
    case 'intersects':
      // What these walk or build holds every element's content.
      return 1 + traversal((receiver === undefined ? 0 : deepSize(receiver)) + args.reduce(sumDeep, 0));
    default:
      return 1 + traversal((receiver === undefined ? 0 : shallowSize(receiver)) + args.reduce(sumShallow, 0));
  }
}

/** The authorization library's calls: the builders and accessors cost 1. */
function authzCallCost(name: string, args: readonly unknown[]): number {
  if (name === 'check') return AUTHORIZATION_CHECK_COST;
  if (name === 'fieldSelector' || name === 'labelSelector') return selectorCost(args[0]);
  return 1;
}

const sumDeep = (n: number, v: unknown): number =>
  n + (typeof v === 'object' || typeof v === 'string' ? deepSize(v) : 0);
const sumShallow = (n: number, v: unknown): number =>
  n + (typeof v === 'object' || typeof v === 'string' ? shallowSize(v) : 0);
