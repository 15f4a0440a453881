/**
 * Property test of the review path (issue 11): random objects under review, random chains of in-process
 * steps that edit the object through their view or return a JSON patch, and random outcomes (allow, throw,
 * deny in warn/audit mode, a patch that does not apply, reinvocation). Each case runs through the real
 * createReviewer → mutate phase → diff → encodeReview, and the answer is checked against a model that
 * applies the same edits to its own plain copy of the object with JSON semantics.
 *
 * Reproduce a failure with the seed and path fast-check prints, e.g.
 *   PROPERTY_SEED=123 PROPERTY_PATH='4:1:0' npx mocha test/unit/chain/review-path.property.test.ts
 * and explore further with PROPERTY_RUNS=20000.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import jsonpatch from 'fast-json-patch';
import { Registry } from 'prom-client';
import { decodeReview, encodeReview } from '../../../server/admission/codec.js';
import type { AdmissionResponse } from '../../../server/admission/types.js';
import { createChain } from '../../../server/chain/chain.js';
import { compileMatch } from '../../../server/steps/match.js';
import { createPluginSteps } from '../../../server/chain/plugin-step.js';
import type { BindableLogger } from '../../../server/base/log.js';
import { createReviewer, standaloneNamespaceLabels, type ReviewedRequest } from '../../../server/dispatch/reviewer.js';
import type { StepReport } from '../../../server/trace/step-report.js';
import { selectionOf } from '../../../server/http/routes.js';
import type { Step } from '../../../server/steps/step.js';
import { createMetrics } from '../../../server/metrics/metrics.js';
import {
  deny,
  definePlugin,
  type JsonPatchOperation,
  type Match,
  type MutateResult,
  type Operation,
} from '../../../server/plugin-api/index.js';
import { canonicalJson } from '../../helpers/canonical-json.js';

// ---------------------------------------------------------------------------------------------------------
// JSON documents
// ---------------------------------------------------------------------------------------------------------

type Container = Record<string, unknown> | unknown[];

function isContainer(value: unknown): value is Container {
  return typeof value === 'object' && value !== null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return isContainer(value) && !Array.isArray(value);
}

/** Reads a member the way a plugin does: `c[k]` (through a view, this is the view's get trap). */
function member(container: Container, key: string): unknown {
  return (container as Record<string, unknown>)[key];
}

/**
 * JSON text to objects without a prototype, so that every key — `__proto__`, `constructor`, `toString` —
 * is a plain own data property, for reads and for plain assignments alike. The model works on these: with
 * them `c[k] = v` and `delete c[k]` mean exactly what they mean in a JSON document.
 */
function parseBare(text: string): unknown {
  return JSON.parse(text, (_key, value: unknown) =>
    isObject(value) ? Object.assign(Object.create(null) as Record<string, unknown>, value) : value,
  );
}

/** Bare objects back to ordinary ones (JSON.parse keeps "__proto__" as an own key), for assert's comparisons. */
function ordinary(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value)) as unknown;
}

/** RFC 6902 `test` equality: objects regardless of key order, arrays in order, numbers by value. */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (!isContainer(a) || !isContainer(b)) return a === b;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  }
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
}

const escapeSegment = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');
const pointer = (path: readonly string[]): string => path.map((k) => `/${escapeSegment(k)}`).join('');

/** The value at `path`, read with plain member reads (through a view, only along the path). */
function at(root: Container, path: readonly string[]): unknown {
  let value: unknown = root;
  for (const key of path) value = member(value as Container, key);
  return value;
}

/**
 * Every path in `root` (root first, depth first, keys in document order), optionally only containers of a
 * kind. Walks the plain document: resolving an edit must not read through the step's view more than the edit
 * itself does, or copy-on-read would be exercised far more than by a real plugin.
 */
function pathsOf(root: Container, want: 'object' | 'array' | 'container' | 'any'): string[][] {
  const out: string[][] = [];
  const walk = (value: unknown, path: string[]): void => {
    const keep =
      want === 'any' ||
      (want === 'container' && isContainer(value)) ||
      (want === 'object' && isObject(value)) ||
      (want === 'array' && Array.isArray(value));
    if (keep) out.push(path);
    if (isContainer(value)) for (const key of Object.keys(value)) walk(member(value, key), [...path, key]);
  };
  walk(root, []);
  return out;
}

function pick<T>(list: readonly T[], n: number): T | undefined {
  return list.length === 0 ? undefined : list[n % list.length];
}

/** Whether `inner` is `outer` or inside it (object identity: assigning it under itself would make a cycle). */
function contains(outer: unknown, inner: unknown): boolean {
  if (outer === inner) return true;
  return isContainer(outer) && Object.keys(outer).some((k) => contains(member(outer, k), inner));
}

// ---------------------------------------------------------------------------------------------------------
// Edits: intents resolved against the object as it is when the step runs
// ---------------------------------------------------------------------------------------------------------

/** An existing key (the n-th, modulo) or a new one. */
type KeyRef = { readonly existing: number } | { readonly fresh: string };

type Edit =
  | { readonly kind: 'set'; readonly target: number; readonly key: KeyRef; readonly value: string }
  | { readonly kind: 'delete'; readonly target: number; readonly key: number }
  | { readonly kind: 'replace-subtree'; readonly target: number; readonly value: string }
  | { readonly kind: 'push' | 'unshift'; readonly target: number; readonly values: readonly string[] }
  | { readonly kind: 'pop' | 'shift' | 'reverse'; readonly target: number }
  | {
      readonly kind: 'splice';
      readonly target: number;
      readonly start: number;
      readonly deleteCount: number;
      readonly items: readonly string[];
    }
  | { readonly kind: 'truncate'; readonly target: number; readonly length: number }
  | {
      readonly kind: 'nest';
      readonly target: number;
      readonly key: string;
      readonly inner: string;
      readonly value: string;
    }
  | { readonly kind: 'alias'; readonly target: number; readonly key: KeyRef; readonly source: number }
  | { readonly kind: 'cycle'; readonly target: number; readonly key: string };

/**
 * Applies `edits` through `view`, choosing paths from `plain` (the same document without tracking: the raw
 * working copy for the gateway, the model's copy for the model). `value` turns a JSON text into a new value
 * as the side wants it (ordinary objects for the gateway, bare ones for the model).
 */
function applyEdits(view: Container, plain: Container, edits: readonly Edit[], value: (text: string) => unknown): void {
  for (const edit of edits) {
    switch (edit.kind) {
      case 'set':
      case 'alias': {
        const path = pick(pathsOf(plain, 'container'), edit.target)!;
        const holder = at(plain, path) as Container;
        let key: string;
        if (Array.isArray(holder)) {
          // An element in place or one past the end (an assignment that grows the array by one).
          const n = 'existing' in edit.key ? edit.key.existing : edit.key.fresh.length;
          key = String(n % (holder.length + 1));
        } else {
          const keys = Object.keys(holder);
          key = 'existing' in edit.key && keys.length > 0 ? keys[edit.key.existing % keys.length]! : freshKey(edit.key);
        }
        let next: unknown;
        if (edit.kind === 'set') next = value(edit.value);
        else {
          // A subtree copied by reference from elsewhere in the object (`a.b = a.c`), unless that would make a cycle.
          const source = pick(pathsOf(plain, 'container'), edit.source)!;
          if (contains(at(plain, source), holder)) continue;
          next = at(view, source);
        }
        (at(view, path) as Record<string, unknown>)[key] = next;
        break;
      }
      case 'cycle': {
        // A buggy plugin: a container put inside itself, which no JSON can say.
        const path = pick(pathsOf(plain, 'object'), edit.target)!;
        const holder = at(view, path) as Record<string, unknown>;
        holder[edit.key] = holder;
        break;
      }
      case 'delete': {
        const path = pick(pathsOf(plain, 'object'), edit.target)!;
        const keys = Object.keys(at(plain, path) as object);
        if (keys.length === 0) continue;
        delete (at(view, path) as Record<string, unknown>)[keys[edit.key % keys.length]!];
        break;
      }
      case 'replace-subtree': {
        const path = pick(pathsOf(plain, 'container').slice(1), edit.target);
        if (!path) continue;
        (at(view, path.slice(0, -1)) as Record<string, unknown>)[path.at(-1)!] = value(edit.value);
        break;
      }
      case 'nest': {
        // Writes below a "__proto__"/"constructor"/"prototype" own key, creating it first when needed.
        const path = pick(pathsOf(plain, 'object'), edit.target)!;
        const holder = at(view, path) as Record<string, unknown>;
        if (!(Object.hasOwn(holder, edit.key) && isObject(holder[edit.key]))) holder[edit.key] = value('{}');
        (holder[edit.key] as Record<string, unknown>)[edit.inner] = value(edit.value);
        break;
      }
      default: {
        const path = pick(pathsOf(plain, 'array'), edit.target);
        if (!path) continue;
        const length = (at(plain, path) as unknown[]).length;
        const array = at(view, path) as unknown[];
        switch (edit.kind) {
          case 'push':
            array.push(...edit.values.map(value));
            break;
          case 'unshift':
            array.unshift(...edit.values.map(value));
            break;
          case 'pop':
            array.pop();
            break;
          case 'shift':
            array.shift();
            break;
          case 'reverse':
            array.reverse();
            break;
          case 'splice': {
            const start = edit.start % (length + 1);
            array.splice(start, edit.deleteCount % (length - start + 1), ...edit.items.map(value));
            break;
          }
          case 'truncate':
            array.length = edit.length % (length + 1);
            break;
        }
      }
    }
  }
}

function freshKey(key: KeyRef): string {
  return 'fresh' in key ? key.fresh : 'new';
}

// ---------------------------------------------------------------------------------------------------------
// Patches a step returns: op intents resolved against the object as the step sees it
// ---------------------------------------------------------------------------------------------------------

/** Where an op points: an existing path (the n-th, modulo), or a key under an existing container. */
type PathRef = { readonly existing: number } | { readonly under: number; readonly key: string };

type OpIntent =
  | { readonly op: 'add'; readonly path: PathRef; readonly index: 'key' | 'end' | number; readonly value: string }
  | { readonly op: 'remove'; readonly path: PathRef }
  | { readonly op: 'replace'; readonly path: PathRef; readonly value: string }
  | { readonly op: 'move' | 'copy'; readonly from: PathRef; readonly path: PathRef; readonly index: 'key' | 'end' }
  /** value null: the value the path holds (a test that passes when the path exists). */
  | { readonly op: 'test'; readonly path: PathRef; readonly value: string | null };

/** A resolved op, values still JSON text so each side makes its own objects from it. */
type OpText =
  | { readonly op: 'add' | 'replace' | 'test'; readonly path: string; readonly value: string }
  | { readonly op: 'remove'; readonly path: string }
  | { readonly op: 'move' | 'copy'; readonly from: string; readonly path: string };

function resolvePath(doc: Container, ref: PathRef, index: 'key' | 'end' | number = 'key'): string[] {
  if ('existing' in ref) return pick(pathsOf(doc, 'any').slice(1), ref.existing) ?? [ref.existing % 2 ? 'a' : ''];
  const under = pick(pathsOf(doc, 'container'), ref.under)!;
  const holder = at(doc, under);
  if (Array.isArray(holder) && index !== 'key') {
    // Arrays: "-", or an index that may be one or two past the end (the second does not apply).
    return [...under, index === 'end' ? '-' : String(index % (holder.length + 2))];
  }
  return [...under, ref.key];
}

/**
 * The patch a step returns, each op resolved against the document as the previous ops of the same patch
 * left it (the way a plugin builds a patch), so most patches apply and some, by their intents, do not.
 */
function buildPatch(current: string, intents: readonly OpIntent[]): OpText[] {
  const scratch = parseBare(current) as Container;
  const ops: OpText[] = [];
  for (const intent of intents) {
    let op: OpText;
    switch (intent.op) {
      case 'add':
        op = { op: 'add', path: pointer(resolvePath(scratch, intent.path, intent.index)), value: intent.value };
        break;
      case 'remove':
        op = { op: 'remove', path: pointer(resolvePath(scratch, intent.path)) };
        break;
      case 'replace':
        op = { op: 'replace', path: pointer(resolvePath(scratch, intent.path)), value: intent.value };
        break;
      case 'move':
      case 'copy':
        op = {
          op: intent.op,
          from: pointer(resolvePath(scratch, intent.from)),
          path: pointer(resolvePath(scratch, intent.path, intent.index)),
        };
        break;
      case 'test': {
        const path = resolvePath(scratch, intent.path);
        const found = lookUp(scratch, path);
        const value = intent.value ?? (found.found ? JSON.stringify(found.value) : 'null');
        op = { op: 'test', path: pointer(path), value };
        break;
      }
    }
    ops.push(op);
    applyRfc6902(scratch, [materialize(op, parseBare)]);
  }
  return ops;
}

function materialize(op: OpText, value: (text: string) => unknown): JsonPatchOperation {
  return 'value' in op ? { op: op.op, path: op.path, value: value(op.value) } : op;
}

// ---------------------------------------------------------------------------------------------------------
// The model's JSON patch: RFC 6902 on bare objects, plus the gateway's documented refusals
// ---------------------------------------------------------------------------------------------------------

const ARRAY_INDEX = /^(0|[1-9][0-9]*)$/;
/** The gateway refuses these segments anywhere in a step's patch (server/patch/apply.ts), though RFC 6902 would not. */
const FORBIDDEN_SEGMENTS = new Set(['__proto__', 'constructor', 'prototype']);

function segmentsOf(p: string): string[] | undefined {
  if (!p.startsWith('/')) return undefined;
  return p
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

type Found = { readonly found: true; readonly value: unknown } | { readonly found: false };

function lookUp(doc: unknown, path: readonly string[]): Found {
  let value = doc;
  for (const key of path) {
    if (Array.isArray(value)) {
      if (!ARRAY_INDEX.test(key) || Number(key) >= value.length) return { found: false };
    } else if (!isContainer(value) || !Object.hasOwn(value, key)) return { found: false };
    value = member(value, key);
  }
  return { found: true, value };
}

function addAt(doc: Container, path: readonly string[], value: unknown): boolean {
  const parent = lookUp(doc, path.slice(0, -1));
  const key = path.at(-1);
  if (key === undefined || !parent.found || !isContainer(parent.value)) return false;
  if (!Array.isArray(parent.value)) {
    parent.value[key] = value;
    return true;
  }
  if (key === '-') parent.value.push(value);
  else if (ARRAY_INDEX.test(key) && Number(key) <= parent.value.length) parent.value.splice(Number(key), 0, value);
  else return false;
  return true;
}

function removeAt(doc: Container, path: readonly string[]): boolean {
  const parent = lookUp(doc, path.slice(0, -1)).found ? (at(doc, path.slice(0, -1)) as Container) : undefined;
  const key = path.at(-1);
  if (key === undefined || !parent || !lookUp(doc, path).found) return false;
  if (Array.isArray(parent)) parent.splice(Number(key), 1);
  else delete parent[key];
  return true;
}

/** Applies `ops` in order; false at the first that does not apply (the caller then drops the copy). */
function applyRfc6902(doc: Container, ops: readonly JsonPatchOperation[]): boolean {
  const parsed = ops.map((op) => ({
    op,
    path: segmentsOf(op.path),
    from: 'from' in op ? segmentsOf(op.from) : [],
  }));
  for (const { path, from } of parsed) {
    if (!path || !from || path.length === 0) return false;
    if ([...path, ...from].some((s) => FORBIDDEN_SEGMENTS.has(s))) return false;
  }
  for (const { op, path, from } of parsed) {
    const target = path!;
    switch (op.op) {
      case 'add':
        if (!addAt(doc, target, op.value)) return false;
        break;
      case 'remove':
        if (!removeAt(doc, target)) return false;
        break;
      case 'replace': {
        // In place: a replaced member keeps its position among its siblings.
        if (!lookUp(doc, target).found) return false;
        (at(doc, target.slice(0, -1)) as Record<string, unknown>)[target.at(-1)!] = op.value;
        break;
      }
      case 'move':
      case 'copy': {
        const source = lookUp(doc, from!);
        if (!source.found) return false;
        const below = target.length > from!.length && from!.every((s, i) => target[i] === s);
        if (op.op === 'move' && below) return false;
        const moved = op.op === 'move' ? source.value : parseBare(JSON.stringify(source.value));
        if (op.op === 'move' && !removeAt(doc, from!)) return false;
        if (!addAt(doc, target, moved)) return false;
        break;
      }
      case 'test': {
        const found = lookUp(doc, target);
        if (!found.found || !jsonEqual(found.value, op.value)) return false;
        break;
      }
    }
  }
  return true;
}

// ---------------------------------------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------------------------------------

/** What a step does once it has made its edits. */
type Outcome = 'allow' | 'throw' | 'warn-deny' | 'audit-deny';

interface StepSpec {
  readonly outcome: Outcome;
  readonly edits: readonly Edit[];
  /** A patch the step returns after its edits (when it allows); undefined: it returns nothing. */
  readonly patch: readonly OpIntent[] | undefined;
  readonly reinvocation: 'Never' | 'IfNeeded';
  /** Answers through a promise, editing after a microtask (mutate.ts's asynchronous path). */
  readonly async: boolean;
}

interface Case {
  readonly apiVersion: 'admission.k8s.io/v1' | 'admission.k8s.io/v1beta1';
  readonly operation: Operation;
  /** JSON text, so that "__proto__" keys are own keys exactly as the webhook's JSON.parse makes them. */
  readonly object: string | null;
  readonly oldObject: string | null;
  readonly dryRun: boolean;
  readonly steps: readonly StepSpec[];
}

const stepName = (index: number): string => `step-${index}`;

/** Steps whose edits are undone: a thrown error (failurePolicy Ignore), or a deny that is not enforced. */
const ROLLED_BACK: ReadonlySet<string> = new Set(['error', 'denied']);

// ---------------------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------------------

interface Invocation {
  readonly step: string;
  readonly round: number;
  /** JSON of the object as the step found it. */
  readonly before: string;
  readonly rolledBack: boolean;
}

/**
 * `root` behind a proxy that counts writes in plain JS terms: a [[Set]] that does not store the very value
 * already there, or a [[Delete]] of an own key. That is what the gateway means by a step having changed the
 * object (mutate.ts counts steps with writes, not differences): a step that pushes and pops, or replaces a
 * value by an equal new one, makes IfNeeded steps run again. The apiserver compares objects instead; either
 * is within the contract, since an IfNeeded webhook must be idempotent and may be called more than once.
 */
function countingWrites(root: Container): { view: Container; writes: () => number } {
  let writes = 0;
  const targets = new WeakMap<object, Container>();
  const proxies = new WeakMap<object, Container>();
  const wrap = (target: Container): Container => {
    let proxy = proxies.get(target);
    if (!proxy) {
      proxy = new Proxy(target, {
        get(t, key) {
          const value: unknown = Reflect.get(t, key);
          return typeof key === 'string' && isContainer(value) && Object.hasOwn(t, key) ? wrap(value) : value;
        },
        set(t, key, value: unknown) {
          const plain = isContainer(value) ? (targets.get(value) ?? value) : value;
          if (!(Object.hasOwn(t, key) && Object.is(Reflect.get(t, key), plain))) writes++;
          return Reflect.set(t, key, plain);
        },
        deleteProperty(t, key) {
          if (Object.hasOwn(t, key)) writes++;
          return Reflect.deleteProperty(t, key);
        },
      });
      proxies.set(target, proxy);
      targets.set(proxy, target);
    }
    return proxy;
  };
  return { view: wrap(root), writes: () => writes };
}

function jsonOrUndefined(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

interface ModelRun {
  readonly invocations: readonly Invocation[];
  /** JSON of the object the apiserver should store; undefined when the request has no object to patch. */
  readonly final: string | undefined;
}

/**
 * The chain as the apiserver would run the same steps as separate webhooks: each step edits its own copy of
 * the previous steps' result and is kept whole or not at all; between steps the object is JSON, so nothing
 * one step shares by reference can be changed by another. An IfNeeded step runs once more, in order, when a
 * later step changed the object after it last ran.
 */
function runModel(c: Case): ModelRun {
  if (c.object === null || c.operation === 'DELETE' || c.operation === 'CONNECT') {
    return { invocations: [], final: undefined };
  }
  const invocations: Invocation[] = [];
  let state = c.object;
  let changes = 0;
  const seen = new Map<number, number>();
  const run = (index: number, round: number): void => {
    const spec = c.steps[index]!;
    const work = parseBare(state) as Container;
    const counted = countingWrites(work);
    applyEdits(counted.view, work, spec.edits, parseBare);
    let kept = spec.outcome === 'allow';
    if (kept && spec.patch) {
      const ops = buildPatch(JSON.stringify(work), spec.patch).map((op) => materialize(op, parseBare));
      kept = applyRfc6902(counted.view, ops);
    }
    // A step that leaves the object cyclic has not produced a JSON object: it fails like one that throws.
    const after = kept ? jsonOrUndefined(work) : undefined;
    invocations.push({ step: stepName(index), round, before: state, rolledBack: after === undefined });
    if (after !== undefined) {
      if (counted.writes() > 0) changes++;
      state = after;
    }
    seen.set(index, changes);
  };
  c.steps.forEach((_, index) => run(index, 0));
  c.steps.forEach((spec, index) => {
    if (spec.reinvocation === 'IfNeeded' && seen.get(index) !== changes) run(index, 1);
  });
  return { invocations, final: state };
}

// ---------------------------------------------------------------------------------------------------------
// The gateway
// ---------------------------------------------------------------------------------------------------------

const EVERYTHING: Match = {
  rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }],
};
const UID = '5d0c4f0e-7d43-4a55-9a0b-b7c1f0a1e9aa';

interface GatewayRun {
  readonly request: ReturnType<typeof decodeReview>['request'];
  readonly response: AdmissionResponse;
  readonly reports: readonly StepReport[];
  /** What each step found, in the order the steps ran. */
  readonly trace: ReadonlyArray<{ readonly step: string; readonly before: string }>;
  /** JSON of the working copy after the review; undefined when no step ran. */
  readonly working: string | undefined;
  /** Each report's patch operations as the review's decision trace credits them (none: undefined). */
  readonly traced: ReadonlyArray<readonly JsonPatchOperation[] | undefined>;
}

function envelope(c: Case): string {
  return JSON.stringify({
    apiVersion: c.apiVersion,
    kind: 'AdmissionReview',
    request: {
      uid: UID,
      kind: { group: '', version: 'v1', kind: 'ConfigMap' },
      resource: { group: '', version: 'v1', resource: 'configmaps' },
      namespace: 'default',
      name: 'fuzzed',
      operation: c.operation,
      userInfo: { username: 'property-test' },
      object: '@object',
      oldObject: '@oldObject',
      dryRun: c.dryRun,
    },
  })
    .replace('"@object"', () => c.object ?? 'null')
    .replace('"@oldObject"', () => c.oldObject ?? 'null');
}

const silent: BindableLogger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => silent,
};
const metrics = createMetrics(new Registry(), { defaultMetrics: false });

/**
 * One step of the chain: a real plugin adapted by createPluginSteps. The wrapper only notes the raw working
 * copy (the invocation's plainObject) so the step can choose paths and the test can take snapshots without
 * reading through the tracked view, which would copy every container it reaches.
 */
function gatewayStep(
  spec: StepSpec,
  index: number,
  trace: Array<{ step: string; before: string }>,
  raw: { root?: Container },
): Step {
  const name = stepName(index);
  const plugin = definePlugin({
    name,
    match: EVERYTHING,
    setup: () => ({
      mutate(ctx): MutateResult | Promise<MutateResult> {
        const plain = raw.root!;
        trace.push({ step: name, before: JSON.stringify(plain) });
        const act = (): MutateResult => {
          applyEdits(ctx.object, plain, spec.edits, (text): unknown => JSON.parse(text));
          if (spec.outcome === 'throw') throw new Error(`${name} fails after editing`);
          if (spec.outcome !== 'allow') return deny(`${name} would deny`);
          if (!spec.patch) return undefined;
          return buildPatch(JSON.stringify(plain), spec.patch).map((op) => materialize(op, JSON.parse));
        };
        return spec.async ? Promise.resolve().then(act) : act();
      },
    }),
  });
  const mode = spec.outcome === 'warn-deny' ? 'warn' : spec.outcome === 'audit-deny' ? 'audit' : 'enforce';
  const [step] = createPluginSteps(plugin, {
    name,
    match: compileMatch(EVERYTHING),
    matchSpec: EVERYTHING,
    failurePolicy: 'Ignore',
    timeoutMs: 10_000,
    mode,
    sideEffects: 'None',
    reinvocationPolicy: spec.reinvocation,
    order: (index + 1) * 10,
    extension: name,
    attach: 'Always',
    handlers: plugin.setup(undefined),
  });
  return {
    ...step!,
    invoke(invocation) {
      raw.root = invocation.plainObject;
      return step!.invoke(invocation);
    },
  };
}

async function runGateway(c: Case): Promise<GatewayRun> {
  const trace: Array<{ step: string; before: string }> = [];
  const raw: { root?: Container } = {};
  const chain = createChain(c.steps.map((spec, index) => gatewayStep(spec, index, trace, raw)));
  const heard: ReviewedRequest[] = [];
  const reviewer = createReviewer({
    chain: () => chain,
    metrics,
    log: silent,
    namespaceLabels: standaloneNamespaceLabels,
    deadlineMarginMs: 250,
    defaultTimeoutMs: 10_000,
    onReviewed: (reviewed) => heard.push(reviewed),
  });
  const { apiVersion, request } = decodeReview(envelope(c));
  let result;
  try {
    result = await reviewer.review(request, selectionOf('mutate'));
  } catch (err) {
    assert.fail(`reviewer.review threw: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  }
  const answer = JSON.parse(encodeReview(apiVersion, result.response).toString()) as {
    apiVersion: string;
    kind: string;
    response: AdmissionResponse;
  };
  assert.equal(answer.apiVersion, apiVersion, 'the answer echoes the request apiVersion');
  assert.equal(answer.kind, 'AdmissionReview');
  return {
    request,
    response: answer.response,
    reports: result.reports,
    trace,
    working: raw.root && JSON.stringify(raw.root),
    traced: heard[0]!.trace.steps.filter((s) => s.outcome !== 'skipped').map((s) => s.patch),
  };
}

function decodedPatch(response: AdmissionResponse): JsonPatchOperation[] | undefined {
  if (response.patch === undefined) {
    assert.equal(response.patchType, undefined, 'patchType without a patch');
    return undefined;
  }
  assert.equal(response.patchType, 'JSONPatch');
  const ops: unknown = JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8'));
  assert.ok(Array.isArray(ops) && ops.length > 0, 'a patch is a non-empty array of operations');
  return ops as JsonPatchOperation[];
}

/**
 * Member order the answer must reproduce. A JSON patch has no way to reorder members, and diffing is free to
 * patch an object in place or replace it whole, so the exact order of the final object is not always
 * reachable (a step that deletes a key and adds it back moves it to the end; a diff finds nothing to do).
 * What every correct patch does give: members the original and the final object share, in the same relative
 * order in both, keep that order; a subtree that is new (nothing of its kind at that place before) comes
 * with the final object's order exactly.
 */
function checkMemberOrder(original: unknown, final: unknown, result: unknown, path: string): void {
  if (Array.isArray(final) && Array.isArray(result)) {
    final.forEach((item, i) => {
      checkMemberOrder(Array.isArray(original) ? original[i] : undefined, item, result[i], `${path}/${i}`);
    });
    return;
  }
  if (!isObject(final) || !isObject(result)) return;
  const finalKeys = Object.keys(final);
  if (isObject(original)) {
    const shared = (keys: string[]) => keys.filter((k) => Object.hasOwn(original, k) && Object.hasOwn(final, k));
    const before = shared(Object.keys(original));
    const after = shared(finalKeys);
    const got = shared(Object.keys(result));
    for (let i = 0; i < before.length; i++) {
      for (let j = i + 1; j < before.length; j++) {
        const [a, b] = [before[i]!, before[j]!];
        if (after.indexOf(a) < after.indexOf(b) && got.indexOf(a) > got.indexOf(b)) {
          assert.fail(`${path || '/'}: the patch put "${b}" before "${a}", which no step reordered`);
        }
      }
    }
  } else {
    assert.deepStrictEqual(Object.keys(result), finalKeys, `${path || '/'}: a new object's members in another order`);
  }
  for (const key of finalKeys) {
    const child = `${path}/${escapeSegment(key)}`;
    checkMemberOrder(isObject(original) ? member(original, key) : undefined, final[key], result[key], child);
  }
}

/**
 * The answer's patch applied as the apiserver would: to a copy of the object under review, where every
 * key is data. fast-json-patch's prototype ban is off because the copy has no prototypes to reach (bare
 * objects), and a JSON document may legitimately hold "__proto__" or "constructor" keys that the final diff
 * must be able to write.
 */
function patched(object: string, ops: readonly JsonPatchOperation[]): unknown {
  const copy = parseBare(object);
  return jsonpatch.applyPatch(copy, ops as jsonpatch.Operation[], true, true, false).newDocument;
}

// ---------------------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------------------

/** Keys that trip up JS objects, JSON pointers or naive prototype handling, and some ordinary ones. */
const SPECIAL_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  '',
  '~',
  '/',
  'a/b',
  'm~n',
  '~1',
  '~0/',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '0',
  '1',
  '-',
  'length',
  'é',
  '名前',
  '🙂',
];

const keyArb = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...SPECIAL_KEYS) },
  { weight: 3, arbitrary: fc.constantFrom('a', 'b', 'c', 'labels', 'spec') },
  { weight: 2, arbitrary: fc.string({ maxLength: 3 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 3 }) },
);

const primitiveArb = fc.oneof(
  fc.constant('null'),
  fc.boolean().map(String),
  fc.integer({ min: -5, max: 1000 }).map(String),
  // -0 has no JSON spelling of its own (it is written as 0): leave it out rather than model that.
  fc
    .double({ noNaN: true, noDefaultInfinity: true })
    .filter((d) => !Object.is(d, -0))
    .map((d) => JSON.stringify(d)),
  fc.string({ unit: 'grapheme', maxLength: 4 }).map((s) => JSON.stringify(s)),
);

/** JSON texts: values, and objects with unique keys (JSON.parse would keep the last of duplicates). */
const { json: jsonArb, object: objectArb } = fc.letrec<{ json: string; array: string; object: string }>((tie) => ({
  json: fc.oneof({ depthSize: 'small', maxDepth: 3 }, primitiveArb, tie('array'), tie('object')),
  array: fc.array(tie('json'), { maxLength: 4 }).map((items) => `[${items.join(',')}]`),
  object: fc
    .uniqueArray(fc.tuple(keyArb, tie('json')), { selector: ([key]) => key, maxLength: 5 })
    .map((entries) => `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(',')}}`),
}));

const nat = fc.nat({ max: 1000 });
const keyRefArb: fc.Arbitrary<KeyRef> = fc.oneof(fc.record({ existing: nat }), fc.record({ fresh: keyArb }));
const valuesArb = fc.array(jsonArb, { minLength: 1, maxLength: 3 });

// Weights in fifths: a cycle is a rare plugin bug, one edit in about a hundred.
const editArb: fc.Arbitrary<Edit> = fc.oneof(
  {
    weight: 25,
    arbitrary: fc.record({ kind: fc.constant('set' as const), target: nat, key: keyRefArb, value: jsonArb }),
  },
  { weight: 15, arbitrary: fc.record({ kind: fc.constant('delete' as const), target: nat, key: nat }) },
  { weight: 10, arbitrary: fc.record({ kind: fc.constant('replace-subtree' as const), target: nat, value: jsonArb }) },
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constantFrom('push' as const, 'unshift' as const),
      target: nat,
      values: valuesArb,
    }),
  },
  {
    weight: 10,
    arbitrary: fc.record({ kind: fc.constantFrom('pop' as const, 'shift' as const, 'reverse' as const), target: nat }),
  },
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant('splice' as const),
      target: nat,
      start: nat,
      deleteCount: nat,
      items: fc.array(jsonArb, { maxLength: 2 }),
    }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('truncate' as const), target: nat, length: nat }) },
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant('nest' as const),
      target: nat,
      key: fc.constantFrom('__proto__', 'constructor', 'prototype'),
      inner: fc.constantFrom('polluted', 'toString', 'prototype', 'x'),
      value: jsonArb,
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant('alias' as const), target: nat, key: keyRefArb, source: nat }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cycle' as const), target: nat, key: keyArb }) },
);

const pathRefArb: fc.Arbitrary<PathRef> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ existing: nat }) },
  { weight: 2, arbitrary: fc.record({ under: nat, key: keyArb }) },
);
const opIntentArb: fc.Arbitrary<OpIntent> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('add' as const),
      path: pathRefArb,
      index: fc.oneof(fc.constantFrom('key' as const, 'end' as const), nat),
      value: jsonArb,
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('remove' as const), path: pathRefArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('replace' as const), path: pathRefArb, value: jsonArb }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constantFrom('move' as const, 'copy' as const),
      from: pathRefArb,
      path: pathRefArb,
      index: fc.constantFrom('key' as const, 'end' as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('test' as const),
      path: pathRefArb,
      value: fc.oneof(fc.constant(null), jsonArb),
    }),
  },
);

/**
 * An edit that shares a container between two places (`a.b = a.c`), or makes one contain itself, ends the
 * step's edits and the step returns no patch: within one step, whether a later edit through one place shows
 * at the other is the plugin's own JS, and a fix of the gateway may reasonably copy on assignment instead.
 * What the property pins down is only what the next steps and the answer see.
 */
function endingAtSharing(spec: StepSpec): StepSpec {
  const at = spec.edits.findIndex((e) => e.kind === 'alias' || e.kind === 'cycle');
  return at === -1 ? spec : { ...spec, edits: spec.edits.slice(0, at + 1), patch: undefined };
}

const stepArb: fc.Arbitrary<StepSpec> = fc
  .record({
    outcome: fc.oneof(
      { weight: 6, arbitrary: fc.constant('allow' as const) },
      { weight: 3, arbitrary: fc.constantFrom('throw' as const, 'warn-deny' as const, 'audit-deny' as const) },
    ),
    edits: fc.array(editArb, { maxLength: 5 }),
    patch: fc.option(fc.array(opIntentArb, { minLength: 1, maxLength: 4 }), { nil: undefined, freq: 2 }),
    reinvocation: fc.constantFrom('Never' as const, 'IfNeeded' as const),
    async: fc.boolean(),
  })
  .map(endingAtSharing);

/** As JS enumerates it (integer-like keys first), so the text is what JSON.stringify of the parsed object gives. */
const documentArb = objectArb.map((text) => JSON.stringify(JSON.parse(text)));

const caseArb: fc.Arbitrary<Case> = fc.record({
  apiVersion: fc.constantFrom('admission.k8s.io/v1' as const, 'admission.k8s.io/v1beta1' as const),
  operation: fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom('CREATE' as const, 'UPDATE' as const) },
    { weight: 1, arbitrary: fc.constantFrom('DELETE' as const, 'CONNECT' as const) },
  ),
  object: fc.option(documentArb, { nil: null, freq: 15 }),
  oldObject: fc.option(documentArb, { nil: null }),
  dryRun: fc.boolean(),
  steps: fc.array(stepArb, { minLength: 1, maxLength: 6 }),
});

// ---------------------------------------------------------------------------------------------------------
// The properties
// ---------------------------------------------------------------------------------------------------------

const prototypeKeys = (): string[] => Reflect.ownKeys(Object.prototype).map(String).sort();

/** Checks one case; throws (an assertion) on the first property that does not hold. */
async function check(c: Case): Promise<void> {
  const pristineProto = prototypeKeys();
  const model = runModel(c);
  let run: GatewayRun;
  try {
    run = await runGateway(c);
  } finally {
    // 5. No prototype pollution. Cleaned up before failing, so the rest of the suite runs on a sound realm.
    const added = prototypeKeys().filter((k) => !pristineProto.includes(k));
    for (const key of added) delete (Object.prototype as Record<string, unknown>)[key];
    assert.deepEqual(added, [], 'Object.prototype gained keys');
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  }
  const { request, response, reports, trace } = run;

  // 1. An answer in protocol: allowed (every failing or denying step is Ignore, warn or audit), no error status.
  assert.equal(response.uid, UID);
  assert.equal(response.allowed, true, `refused: ${JSON.stringify(response.status)}`);
  assert.equal(response.status, undefined);
  const ops = decodedPatch(response);

  // 3. The request object (and old object) are as the apiserver sent them.
  assert.deepStrictEqual(request.object, c.object === null ? null : JSON.parse(c.object));
  assert.equal(JSON.stringify(request.object), c.object ?? 'null');
  assert.equal(JSON.stringify(request.oldObject), c.oldObject ?? 'null');

  // 4. A rolled-back step leaves the working copy exactly (bytes, key order) as it found it.
  const ran = reports.filter((r) => r.outcome !== 'skipped');
  assert.equal(ran.length, trace.length, 'one report per invocation');
  ran.forEach((report, i) => {
    if (!ROLLED_BACK.has(report.outcome)) return;
    const after = trace[i + 1]?.before ?? run.working;
    assert.equal(after, trace[i]!.before, `${report.step} (round ${report.round ?? 0}) was not rolled back exactly`);
  });

  // 6. The decision trace credits each invocation with its own operations: applied to the object it found, they
  // give the object it left (what the next one found), values as it left them.
  ran.forEach((report, i) => {
    const found = trace[i]!.before;
    const left = trace[i + 1]?.before ?? run.working!;
    const ops = run.traced[i] ?? [];
    const got = ops.length > 0 ? patched(found, ops) : parseBare(found);
    assert.equal(
      canonicalJson(ordinary(got)),
      canonicalJson(ordinary(parseBare(left))),
      `${report.step} (round ${report.round ?? 0}) is credited with ${JSON.stringify(ops)}`,
    );
  });

  // The same invocations as the model, each finding the object the model had at that point.
  assert.deepStrictEqual(
    ran.map((r, i) => ({
      step: r.step,
      round: r.round ?? 0,
      before: trace[i]!.before,
      rolledBack: ROLLED_BACK.has(r.outcome),
    })),
    model.invocations,
    'the steps ran, or found the object, otherwise than the model says',
  );

  // 2. The patch turns the request object into the model's object, in member order as far as a patch can say it.
  if (model.final === undefined) {
    assert.equal(ops, undefined, `no patch on ${c.operation} or without an object`);
    return;
  }
  assert.equal(run.working, model.final, 'the working copy ended otherwise than the model');
  const result = ops ? patched(c.object!, ops) : parseBare(c.object!);
  const expected = parseBare(model.final);
  assert.deepStrictEqual(ordinary(result), ordinary(expected), `patch ${JSON.stringify(ops)}`);
  assert.equal(canonicalJson(result), canonicalJson(expected), `patch ${JSON.stringify(ops)}`);
  checkMemberOrder(parseBare(c.object!), expected, result, '');
}

/** `PROPERTY_SEED`/`PROPERTY_PATH` replay a reported failure; `PROPERTY_RUNS` explores further. */
function settings(): fc.Parameters<[Case]> {
  const env = process.env;
  return {
    seed: env.PROPERTY_SEED ? Number(env.PROPERTY_SEED) : 0x1d_2025,
    numRuns: env.PROPERTY_RUNS ? Number(env.PROPERTY_RUNS) : 400,
    ...(env.PROPERTY_PATH ? { path: env.PROPERTY_PATH } : {}),
  };
}

/** A CREATE of `object` through steps that allow and run once unless told otherwise. */
function caseOf(object: unknown, steps: ReadonlyArray<Partial<StepSpec>>): Case {
  return {
    apiVersion: 'admission.k8s.io/v1',
    operation: 'CREATE',
    object: JSON.stringify(object),
    oldObject: null,
    dryRun: false,
    steps: steps.map((step) => ({
      outcome: 'allow',
      edits: [],
      patch: undefined,
      reinvocation: 'Never',
      async: false,
      ...step,
    })),
  };
}

/** A step that returns exactly `ops` (a path with `under` names a key below the n-th container, depth first). */
const returns = (...patch: OpIntent[]): Partial<StepSpec> => ({ patch });

describe('review path (property)', function () {
  this.timeout(120_000);

  it('answers every generated chain with one patch that gives the modelled object, rolling failed steps back exactly', async function () {
    await fc.assert(fc.asyncProperty(caseArb, check), settings());
  });

  // The property's findings at cd15644, each as small as shrinking (and then hand-tidying) made it. They run
  // the same check, so each names one gateway bug and passes once that bug is fixed.
  describe('minimal counterexamples', function () {
    it('rolls back a step that pushed to an array without leaving a hole (the next push is patched at index 1)', async function () {
      // Containers depth first: 0 = the object, 1 = /spec, 2 = /spec/args.
      await check(
        caseOf({ spec: { args: ['a'] } }, [
          { outcome: 'throw', edits: [{ kind: 'push', target: 2, values: ['"x"'] }] },
          { edits: [{ kind: 'push', target: 2, values: ['"y"'] }] },
        ]),
      );
    });

    it('does not let a later step edit, through one path, a container an earlier step also put at another', async function () {
      // copy-labels: template.metadata.labels = metadata.labels; tier edits the template's labels; look looks.
      await check(
        caseOf({ metadata: { labels: { app: 'web' } }, spec: { template: { metadata: {} } } }, [
          { edits: [{ kind: 'alias', target: 5, key: { fresh: 'labels' }, source: 2 }] },
          { edits: [{ kind: 'set', target: 6, key: { fresh: 'tier' }, value: '"web"' }] },
          {},
        ]),
      );
    });

    it("credits a step's write when a later step that writes nothing reached a copy of the container it wrote", async function () {
      // Containers depth first: 0 = the object, 1 = /spec, 2 = /spec/list, 3 = /spec/list/0. The first two steps
      // edit the element the working copy made; the third moves it and is rolled back, so the fourth, setting the
      // value it already has, reaches a copy of it in its place.
      await check(
        caseOf({ spec: { list: [{ a: '1' }] } }, [
          { edits: [{ kind: 'set', target: 3, key: { fresh: 'b' }, value: '"x"' }] },
          { edits: [{ kind: 'set', target: 3, key: { existing: 0 }, value: '"2"' }] },
          {
            outcome: 'throw',
            edits: [
              { kind: 'push', target: 2, values: ['{"b":1}'] },
              { kind: 'reverse', target: 2 },
            ],
          },
          { edits: [{ kind: 'set', target: 3, key: { existing: 0 }, value: '"2"' }] },
          { edits: [{ kind: 'set', target: 1, key: { fresh: 'x' }, value: '1' }] },
        ]),
      );
    });

    it('fails a step that makes the object cyclic, instead of throwing out of the review', async function () {
      await check(caseOf({ spec: { a: 1 } }, [{ edits: [{ kind: 'cycle', target: 1, key: 'self' }] }, {}]));
    });

    describe('refuses a step patch that RFC 6902 does not apply', function () {
      it('replace or remove of a missing member named like an Object.prototype method', async function () {
        await check(
          caseOf({ metadata: { labels: { app: 'web' } } }, [
            returns(
              { op: 'add', path: { under: 2, key: 'team' }, index: 'key', value: '"payments"' },
              { op: 'replace', path: { under: 2, key: 'toString' }, value: '"x"' },
            ),
            returns(
              { op: 'add', path: { under: 2, key: 'cleaned' }, index: 'key', value: '"yes"' },
              { op: 'remove', path: { under: 2, key: 'hasOwnProperty' } },
            ),
          ]),
        );
      });

      it('a test op that holds: equal objects with a member named "hasOwnProperty"', async function () {
        await check(
          caseOf({ metadata: { labels: { hasOwnProperty: 'x' } } }, [
            returns(
              { op: 'test', path: { existing: 1 }, value: '{"hasOwnProperty":"x"}' },
              { op: 'add', path: { under: 2, key: 'team' }, index: 'key', value: '"a"' },
            ),
          ]),
        );
      });

      it('an empty array index ("/list/", taken as 0)', async function () {
        // Paths depth first: 0 = /list, 1 = /list/0, 2 = /list/1.
        await check(
          caseOf({ list: ['a', 'b'] }, [
            returns({ op: 'move', from: { existing: 2 }, path: { under: 1, key: '' }, index: 'key' }),
          ]),
        );
      });

      it('a move from "/…/length" of an empty array (the answer then carries an add without a value)', async function () {
        await check(
          caseOf({ spec: { none: [] } }, [
            returns({ op: 'move', from: { under: 2, key: 'length' }, path: { under: 1, key: 'first' }, index: 'key' }),
          ]),
        );
      });

      it('a move into its own child', async function () {
        // Paths depth first: 0 = /spec, 1 = /spec/list, 2 = /spec/list/0, 3 = /spec/list/0/0, ...
        await check(
          caseOf({ spec: { list: [['x'], { b: 1 }] } }, [
            returns({ op: 'move', from: { existing: 2 }, path: { existing: 3 }, index: 'key' }),
          ]),
        );
      });

      it('a copy to an array index past the end', async function () {
        // Containers: 0 = the object, 1 = /spec, 2 = /spec/list; path 2 = /x.
        await check(
          caseOf({ spec: { list: [] }, x: 1 }, [
            returns({ op: 'copy', from: { existing: 2 }, path: { under: 2, key: '1' }, index: 'key' }),
          ]),
        );
      });

      it('a move whose target, once the source is removed, is below a primitive (the value is dropped)', async function () {
        // Paths: 0 = /spec, 1 = /spec/list, 2 = /spec/list/0, 3 = /spec/list/1, 4 = /spec/list/1/a.
        await check(
          caseOf({ spec: { list: ['x', { a: 1 }, 'y'] } }, [
            returns({ op: 'move', from: { existing: 2 }, path: { existing: 4 }, index: 'key' }),
          ]),
        );
      });
    });
  });
});
