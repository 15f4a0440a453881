/**
 * The cost meter's hook into @marcbachmann/cel-js, which has none of its own: after an expression is checked,
 * every node of its tree gets an `evaluate` that charges the node's cost before doing what the engine would,
 * and every operator or call gets a `handle` that charges what its arguments make it cost. Those two fields
 * are the engine's own (set by its checker, called by its evaluator); the engine is pinned to one version, and
 * test/unit/cel/cost.test.ts fails if an upgrade moves them. Why this and not a fork: docs/decisions.md.
 *
 * The same walk replaces the engine's implementation of a few functions whose declaration it keeps
 * (`matches`, which must run on RE2, not on JavaScript's backtracking RegExp).
 */
import { binaryCost, callCost } from './cost-rules.js';
import { charge, checkBudget, exhausted, shallowSize, traversal } from './cost.js';

type Evaluate = (ev: unknown, ast: EngineNode, ctx: unknown) => unknown;
type Handle = (...args: unknown[]) => unknown;

/** The fields of the engine's AST node this module reads or sets (see the note above). */
interface EngineNode {
  readonly op: string;
  readonly args: unknown;
  readonly meta: { readonly evaluate?: Evaluate; readonly alternate?: EngineNode; readonly macro?: EngineMacro };
  evaluate: Evaluate;
  handle?: Handle;
}

interface EngineMacro {
  evaluate(ev: unknown, macro: EngineMacro, ctx: unknown): unknown;
}

/** A function's own implementation, called with the receiver first (for a method) and then the arguments. */
export type Override = (args: readonly unknown[]) => unknown;

/** Overrides by `name/arity` for a global function and `.name/arity` for a method (arity without the receiver). */
export type Overrides = ReadonlyMap<string, Override>;

const isNode = (x: object): x is EngineNode =>
  typeof (x as { op?: unknown }).op === 'string' &&
  'meta' in x &&
  typeof (x as { evaluate?: unknown }).evaluate === 'function';

/** Every node reachable from `root`: operands, macro expansions, comprehension parts. */
function nodesOf(root: object): EngineNode[] {
  const nodes: EngineNode[] = [];
  const seen = new Set<object>();
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const x = stack.pop();
    if (x === null || typeof x !== 'object' || seen.has(x)) continue;
    seen.add(x);
    if (Array.isArray(x)) stack.push(...(x as unknown[]));
    else if (isNode(x)) {
      nodes.push(x);
      stack.push(x.args, x.meta.alternate, x.meta.macro);
    } else if (Object.getPrototypeOf(x) === Object.prototype)
      stack.push(...Object.values(x as Record<string, unknown>));
  }
  return nodes;
}

/** What evaluating the node itself costs, apart from what its operands and its handle cost. */
function flatCost(node: EngineNode): number {
  if (node.meta.alternate !== undefined || node.meta.macro !== undefined) return 0;
  switch (node.op) {
    case 'id':
    case '.':
    case '.?':
    case '[]':
    case '[?]':
    case '!_':
    case '-_':
    case 'accuValue':
    case 'accuInc':
    case 'accuPush':
      return 1;
    case 'list':
      // A literal of constants is folded into a constant by cel-go's optimizer, which the apiserver runs; it is
      // still made anew here, so it costs 1.
      return (node.args as EngineNode[]).every((e) => e.op === 'value') ? 1 : 10;
    case 'map':
      return (node.args as EngineNode[][]).every(([k, v]) => k?.op === 'value' && v?.op === 'value') ? 1 : 30;
    default:
      // Constants, logic, the conditional, comprehensions (their iterations cost what their body does), and
      // operators and calls, which their handle charges.
      return 0;
  }
}

function innerEvaluate(node: EngineNode): Evaluate {
  const { alternate, macro, evaluate } = node.meta;
  if (alternate !== undefined) return (ev, _ast, ctx) => alternate.evaluate(ev, alternate, ctx);
  if (macro !== undefined) return (ev, _ast, ctx) => macro.evaluate(ev, macro, ctx);
  if (evaluate === undefined) throw new Error(`CEL engine node "${node.op}" has no evaluate: engine changed?`);
  return evaluate;
}

const BINARY = new Set(['==', '!=', '<', '<=', '>', '>=', '+', '-', '*', '/', '%', 'in']);

function meterHandle(node: EngineNode, overrides: Overrides): void {
  const handle = node.handle;
  if (node.meta.alternate !== undefined || node.meta.macro !== undefined) return;
  if (BINARY.has(node.op)) {
    if (handle === undefined) throw new Error(`CEL engine operator "${node.op}" has no handle: engine changed?`);
    const op = node.op;
    node.handle = (left, right, ast, ev) => {
      charge(binaryCost(op, left, right));
      return handle(left, right, ast, ev);
    };
  } else if (node.op === 'call') {
    const [name, argNodes] = node.args as [string, unknown[]];
    if (handle === undefined) throw new Error(`CEL engine call "${name}" has no handle: engine changed?`);
    const own = overrides.get(`${name}/${argNodes.length}`);
    node.handle = (args, ast, ev) => {
      const values = args as unknown[];
      charge(callCost(name, undefined, values));
      return own ? own(values) : handle(args, ast, ev);
    };
  } else if (node.op === 'rcall') {
    const [name, , argNodes] = node.args as [string, unknown, unknown[]];
    if (handle === undefined) throw new Error(`CEL engine method "${name}" has no handle: engine changed?`);
    const own = overrides.get(`.${name}/${argNodes.length}`);
    node.handle = (args, ev, ast) => {
      const values = args as unknown[];
      charge(callCost(name, values[0], values.slice(1)));
      return own ? own(values) : handle(args, ev, ast);
    };
  } else if (node.op === 'comprehension') {
    if (handle === undefined) throw new Error('CEL engine comprehension has no handle: engine changed?');
    node.handle = (items, ...rest) => {
      // A map is iterated over a list of its keys, made first; a list as it is.
      if (Array.isArray(items)) checkBudget();
      else charge(traversal(shallowSize(items)));
      return handle(items, ...rest);
    };
  }
}

/**
 * all() and exists() catch an error in one element's predicate and go on with the next (CEL's commutative
 * errors), so once the meter has run out every remaining element would throw and be caught, one at a time: on a
 * 40,000-element list that alone takes longer than the walk the limit stopped. Their body returns, instead, the
 * value that ends the loop (false for all, true for exists); the evaluation is reported as cost_exceeded
 * whatever value comes out (evaluate.ts).
 */
function stopValues(nodes: readonly EngineNode[]): Map<EngineNode, boolean> {
  const stops = new Map<EngineNode, boolean>();
  for (const node of nodes) {
    if (node.op !== 'comprehension') continue;
    const args = node.args as { kind?: string; errorsAreFatal?: boolean; step: EngineNode; init: EngineNode };
    if (args.kind === 'quantifier' && args.errorsAreFatal !== true && typeof args.init.args === 'boolean')
      stops.set(args.step, !args.init.args);
  }
  return stops;
}

const SELECTS = new Set(['id', '.', '.?', '[]', '[?]']);

/** How many times each node is an operand, a macro's expansion or a comprehension's part. */
function referenceCounts(nodes: readonly EngineNode[]): Map<EngineNode, number> {
  const counts = new Map<EngineNode, number>();
  for (const node of nodes) counts.set(node, 0);
  for (const node of nodes) {
    const seen = new Set<EngineNode>();
    const stack: unknown[] = [node.args, node.meta.alternate, node.meta.macro];
    while (stack.length > 0) {
      const x = stack.pop();
      if (x === null || typeof x !== 'object') continue;
      if (isNode(x)) {
        if (!seen.has(x)) counts.set(x, (counts.get(x) ?? 0) + 1);
        seen.add(x);
      } else if (Array.isArray(x)) stack.push(...(x as unknown[]));
      else if (Object.getPrototypeOf(x) === Object.prototype)
        stack.push(...Object.values(x as Record<string, unknown>));
    }
  }
  return counts;
}

/**
 * The node's cost with that of the select chain below it (`c.?securityContext.?capabilities` reads `c` and two
 * fields: 3, charged once by the outermost select). A select always evaluates its target first, so charging the
 * chain at its top spends the same units, a little earlier, with one wrapper where there were three. Only a
 * target that nothing else refers to is folded in; it then costs nothing of its own.
 */
function foldSelectChains(nodes: readonly EngineNode[], costs: Map<EngineNode, number>, keep: ReadonlySet<EngineNode>) {
  const references = referenceCounts(nodes);
  const target = (node: EngineNode): EngineNode | undefined => {
    if (!SELECTS.has(node.op) || node.op === 'id' || node.meta.alternate || node.meta.macro) return undefined;
    const t = (node.args as unknown[])[0];
    return typeof t === 'object' && t !== null && isNode(t) ? t : undefined;
  };
  const foldable = (t: EngineNode): boolean =>
    SELECTS.has(t.op) && !keep.has(t) && references.get(t) === 1 && (costs.get(t) ?? 0) > 0;
  // Tops first: a chain's top is a select whose own target folds in, and which no select folds into.
  const folded = new Set<EngineNode>();
  for (const node of nodes) {
    const t = target(node);
    if (t !== undefined && foldable(t)) folded.add(t);
  }
  for (const node of nodes) {
    if (folded.has(node) || keep.has(node)) continue;
    let sum = costs.get(node) ?? 0;
    for (let t = target(node); t !== undefined && folded.has(t); t = target(t)) {
      sum += costs.get(t) ?? 0;
      costs.set(t, 0);
    }
    costs.set(node, sum);
  }
}

/** Wraps every node of a checked expression's tree; call once, before its first evaluation. */
export function instrument(root: object, overrides: Overrides): void {
  const nodes = nodesOf(root);
  // Each iteration of a comprehension costs at least 1 (cel-go reads its accumulator), whatever its body is.
  const steps = new Set<EngineNode>();
  for (const node of nodes) if (node.op === 'comprehension') steps.add((node.args as { step: EngineNode }).step);
  const stops = stopValues(nodes);
  const costs = new Map<EngineNode, number>();
  for (const node of nodes) costs.set(node, Math.max(flatCost(node), steps.has(node) ? 1 : 0));
  foldSelectChains(nodes, costs, steps);
  for (const node of nodes) {
    meterHandle(node, overrides);
    const cost = costs.get(node) ?? 0;
    // A node that costs nothing needs no wrapper: once the meter has run out, the next node that charges throws.
    if (cost === 0) continue;
    const inner = innerEvaluate(node);
    const stop = stops.get(node);
    node.evaluate =
      stop === undefined
        ? (ev, ast, ctx) => {
            charge(cost);
            return inner(ev, ast, ctx);
          }
        : (ev, ast, ctx) => {
            if (exhausted()) return stop;
            charge(cost);
            return inner(ev, ast, ctx);
          };
  }
}
