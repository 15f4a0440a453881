/**
 * Property tests of declared write sets (issue 14): "parallel == serial".
 *
 * Random chains of in-process steps (real plugins through createPluginSteps, createChain, createReviewer) on a
 * Pod-like object, each step with random `supplies` and `dependsOn`. A step keeps to what it declares — it
 * writes only below its supplies and reads only below its dependsOn pointers — and every value it writes, its
 * warnings and whether it denies are derived from what it read, so that running it in the wrong order, or on
 * the wrong object, changes the answer. The chain WITH the declarations (declared steps in levels, each on a
 * copy of the object as its level began, merged in chain order) must answer exactly what the same steps give
 * run one after another WITHOUT them: the same decision, warnings (in order), audit annotations and stored
 * object (the request's object with the answer's patch applied). Besides:
 *  - every step is called as often as a model of the chain says: a declared IfNeeded step once more exactly
 *    when a later step changed something at its dependsOn pointers, an undeclared one when a later step
 *    changed anything;
 *  - a step that must run after another (they overlap, or it names the other) starts after the other ended;
 *  - reports carry the level a step ran in once some level ran several steps.
 * The second property holds a step that writes outside its supplies: it fails (write_outside_supplies, in its
 * reports and the metric), and the answer is that of the serial chain in which it wrote nothing and failed.
 *
 * Plans with problems (dependsOn naming a later step or an unknown one, overlapping supplies with equal
 * orders) are never generated; example tests at the end cover them. Generated chains keep to these limits,
 * under which serial and leveled execution give the same object by contract: an IfNeeded step is idempotent
 * (it does not read what it supplies, and makes no push, unshift, shift or delete: see withinReinvocationLimits), and no later step supplies what
 * an IfNeeded step supplies (a declared step is not reinvoked for that, while a webhook would be).
 *
 * A failure prints the chain as YAML-like text, and the schedule of the asynchronous steps. Reproduce with
 *   PROPERTY_SEED=123 PROPERTY_PATH='4:1:0' npx mocha test/unit/chain/declared-write-sets.property.test.ts
 * and explore further with PROPERTY_RUNS=5000.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import jsonpatch from 'fast-json-patch';
import { Registry } from 'prom-client';
import { decodeReview, encodeReview } from '../../../server/admission/codec.js';
import type { AdmissionResponse } from '../../../server/admission/types.js';
import type { BindableLogger } from '../../../server/base/log.js';
import { createChain, type Chain } from '../../../server/chain/chain.js';
import { compileMatch } from '../../../server/steps/match.js';
import { createPluginSteps } from '../../../server/chain/plugin-step.js';
import { createReviewer, standaloneNamespaceLabels, type ReviewedRequest } from '../../../server/dispatch/reviewer.js';
import type { StepReport } from '../../../server/trace/step-report.js';
import { declarationFields } from '../../../server/steps/declarations.js';
import type { Step } from '../../../server/steps/step.js';
import type { FailurePolicy, Mode } from '../../../server/config/step-options.js';
import { selectionOf } from '../../../server/http/routes.js';
import { createMetrics } from '../../../server/metrics/metrics.js';
import {
  definePlugin,
  deny,
  type JsonPatchOperation,
  type Match,
  type MutateContext,
  type MutateResult,
} from '../../../server/plugin-api/index.js';
import { canonicalJson } from '../../helpers/canonical-json.js';

// ---------------------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------------------

type Obj = Record<string, unknown>;

const isObj = (value: unknown): value is Obj => typeof value === 'object' && value !== null && !Array.isArray(value);

const jsonEqual = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);

/** 32-bit FNV-1a, as six hex digits: a short stand-in for "everything the step read". */
function digestOf(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0').slice(0, 6);
}

const unescape = (segment: string): string => segment.replace(/~1/g, '/').replace(/~0/g, '~');
const segmentsOf = (pointer: string): string[] => pointer.slice(1).split('/').map(unescape);
const pointerOf = (path: readonly string[]): string =>
  path.map((s) => `/${s.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/** Whether some path is covered by both patterns (`*` matches any one segment; each covers what is below it). */
function patternsOverlap(a: readonly string[], b: readonly string[]): boolean {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i] && a[i] !== '*' && b[i] !== '*') return false;
  }
  return true;
}

/** Whether every path `inner` covers is covered by `outer`. */
function patternWithin(inner: readonly string[], outer: readonly string[]): boolean {
  return outer.length <= inner.length && outer.every((s, i) => s === '*' || s === inner[i]);
}

/**
 * What a reader of `patterns` sees in `root`: every existing path they match, with its value. Read member by
 * member, as a plugin reads its object (through the step's view in the gateway).
 */
function projection(root: unknown, patterns: readonly (readonly string[])[]): string {
  const seen: Array<[string, string]> = [];
  const walk = (value: unknown, rest: readonly string[], at: string[]): void => {
    if (rest.length === 0) {
      seen.push([pointerOf(at), canonicalJson(value)]);
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    const [head, ...tail] = rest as [string, ...string[]];
    const keys = head === '*' ? Object.keys(value).sort() : Object.hasOwn(value, head) ? [head] : [];
    for (const key of keys) walk((value as Obj)[key], tail, [...at, key]);
  };
  for (const pattern of patterns) walk(root, pattern, []);
  return JSON.stringify(seen);
}

// ---------------------------------------------------------------------------------------------------------
// Lanes: the pointers steps declare, and what a step can do at each
// ---------------------------------------------------------------------------------------------------------

/**
 * key: a member of a map (whose maps may have to be created on the way); map: a whole map; each: a path below
 * every element of /spec/containers; index: below one element; elements: every element, replaced whole;
 * array: the array itself (elements added and removed).
 */
type LaneKind = 'key' | 'map' | 'each' | 'index' | 'elements' | 'array';

interface Lane {
  readonly pointer: string;
  readonly path: readonly string[];
  readonly kind: LaneKind;
  /** What `set` writes there, for the step's value. */
  readonly value: (v: string) => unknown;
}

const lane = (pointer: string, kind: LaneKind, value: (v: string) => unknown = (v) => v): Lane => ({
  pointer,
  path: segmentsOf(pointer),
  kind,
  value,
});

const LANES: readonly Lane[] = [
  lane('/metadata/labels/app', 'key'),
  lane('/metadata/labels/team', 'key'),
  lane('/metadata/labels/tier', 'key'),
  lane('/metadata/labels', 'map', (v) => ({ app: v })),
  lane('/metadata/annotations/example.com~1owner', 'key'),
  lane('/metadata/annotations/note', 'key'),
  lane('/metadata/annotations', 'map', (v) => ({ note: v })),
  lane('/spec/config/db/host', 'key'),
  lane('/spec/config/db', 'map', (v) => ({ host: v, port: 5432 })),
  lane('/spec/config/cache/size', 'key'),
  lane('/spec/config', 'map', (v) => ({ db: { host: v } })),
  lane('/spec/containers/*/image', 'each'),
  lane('/spec/containers/*/resources', 'each', (v) => ({ requests: { cpu: v } })),
  lane('/spec/containers/*/resources/limits/cpu', 'each'),
  lane('/spec/containers/0/image', 'index'),
  lane('/spec/containers/1/resources/limits', 'index', (v) => ({ cpu: v })),
  lane('/spec/containers/*', 'elements'),
  lane('/spec/containers', 'array'),
];
const LANE = new Map(LANES.map((l) => [l.pointer, l]));
const laneOf = (pointer: string): Lane => LANE.get(pointer)!;

type Op = 'set' | 'default' | 'delete' | 'prune' | 'push' | 'unshift' | 'shift' | 'ensure';

/**
 * What a step can do at a lane. `default` sets only what is absent; `prune` deletes a member and then its map
 * when that is left empty; `ensure` makes sure an element named after the step is there, with the step's image.
 */
const OPS: Readonly<Record<LaneKind, readonly Op[]>> = {
  key: ['set', 'default', 'delete', 'prune'],
  map: ['set', 'default', 'delete'],
  each: ['set', 'default', 'delete'],
  index: ['set', 'default', 'delete'],
  elements: ['set'],
  array: ['push', 'unshift', 'shift', 'ensure', 'set', 'delete'],
};

/** Ops that change the object again when repeated: an IfNeeded step (which must be idempotent) makes none. */
const REPEATING: ReadonlySet<Op> = new Set(['push', 'unshift', 'shift']);

/** The map a `prune` of `key` may delete, as the lane that covers it: the step must read it to see it empty. */
function prunedMapLane(key: Lane): Lane {
  const parent = key.path.slice(0, -1);
  return LANES.filter((l) => l.kind === 'map' && patternWithin(parent, l.path)).sort(
    (a, b) => b.path.length - a.path.length,
  )[0]!;
}

// ---------------------------------------------------------------------------------------------------------
// Steps
// ---------------------------------------------------------------------------------------------------------

interface Action {
  readonly lane: string;
  readonly op: Op;
}

/**
 * deny-if: denies when what it read hashes to an even digest. fail-outside: only in the serial counterpart of
 * a step that writes outside its supplies (it writes nothing and fails with the gateway's message).
 */
type Outcome = 'allow' | 'deny' | 'deny-if' | 'throw' | 'fail-outside';

interface StepSpec {
  readonly name: string;
  /** With declarations in the leveled run (undeclared: a barrier in both runs). */
  readonly declared: boolean;
  /** Lanes it writes below (an undeclared step keeps to them too, without saying so). */
  readonly supplies: readonly string[];
  /** Lanes it reads. */
  readonly reads: readonly string[];
  /** Earlier steps it names in dependsOn, and whose having run it notices (a side effect outside the object). */
  readonly after: readonly string[];
  readonly actions: readonly Action[];
  /** A lane it also writes, outside its supplies (the second property). */
  readonly outside?: string;
  readonly outcome: Outcome;
  readonly mode: Mode;
  readonly failurePolicy: FailurePolicy;
  readonly reinvocation: 'Never' | 'IfNeeded';
  /** Answers after a scheduled pause (the schedule is random in the leveled run). */
  readonly async: boolean;
  /** Edits a copy and returns the difference as a JSON patch instead of editing its view. */
  readonly returnsPatch: boolean;
  /** Adds a warning and an audit annotation of its own, naming what it read. */
  readonly notes: boolean;
  /** The entry's order; by default 10, 20, … in chain order. */
  readonly order?: number;
}

interface Case {
  readonly object: Obj;
  readonly steps: readonly StepSpec[];
}

/** Counts the writes a step makes, as the gateway counts them: a set of another value, a delete of a member. */
class Writer {
  writes = 0;

  set(holder: Obj | unknown[], key: string | number, value: unknown): void {
    if (jsonEqual((holder as Obj)[key], value)) return;
    (holder as Obj)[key] = value;
    this.writes++;
  }

  remove(holder: Obj, key: string): void {
    if (!Object.hasOwn(holder, key)) return;
    delete holder[key];
    this.writes++;
  }

  /** The map at `path` below `root`, created on the way when `create`; undefined when it is not there. */
  mapAt(root: Obj, path: readonly string[], create: boolean): Obj | undefined {
    let at = root;
    for (const key of path) {
      const next = at[key];
      if (isObj(next)) at = next;
      else if (next === undefined && create) {
        this.set(at, key, {});
        at = at[key] as Obj;
      } else return undefined;
    }
    return at;
  }
}

/** `op` on the member at `path` below `root` (maps created on the way by a set). */
function atMember(w: Writer, root: Obj, path: readonly string[], op: Op, value: unknown): void {
  const key = path.at(-1)!;
  const parentPath = path.slice(0, -1);
  switch (op) {
    case 'set':
    case 'default': {
      const existing = w.mapAt(root, parentPath, false);
      if (op === 'default' && existing && Object.hasOwn(existing, key)) return;
      const parent = existing ?? w.mapAt(root, parentPath, true);
      if (parent) w.set(parent, key, value);
      return;
    }
    case 'delete':
    case 'prune': {
      const parent = w.mapAt(root, parentPath, false);
      if (!parent) return;
      w.remove(parent, key);
      if (op === 'prune' && Object.keys(parent).length === 0) {
        const grandparent = w.mapAt(root, parentPath.slice(0, -1), false);
        if (grandparent) w.remove(grandparent, parentPath.at(-1)!);
      }
      return;
    }
    default:
      throw new Error(`${op} is not an op of a member`);
  }
}

/** Does `action` to `root` (the step's view, or the model's plain copy), writing values made from `v`. */
function act(action: Action, root: Obj, v: string, step: string, w: Writer): void {
  const l = laneOf(action.lane);
  const spec = w.mapAt(root, ['spec'], false);
  const containers = spec?.containers;
  switch (l.kind) {
    case 'key':
    case 'map':
      atMember(w, root, l.path, action.op, l.value(v));
      return;
    case 'each':
      if (!Array.isArray(containers)) return;
      for (let i = 0; i < containers.length; i++) {
        const element: unknown = containers[i];
        if (isObj(element)) atMember(w, element, l.path.slice(3), action.op, l.value(`${v}.${i}`));
      }
      return;
    case 'index': {
      const element: unknown = Array.isArray(containers) ? containers[Number(l.path[2])] : undefined;
      if (isObj(element)) atMember(w, element, l.path.slice(3), action.op, l.value(v));
      return;
    }
    case 'elements':
      if (!Array.isArray(containers)) return;
      for (let i = 0; i < containers.length; i++) {
        const element: unknown = containers[i];
        const name = isObj(element) && typeof element.name === 'string' ? element.name : `c${i}`;
        w.set(containers, i, { name, image: `${v}.${i}` });
      }
      return;
    case 'array': {
      if (!spec) return;
      if (action.op === 'set' || action.op === 'delete') {
        atMember(w, spec, ['containers'], action.op, [{ name: step, image: v }]);
        return;
      }
      if (action.op === 'shift') {
        if (Array.isArray(containers) && containers.length > 0) {
          containers.shift();
          w.writes++;
        }
        return;
      }
      if (!Array.isArray(containers)) w.set(spec, 'containers', []);
      const list = spec.containers as unknown[];
      if (action.op === 'ensure') {
        const at = list.findIndex((c) => isObj(c) && c.name === step);
        if (at === -1) {
          list.push({ name: step, image: v });
          w.writes++;
        } else w.set(list[at] as Obj, 'image', v);
        return;
      }
      const added = { name: `${step}-${list.length}`, image: v };
      if (action.op === 'push') list.push(added);
      else list.unshift(added);
      w.writes++;
      return;
    }
  }
}

/** What a step read: its dependsOn lanes in `root`, and which of the steps it names had run when it started. */
function readDigest(spec: StepSpec, root: unknown, ran: readonly boolean[]): string {
  const read = projection(
    root,
    spec.reads.map((r) => laneOf(r).path),
  );
  return digestOf(`${read}|${ran.map(String).join(',')}`);
}

/** A step's work: reads, then writes (its view or a plain copy). Returns the digest of what it read. */
function perform(spec: StepSpec, root: Obj, ran: readonly boolean[], w: Writer): string {
  const digest = readDigest(spec, root, ran);
  const v = `${spec.name}-${digest}`;
  for (const action of spec.actions) act(action, root, v, spec.name, w);
  if (spec.outside) act({ lane: spec.outside, op: 'set' }, root, `${spec.name}-outside`, spec.name, w);
  return digest;
}

/** The message the gateway gives a write outside the supplies, with the pointer left out. */
const outsideMessage = (spec: StepSpec): string =>
  `wrote <outside>, outside its supplies (${spec.declared && spec.supplies.length ? spec.supplies.join(', ') : 'none'})`;

/** Whether the step refuses, given what it read: a denial, a failure, or undefined when it allows. */
function refusalOf(spec: StepSpec, digest: string): 'deny' | 'fail' | undefined {
  switch (spec.outcome) {
    case 'allow':
      return undefined;
    case 'deny':
      return 'deny';
    case 'deny-if':
      return parseInt(digest.at(-1)!, 16) % 2 === 0 ? 'deny' : undefined;
    case 'throw':
    case 'fail-outside':
      return 'fail';
  }
}

/** Whether a refusal of `spec` ends the phase (an enforced deny, or a failure of an enforcing Fail step). */
const ends = (spec: StepSpec, refusal: 'deny' | 'fail'): boolean =>
  spec.mode === 'enforce' && (refusal === 'deny' || spec.failurePolicy === 'Fail');

// ---------------------------------------------------------------------------------------------------------
// The model: the chain in chain order on plain JSON, and who is called how often
// ---------------------------------------------------------------------------------------------------------

interface ModelRun {
  /** Calls of each step. */
  readonly calls: ReadonlyMap<string, number>;
  /** The step whose refusal ended the phase, if one did. */
  readonly endedBy: string | undefined;
  /** The object the chain leaves (when it allowed). */
  readonly final: unknown;
}

/**
 * The chain run step after step in chain order, each step on the previous one's result. Reinvocation: an
 * undeclared IfNeeded step runs once more when a later step changed the object (as the gateway counts it: a
 * step that wrote, declared or not); a declared IfNeeded step only when a later
 * step changed what it reads (the values at its dependsOn pointers). `declarations`: false for the serial run.
 */
function runModel(c: Case, declarations: boolean): ModelRun {
  const declared = (spec: StepSpec): boolean => declarations && spec.declared;
  let state: unknown = structuredClone(c.object);
  const calls = new Map<string, number>();
  const ran = new Set<string>();
  const invoked: StepSpec[] = [];
  const stale = new Set<StepSpec>();
  let changes = 0;
  const seen = new Map<StepSpec, number>();

  /** One call; true when its refusal ends the phase. */
  const call = (spec: StepSpec): boolean => {
    calls.set(spec.name, (calls.get(spec.name) ?? 0) + 1);
    if (!invoked.includes(spec)) invoked.push(spec);
    const work = structuredClone(state) as Obj;
    const w = new Writer();
    const digest = perform(
      spec,
      work,
      spec.after.map((n) => ran.has(n)),
      w,
    );
    ran.add(spec.name);
    const refusal = refusalOf(spec, digest);
    if (refusal) {
      seen.set(spec, changes);
      return ends(spec, refusal);
    }
    // As the gateway counts it for every step: one that wrote (a returned patch writes only what changed).
    const changed = spec.returnsPatch ? !jsonEqual(state, work) : w.writes > 0;
    if (changed) changes++;
    for (const reader of invoked) {
      if (reader === spec || !declared(reader) || reader.reinvocation !== 'IfNeeded') continue;
      const patterns = reader.reads.map((r) => laneOf(r).path);
      if (projection(state, patterns) !== projection(work, patterns)) stale.add(reader);
    }
    seen.set(spec, changes);
    state = work;
    return false;
  };

  for (const spec of c.steps) {
    if (call(spec)) return { calls, endedBy: spec.name, final: state };
  }
  for (const spec of c.steps) {
    if (spec.reinvocation !== 'IfNeeded') continue;
    if (declared(spec) ? !stale.has(spec) : seen.get(spec) === changes) continue;
    if (call(spec)) return { calls, endedBy: spec.name, final: state };
  }
  return { calls, endedBy: undefined, final: state };
}

/** Why `later` must run after `earlier` (both in chain order), by the declarations; undefined: nothing. */
function mustFollow(earlier: StepSpec, later: StepSpec): boolean {
  if (!earlier.declared || !later.declared) return true;
  if (later.after.includes(earlier.name)) return true;
  const paths = (lanes: readonly string[]) => lanes.map((l) => laneOf(l).path);
  const meet = (a: readonly string[], b: readonly string[]) =>
    paths(a).some((x) => paths(b).some((y) => patternsOverlap(x, y)));
  return (
    meet(earlier.supplies, later.reads) || meet(earlier.supplies, later.supplies) || meet(earlier.reads, later.supplies)
  );
}

// ---------------------------------------------------------------------------------------------------------
// The gateway
// ---------------------------------------------------------------------------------------------------------

const EVERYTHING: Match = {
  rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }],
};
const UID = '0b6c3c0e-4f1d-4d47-9c53-2a1f7b3c9e11';

const silent: BindableLogger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => silent,
};

interface CallEvent {
  readonly step: string;
  readonly event: 'start' | 'end';
}

/** What one run of the chain answered, and what happened on the way. */
interface GatewayRun {
  /** The answer without its patch (compared as `stored`). */
  readonly answer: Omit<AdmissionResponse, 'patch'>;
  /** The request object with the answer's patch applied, as the apiserver stores it. */
  readonly stored: unknown;
  /** The request object with each step's own operations (the decision trace's) applied in the trace's order. */
  readonly replayed: unknown;
  readonly reports: readonly StepReport[];
  readonly events: readonly CallEvent[];
  readonly calls: ReadonlyMap<string, number>;
  readonly chain: Chain;
  /** admission_gateway_writes_outside_supplies_total by step. */
  readonly outside: ReadonlyMap<string, number>;
}

/** The dependsOn of a declared step: the lanes it reads, then the steps it names. */
const dependsOnOf = (spec: StepSpec): string[] => [...spec.reads, ...spec.after];

/** One step: a real plugin adapted by createPluginSteps, declared as `spec` says when `withDeclarations`. */
function gatewayStep(
  spec: StepSpec,
  index: number,
  withDeclarations: boolean,
  pause: (step: string) => Promise<void>,
  ran: Set<string>,
  events: CallEvent[],
): Step {
  const work = (ctx: MutateContext, saw: readonly boolean[]): MutateResult => {
    const w = new Writer();
    let digest: string;
    let patch: JsonPatchOperation[] | undefined;
    if (spec.returnsPatch) {
      const before = JSON.parse(JSON.stringify(ctx.object)) as Obj;
      const after = structuredClone(before);
      digest = perform(spec, after, saw, w);
      patch = jsonpatch.compare(before, after) as JsonPatchOperation[];
    } else digest = perform(spec, ctx.object, saw, w);
    if (spec.notes) {
      ctx.warn(`saw ${digest}`);
      ctx.annotate('seen', digest);
    }
    const refusal = refusalOf(spec, digest);
    if (refusal === 'deny') return deny(`${spec.name} denies after reading ${digest}`);
    if (refusal === 'fail') {
      throw new Error(spec.outcome === 'fail-outside' ? outsideMessage(spec) : `${spec.name} fails on ${digest}`);
    }
    return patch?.length ? patch : undefined;
  };
  const plugin = definePlugin({
    name: spec.name,
    match: EVERYTHING,
    setup: () => ({
      mutate(ctx): MutateResult | Promise<MutateResult> {
        events.push({ step: spec.name, event: 'start' });
        const saw = spec.after.map((n) => ran.has(n));
        const finish = (): MutateResult => {
          try {
            return work(ctx, saw);
          } finally {
            ran.add(spec.name);
            events.push({ step: spec.name, event: 'end' });
          }
        };
        return spec.async ? pause(spec.name).then(finish) : finish();
      },
    }),
  });
  const declared =
    withDeclarations && spec.declared
      ? declarationFields({
          ...(spec.supplies.length > 0 ? { supplies: spec.supplies } : {}),
          ...(dependsOnOf(spec).length > 0 || spec.supplies.length === 0 ? { dependsOn: dependsOnOf(spec) } : {}),
        })
      : {};
  return createPluginSteps(plugin, {
    name: spec.name,
    match: compileMatch(EVERYTHING),
    matchSpec: EVERYTHING,
    failurePolicy: spec.failurePolicy,
    timeoutMs: 10_000,
    mode: spec.mode,
    sideEffects: 'None',
    reinvocationPolicy: spec.reinvocation,
    order: spec.order ?? (index + 1) * 10,
    extension: spec.name,
    attach: 'Always',
    handlers: plugin.setup(undefined),
    ...declared,
  })[0]!;
}

function envelope(object: Obj): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: UID,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      namespace: 'default',
      name: 'web',
      operation: 'CREATE',
      userInfo: { username: 'property-test' },
      object,
    },
  });
}

/**
 * Reviews the case's object through its chain, with the declarations or without them. With a scheduler the
 * asynchronous steps answer in the order it picks; without, each after one microtask.
 */
async function runGateway(c: Case, withDeclarations: boolean, scheduler?: fc.Scheduler): Promise<GatewayRun> {
  const events: CallEvent[] = [];
  const ran = new Set<string>();
  const pause = (step: string): Promise<void> =>
    scheduler ? scheduler.schedule(Promise.resolve(), step) : Promise.resolve();
  const chain = createChain(c.steps.map((spec, i) => gatewayStep(spec, i, withDeclarations, pause, ran, events)));
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
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
  const { apiVersion, request } = decodeReview(envelope(c.object));
  const reviewing = reviewer.review(request, selectionOf('mutate'));
  let result;
  try {
    result = scheduler ? await scheduler.waitFor(reviewing) : await reviewing;
  } catch (err) {
    assert.fail(`the review threw: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  }
  const { response } = JSON.parse(encodeReview(apiVersion, result.response).toString()) as {
    response: AdmissionResponse;
  };
  const { patch, ...answer } = response;
  const ops = patch === undefined ? [] : (JSON.parse(Buffer.from(patch, 'base64').toString('utf8')) as unknown);
  const stored = jsonpatch.applyPatch(structuredClone(c.object), ops as jsonpatch.Operation[], true, false).newDocument;
  const calls = new Map<string, number>();
  for (const e of events) if (e.event === 'start') calls.set(e.step, (calls.get(e.step) ?? 0) + 1);
  const outside = new Map(
    (await metrics.writesOutsideSupplies.get()).values.map((v) => [String(v.labels.step), v.value] as const),
  );
  // Each step's own operations in the decision trace, applied in the order the trace lists them (the order they
  // were merged in), give the stored object too.
  const credited = heard[0]!.trace.steps.flatMap((step) => step.patch ?? []);
  const replayed = jsonpatch.applyPatch(
    structuredClone(c.object),
    structuredClone(credited) as jsonpatch.Operation[],
    true,
    false,
  ).newDocument;
  return { answer, stored, replayed, reports: result.reports, events, calls, chain, outside };
}

// ---------------------------------------------------------------------------------------------------------
// The properties
// ---------------------------------------------------------------------------------------------------------

const inChainOrder = (c: Case, calls: ReadonlyMap<string, number>): Array<[string, number]> =>
  c.steps.map((s) => [s.name, calls.get(s.name) ?? 0]);

/** Steps that ran in round 0, each with where its first start and end are in `events`. */
function firstCalls(events: readonly CallEvent[]): Map<string, { start: number; end: number }> {
  const at = new Map<string, { start: number; end: number }>();
  events.forEach((e, i) => {
    const entry = at.get(e.step);
    if (!entry) at.set(e.step, { start: i, end: -1 });
    else if (e.event === 'end' && entry.end === -1) entry.end = i;
  });
  return at;
}

/** Checks what every run must show beside its answer: order, call counts, levels in the reports. */
function checkRun(c: Case, run: GatewayRun, model: ModelRun): void {
  // A step that must follow another starts only once that one has ended.
  const first = firstCalls(run.events);
  c.steps.forEach((later, j) => {
    const l = first.get(later.name);
    if (!l) return;
    for (const earlier of c.steps.slice(0, j)) {
      const e = first.get(earlier.name);
      if (!mustFollow(earlier, later)) continue;
      assert.ok(e && e.end !== -1 && e.end < l.start, `${later.name} started before ${earlier.name} ended`);
    }
  });

  // Denied on its rerun: every step ran, and the reruns before it went one after another, as modelled.
  const deniedOnRerun = model.endedBy !== undefined && (model.calls.get(model.endedBy) ?? 0) > 1;
  if (model.endedBy === undefined || deniedOnRerun) {
    assert.deepStrictEqual(inChainOrder(c, run.calls), inChainOrder(c, model.calls), 'calls of each step');
  } else {
    // A denial ends the phase: every step before the one that denied was called, none was reinvoked.
    const upTo = c.steps.findIndex((s) => s.name === model.endedBy);
    const called = inChainOrder(c, run.calls);
    assert.deepStrictEqual(
      called.slice(0, upTo + 1),
      c.steps.slice(0, upTo + 1).map((s) => [s.name, 1]),
      'calls of each step up to the denial',
    );
    assert.ok(
      called.every(([, n]) => n <= 1),
      'no reinvocation after a denial',
    );
  }

  // Reports say which level each step ran in once some level ran several steps.
  const levelOf = new Map(
    (run.chain.describe().mutate as Array<{ name: string; level?: number }>).map((d) => [d.name, d.level]),
  );
  const perLevel = new Map<number | undefined, number>();
  for (const r of run.reports)
    if (!r.round) perLevel.set(levelOf.get(r.step), (perLevel.get(levelOf.get(r.step)) ?? 0) + 1);
  if ([...perLevel.values()].some((n) => n > 1) && run.chain.planOf().concurrent) {
    assert.deepStrictEqual(
      run.reports.map((r) => [r.step, r.level]),
      run.reports.map((r) => [r.step, levelOf.get(r.step)]),
      'the level of each report',
    );
  }
}

/** Property 1: the chain with declarations answers what the same steps answer one after another without. */
async function checkParallelEqualsSerial(c: Case, scheduler?: fc.Scheduler, problems = false): Promise<void> {
  const serialModel = runModel(c, false);
  const serial = await runGateway(c, false);
  // The test's own premises: the serial gateway is the modelled chain.
  assert.deepStrictEqual(inChainOrder(c, serial.calls), inChainOrder(c, serialModel.calls), 'premise: serial calls');
  if (serial.answer.allowed) assert.deepStrictEqual(serial.stored, serialModel.final, 'premise: serial object');

  const leveled = await runGateway(c, true, scheduler);
  if (!problems) assert.deepStrictEqual(leveled.chain.problems, [], 'a generated plan has no problems');
  assert.deepStrictEqual(leveled.answer, serial.answer, 'the answer');
  assert.deepStrictEqual(leveled.stored, serial.stored, 'the stored object');
  if (leveled.answer.allowed) {
    assert.deepStrictEqual(leveled.replayed, leveled.stored, "the trace's operations of each step, one after another");
  }
  checkRun(c, leveled, runModel(c, true));
}

/**
 * Property 2: the step with `outside` fails with write_outside_supplies on every settled call and its writes are
 * gone; the answer is the serial chain's in which that step wrote nothing and failed.
 */
async function checkWriteOutside(c: Case, scheduler?: fc.Scheduler): Promise<void> {
  const culprit = c.steps.find((s) => s.outside !== undefined)!;
  const leveled = await runGateway(c, true, scheduler);
  const calls = leveled.calls.get(culprit.name) ?? 0;
  const failedOpen = !(culprit.mode === 'enforce' && culprit.failurePolicy === 'Fail');
  const reports = leveled.reports.filter((r) => r.step === culprit.name);
  // A call whose answer a denial earlier in its level discarded is not settled, so not reported.
  const settled = leveled.answer.allowed === false && reports.length === calls - 1 ? calls - 1 : calls;
  assert.deepStrictEqual(
    reports.map((r) => ({ outcome: r.outcome, reason: r.reason, failedOpen: r.failedOpen === true })),
    Array.from({ length: settled }, () => ({ outcome: 'error', reason: 'write_outside_supplies', failedOpen })),
    `the reports of ${culprit.name}`,
  );
  assert.equal(leveled.outside.get(culprit.name) ?? 0, settled, 'admission_gateway_writes_outside_supplies_total');

  const quiet = c.steps.map((s) =>
    s === culprit ? { ...s, actions: [], outside: undefined, outcome: 'fail-outside' as const } : s,
  );
  const serial = await runGateway({ ...c, steps: quiet }, false);
  assert.deepStrictEqual(
    normalisedOutside(leveled.answer, culprit),
    JSON.parse(
      JSON.stringify(serial.answer)
        .replaceAll('(error): wrote <outside>', '(write_outside_supplies): wrote <outside>')
        .replaceAll('"error: wrote <outside>', '"write_outside_supplies: wrote <outside>'),
    ) as unknown,
    'the answer',
  );
  assert.deepStrictEqual(leveled.stored, serial.stored, 'the stored object');
}

/** The answer with the pointer of each "wrote …, outside its supplies" left out, once checked. */
function normalisedOutside(answer: GatewayRun['answer'], culprit: StepSpec): unknown {
  const lanePath = laneOf(culprit.outside!).path;
  const text = JSON.stringify(answer).replace(/wrote (\S+), outside its supplies/g, (_all, pointer: string) => {
    // The write itself, or a map created on the way to it.
    const path = segmentsOf(pointer);
    assert.ok(patternWithin(lanePath, path), `reported ${pointer} for a write at ${culprit.outside}`);
    return 'wrote <outside>, outside its supplies';
  });
  // Two calls may name two pointers (a map on the way, then the write in it): one warning once left out.
  const normalised = JSON.parse(text) as { warnings?: string[] };
  if (normalised.warnings) normalised.warnings = [...new Set(normalised.warnings)];
  return normalised;
}

/** `PROPERTY_SEED`/`PROPERTY_PATH` replay a reported failure; `PROPERTY_RUNS` explores further. */
function settings<T>(runs: number): fc.Parameters<T> {
  const env = process.env;
  return {
    seed: env.PROPERTY_SEED ? Number(env.PROPERTY_SEED) : 0x14_2025,
    numRuns: env.PROPERTY_RUNS ? Number(env.PROPERTY_RUNS) : runs,
    ...(env.PROPERTY_PATH ? { path: env.PROPERTY_PATH } : {}),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Counterexamples as text
// ---------------------------------------------------------------------------------------------------------

const list = (items: readonly string[]): string => `[${items.join(', ')}]`;

/** The case as a gateway.yaml-like chain, with what each step does. */
function caseText(c: Case): string {
  const lines = [`object: ${JSON.stringify(c.object)}`, 'chain:'];
  c.steps.forEach((s, i) => {
    lines.push(`  - name: ${s.name}`, `    order: ${s.order ?? (i + 1) * 10}`);
    if (s.declared) {
      if (s.supplies.length > 0) lines.push(`    supplies: ${list(s.supplies)}`);
      if (dependsOnOf(s).length > 0 || s.supplies.length === 0) lines.push(`    dependsOn: ${list(dependsOnOf(s))}`);
    } else {
      lines.push(`    # undeclared; writes below ${list(s.supplies)}, reads ${list(dependsOnOf(s))}`);
    }
    if (s.mode !== 'enforce') lines.push(`    mode: ${s.mode}`);
    if (s.failurePolicy !== 'Ignore') lines.push(`    failurePolicy: ${s.failurePolicy}`);
    if (s.reinvocation !== 'Never') lines.push(`    reinvocationPolicy: ${s.reinvocation}`);
    const does = s.actions.map((a) => `${a.op} ${a.lane}`);
    if (s.outside) does.push(`set ${s.outside} (OUTSIDE its supplies)`);
    const how = [s.async ? 'async' : 'sync', ...(s.returnsPatch ? ['returns a patch'] : [])];
    lines.push(`    # ${how.join(', ')}: ${does.join('; ') || 'writes nothing'}; then ${s.outcome}`);
    if (s.notes) lines.push('    # warns and annotates what it read');
  });
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------------------

const documentArb: fc.Arbitrary<Obj> = fc
  .record({
    labels: fc.option(fc.subarray(['app', 'team', 'tier']), { nil: undefined }),
    annotations: fc.option(fc.subarray(['note', 'example.com/owner']), { nil: undefined }),
    containers: fc.option(
      fc.array(fc.record({ image: fc.boolean(), resources: fc.constantFrom('none', 'empty', 'limits') }), {
        maxLength: 3,
      }),
      { nil: undefined, freq: 5 },
    ),
    config: fc.option(fc.record({ db: fc.boolean(), host: fc.boolean(), cache: fc.boolean() }), { nil: undefined }),
  })
  .map(({ labels, annotations, containers, config }) => {
    const metadata: Obj = { name: 'web' };
    if (labels) metadata.labels = Object.fromEntries(labels.map((k) => [k, `${k}-0`]));
    if (annotations) metadata.annotations = Object.fromEntries(annotations.map((k) => [k, 'given']));
    const spec: Obj = {};
    if (containers) {
      spec.containers = containers.map((c, i) => ({
        name: `c${i}`,
        ...(c.image ? { image: `nginx:1.${i}` } : {}),
        ...(c.resources === 'none' ? {} : { resources: c.resources === 'empty' ? {} : { limits: { cpu: '1' } } }),
      }));
    }
    if (config) {
      spec.config = {
        ...(config.db ? { db: config.host ? { host: 'db.local', port: 5432 } : { port: 5432 } } : {}),
        ...(config.cache ? { cache: { size: 3 } } : {}),
      };
    }
    return { apiVersion: 'v1', kind: 'Pod', metadata, spec };
  });

const laneArb = fc.constantFrom(...LANES.map((l) => l.pointer));
const nat = fc.nat({ max: 1000 });

/** A step as drawn; `normalised` resolves its choices against its supplies and the steps before it. */
const drawnStepArb = fc.record({
  declared: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  supplies: fc.oneof(
    { weight: 9, arbitrary: fc.uniqueArray(laneArb, { minLength: 1, maxLength: 3 }) },
    { weight: 1, arbitrary: fc.constant([]) },
  ),
  reads: fc.uniqueArray(laneArb, { maxLength: 3 }),
  after: fc.option(nat, { nil: undefined, freq: 3 }),
  actions: fc.array(fc.record({ supply: nat, lane: nat, op: nat }), { minLength: 1, maxLength: 3 }),
  outcome: fc.oneof(
    { weight: 12, arbitrary: fc.constant('allow' as const) },
    { weight: 1, arbitrary: fc.constantFrom('deny' as const, 'deny-if' as const, 'throw' as const) },
  ),
  mode: fc.oneof(
    { weight: 6, arbitrary: fc.constant('enforce' as const) },
    { weight: 2, arbitrary: fc.constant('warn' as const) },
    { weight: 1, arbitrary: fc.constant('audit' as const) },
  ),
  failurePolicy: fc.constantFrom('Ignore' as const, 'Fail' as const),
  reinvocation: fc.oneof(
    { weight: 2, arbitrary: fc.constant('Never' as const) },
    { weight: 1, arbitrary: fc.constant('IfNeeded' as const) },
  ),
  async: fc.boolean(),
  returnsPatch: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  notes: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
});

type Drawn = typeof drawnStepArb extends fc.Arbitrary<infer T> ? T : never;

const lanesOf = (pointers: readonly string[]) => pointers.map((p) => laneOf(p).path);
const anyOverlap = (a: readonly string[], b: readonly string[]): boolean =>
  lanesOf(a).some((x) => lanesOf(b).some((y) => patternsOverlap(x, y)));

/** A drawn step made to keep to its declarations (see the file's comment for the limits). */
function resolveStep(d: Drawn, index: number): StepSpec {
  const name = `s${index}`;
  const actions: Action[] = [];
  if (d.supplies.length > 0) {
    for (const a of d.actions) {
      const supply = laneOf(d.supplies[a.supply % d.supplies.length]!);
      const within = LANES.filter((l) => patternWithin(l.path, supply.path));
      const l = within[a.lane % within.length]!;
      actions.push({ lane: l.pointer, op: OPS[l.kind][a.op % OPS[l.kind].length]! });
    }
  }
  // A prune looks at whether the map is left empty: it reads the map.
  const reads = [...d.reads];
  for (const a of actions) {
    const map = a.op === 'prune' ? prunedMapLane(laneOf(a.lane)).pointer : undefined;
    if (map && !reads.includes(map)) reads.push(map);
  }
  return {
    name,
    // An undeclared step writing nothing is of no interest; a declared one says so with only dependsOn.
    declared: d.declared || d.supplies.length === 0,
    supplies: d.supplies,
    reads,
    after: d.after === undefined || index === 0 ? [] : [`s${d.after % index}`],
    actions,
    outcome: d.outcome,
    mode: d.mode,
    failurePolicy: d.failurePolicy,
    reinvocation: d.reinvocation,
    async: d.async,
    returnsPatch: d.returnsPatch,
    notes: d.notes,
  };
}

/** IfNeeded only where repeating the step cannot change what serial and leveled chains store (see above). */
function withinReinvocationLimits(steps: readonly StepSpec[]): StepSpec[] {
  return steps.map((s, i) => {
    if (s.reinvocation !== 'IfNeeded') return s;
    // A step that deletes what it set leaves the maps it made on the way empty: run again after a later step
    // pruned them (the webhook-style rerun of an undeclared step), it makes them again, which the declared
    // step, not rerun for that, does not.
    const idempotent =
      !s.actions.some((a) => REPEATING.has(a.op) || a.op === 'delete') && !anyOverlap(s.reads, s.supplies);
    const overwritten = steps.slice(i + 1).some((later) => anyOverlap(later.supplies, s.supplies));
    return idempotent && !overwritten ? s : { ...s, reinvocation: 'Never' as const };
  });
}

/** A case whose text (fast-check's counterexample and assertion messages) is the chain as YAML. */
function printable(c: Case): Case {
  return Object.defineProperty(c, fc.toStringMethod, { value: () => `\n${caseText(c)}\n` });
}

const caseArb: fc.Arbitrary<Case> = fc
  .record({ object: documentArb, steps: fc.array(drawnStepArb, { minLength: 2, maxLength: 6 }) })
  .map(({ object, steps }) => printable({ object, steps: withinReinvocationLimits(steps.map(resolveStep)) }));

/** A case in which one declared step (that otherwise allows) also writes a lane outside its supplies. */
const outsideCaseArb: fc.Arbitrary<Case> = fc
  .record({ c: caseArb, culprit: nat, lane: nat })
  .map(({ c, culprit, lane: pick }) => {
    const candidates = c.steps.flatMap((s, i) => {
      const outside = LANES.filter((l) => l.kind === 'key' && !anyOverlap([l.pointer], s.declared ? s.supplies : []));
      return s.declared && outside.length > 0 ? [{ i, outside }] : [];
    });
    const chosen = candidates[culprit % Math.max(candidates.length, 1)];
    if (!chosen) return undefined;
    const steps = c.steps.map((s, i) =>
      i === chosen.i
        ? { ...s, outcome: 'allow' as const, outside: chosen.outside[pick % chosen.outside.length]!.pointer }
        : s,
    );
    return printable({ ...c, steps });
  })
  .filter((c): c is Case => c !== undefined);

// ---------------------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------------------

/** A step for the example tests: declared, allowing, synchronous, unless told otherwise. */
function stepOf(index: number, spec: Partial<StepSpec>): StepSpec {
  return {
    name: `s${index}`,
    declared: true,
    supplies: [],
    reads: [],
    after: [],
    actions: [],
    outcome: 'allow',
    mode: 'enforce',
    failurePolicy: 'Ignore',
    reinvocation: 'Never',
    async: false,
    returnsPatch: false,
    notes: false,
    ...spec,
  };
}

const caseOf = (object: Obj, steps: ReadonlyArray<Partial<StepSpec>>): Case =>
  printable({ object, steps: steps.map((s, i) => stepOf(i, s)) });

describe('declared write sets (property)', function () {
  this.timeout(120_000);

  it('answers with declarations (levels, copies, merged) exactly what the same steps answer serially without', async function () {
    await fc.assert(
      fc.asyncProperty(caseArb, fc.scheduler(), (c, s) => checkParallelEqualsSerial(c, s)),
      settings<[Case, fc.Scheduler]>(250),
    );
  });

  it('fails a step that writes outside its supplies and keeps nothing of what it wrote', async function () {
    await fc.assert(
      fc.asyncProperty(outsideCaseArb, fc.scheduler(), (c, s) => checkWriteOutside(c, s)),
      settings<[Case, fc.Scheduler]>(120),
    );
  });

  // What the properties found at a75fd4e, each shrunk and then tidied by hand. They run the same checks as the
  // properties, so each names one discrepancy of the core and passes once it is fixed: until then they FAIL.
  describe('cases the properties once found, kept as examples', function () {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web' }, spec: {} };

    it('a step of the level of an enforced denial adds no warnings or annotations to the answer', async function () {
      // Serially s1 never runs; in the level {s0,s1} it is started before s0's denial is settled.
      await checkParallelEqualsSerial(
        caseOf(pod, [
          {
            supplies: ['/metadata/labels/app'],
            actions: [{ lane: '/metadata/labels/app', op: 'set' }],
            outcome: 'deny',
          },
          { supplies: ['/metadata/annotations/note'], notes: true },
        ]),
      );
    });

    it('the denial is the first in chain order, not in level order', async function () {
      // Levels {s0,s2},{s1}: s2 denies in level 0, before s1 (earlier in the chain) has run.
      await checkParallelEqualsSerial(
        caseOf(pod, [
          { supplies: ['/metadata/labels/team'], actions: [{ lane: '/metadata/labels/team', op: 'set' }] },
          { supplies: ['/metadata/labels/tier'], after: ['s0'], outcome: 'deny' },
          { supplies: ['/metadata/annotations/note'], outcome: 'deny' },
        ]),
      );
    });

    it('warnings come in chain order, not in level order', async function () {
      await checkParallelEqualsSerial(
        caseOf(pod, [
          { supplies: ['/metadata/labels/team'], actions: [{ lane: '/metadata/labels/team', op: 'set' }] },
          { supplies: ['/metadata/labels/tier'], after: ['s0'], outcome: 'deny', mode: 'warn' },
          { supplies: ['/metadata/annotations/note'], outcome: 'deny', mode: 'warn' },
        ]),
      );
    });

    it("a step's own warnings come in chain order, not in the order the steps of a level answered", async function () {
      // s0 answers after a microtask, s1 at once: serially s0's warning comes first.
      await checkParallelEqualsSerial(
        caseOf(pod, [
          { supplies: ['/metadata/labels/team'], notes: true, async: true },
          { supplies: ['/metadata/labels/tier'], notes: true },
        ]),
      );
    });

    it('two steps of a level that each create the absent labels map on the way to their label both keep it', async function () {
      // s1's patch (add /metadata/labels {tier}) is checked against the level's base after s0's was merged
      // into it (the base is the working copy's root), so it is taken for a write of /metadata/labels/team.
      await checkParallelEqualsSerial(
        caseOf(pod, [
          { supplies: ['/metadata/labels/team'], actions: [{ lane: '/metadata/labels/team', op: 'set' }] },
          { supplies: ['/metadata/labels/tier'], actions: [{ lane: '/metadata/labels/tier', op: 'set' }] },
        ]),
      );
    });

    it('a declared IfNeeded step is not reinvoked when a later step only created the map around what it reads', async function () {
      // s1's patch is add /metadata/labels {team}: /metadata/labels/app, which s0 reads, is absent before and after.
      await checkParallelEqualsSerial(
        caseOf(pod, [
          {
            supplies: ['/metadata/annotations/note'],
            reads: ['/metadata/labels/app'],
            actions: [{ lane: '/metadata/annotations/note', op: 'set' }],
            reinvocation: 'IfNeeded',
          },
          { supplies: ['/metadata/labels/team'], actions: [{ lane: '/metadata/labels/team', op: 'set' }] },
        ]),
      );
    });

    it('reports carry their level when a denial ends a level that ran several steps', async function () {
      await checkParallelEqualsSerial(
        caseOf(pod, [
          { supplies: ['/metadata/labels/app'], actions: [{ lane: '/metadata/labels/app', op: 'set' }] },
          { supplies: ['/metadata/annotations/note'], outcome: 'deny' },
        ]),
      );
    });
  });

  describe('plans with problems run their steps as barriers, with the serial answer', function () {
    const object = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', labels: { app: 'web' } }, spec: {} };

    it('dependsOn naming a later step', async function () {
      const c = caseOf(object, [
        { supplies: ['/metadata/labels/team'], reads: ['/metadata/labels/tier'], after: ['s1'] },
        { supplies: ['/metadata/labels/tier'], actions: [{ lane: '/metadata/labels/tier', op: 'set' }] },
      ]);
      const steps = c.steps.map((s, i) =>
        i === 0 ? { ...s, actions: [{ lane: '/metadata/labels/team', op: 'set' as const }] } : s,
      );
      const run = await runGateway({ ...c, steps }, true);
      assert.deepStrictEqual(
        run.chain.problems.map((p) => ({ steps: p.steps, field: p.field })),
        [{ steps: ['s0', 's1'], field: 'dependsOn' }],
      );
      assert.deepStrictEqual(
        run.chain.planOf().levels.map((level) => level.map((s) => s.name)),
        [['s0'], ['s1']],
      );
      await checkParallelEqualsSerial({ ...c, steps }, undefined, true);
    });

    it('dependsOn naming a step that is not in the chain', async function () {
      const c = caseOf(object, [
        { supplies: ['/metadata/labels/team'], actions: [{ lane: '/metadata/labels/team', op: 'set' }] },
        {
          supplies: ['/metadata/labels/tier'],
          after: ['s9'],
          actions: [{ lane: '/metadata/labels/tier', op: 'set' }],
          async: true,
        },
        { supplies: ['/metadata/annotations/note'], actions: [{ lane: '/metadata/annotations/note', op: 'set' }] },
      ]);
      const run = await runGateway(c, true);
      assert.deepStrictEqual(
        run.chain.problems.map((p) => ({ steps: p.steps, field: p.field })),
        [{ steps: ['s1'], field: 'dependsOn' }],
      );
      // s1 is a barrier: s0 before it, s2 after it, though none of them overlap.
      assert.deepStrictEqual(
        run.chain.planOf().levels.map((level) => level.map((s) => s.name)),
        [['s0'], ['s1'], ['s2']],
      );
      await checkParallelEqualsSerial(c, undefined, true);
    });

    it('overlapping supplies with equal orders', async function () {
      const c = caseOf(object, [
        {
          supplies: ['/metadata/labels'],
          reads: ['/metadata/annotations/note'],
          actions: [{ lane: '/metadata/labels', op: 'set' }],
          order: 10,
        },
        {
          supplies: ['/metadata/labels/team'],
          actions: [{ lane: '/metadata/labels/team', op: 'set' }],
          async: true,
          order: 10,
        },
        { supplies: ['/metadata/annotations/note'], actions: [{ lane: '/metadata/annotations/note', op: 'set' }] },
      ]);
      const run = await runGateway(c, true);
      assert.deepStrictEqual(
        run.chain.problems.map((p) => ({ steps: p.steps, field: p.field })),
        [{ steps: ['s1', 's0'], field: 'supplies' }],
      );
      assert.deepStrictEqual(
        run.chain.planOf().levels.map((level) => level.map((s) => s.name)),
        [['s0'], ['s1'], ['s2']],
      );
      await checkParallelEqualsSerial(c, undefined, true);
    });
  });
});
