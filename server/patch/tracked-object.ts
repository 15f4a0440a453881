/**
 * A write-tracking view of the chain's working copy (working-copy.ts: copied as views reach it). Each
 * mutating step edits it through one of these views, which records
 *  - an undo log (a shallow snapshot of every container the step writes to), so a step whose failure is
 *    ignored, or whose deny is only a warning, leaves no half-applied edits behind;
 *  - the places the step wrote (a container's place and a key), for patch conflicts and the final diff;
 *  - the containers it moved or put at a second place, each given its place when it returns (working-copy.ts);
 * and refuses writes once the step has returned (a timed-out async plugin cannot keep editing).
 * This keeps the per-step cost to the properties a step actually touches, instead of a clone and a
 * diff per step; the final patch is one diff per review (docs/decisions.md, "The working copy is copied as it
 * is read, and each step's writes are tracked").
 */

import { MAX_NESTING_DEPTH } from '../base/limits.js';
import { WorkingCopy, shallowCopy, type ReplacingOwn } from './working-copy.js';
import { escapeSegment, type ContainerPlace, type WrittenNode } from './written-paths.js';

type Container = Record<string | symbol, unknown> | unknown[];

export interface TrackedSession<T extends object> {
  /** The view to hand to the step. */
  readonly view: T;
  /** Who writes through it: the step's name, as the phase's WrittenPaths records its writes. */
  readonly owner: string;
  /** How many writes (sets and deletes) went through the view. */
  readonly writeCount: number;
  /** Each write in order: the place of the container written to, and the key. */
  forEachWrite(visit: (place: ContainerPlace, key: string) => void): void;
  /** The JSON pointers written, in order (worked out on each call: for tests and messages). */
  readonly writes: readonly string[];
  /**
   * Stops recording; any later write through the view throws. Returns what makes the result unusable
   * (an array left with a hole), if anything: the step has then failed.
   */
  close(): string | undefined;
  /** Restores every container the step wrote to. Call after close(). */
  rollback(): void;
  /**
   * What rollback() would do, done to `states` instead of the object: each container the step wrote to gets
   * there (or has updated there) a shallow copy of what it held before the step, with the members the working
   * copy replaced by copies of them as they were (after a rollback, only those). `states` holds the containers as
   * a later state of the object had them (write-history.ts); a container it lacks is as it is now.
   */
  unapplyTo(states: Map<object, object>): void;
}

function isContainer(value: unknown): value is Container {
  return typeof value === 'object' && value !== null;
}

/** Read through any view (of any session), it gives the view's handler (which knows the plain container). */
const VIEW_HANDLER = Symbol('view handler');

function handlerOf(value: Container): ViewHandler | undefined {
  return (value as Record<symbol, ViewHandler | undefined>)[VIEW_HANDLER];
}

/**
 * Views in `value`, about to be written at `holder[key]` (below the container of `at`), are replaced by
 * their targets so the document never holds a view; each is noted with its new place (the session places
 * shared ones when the step returns). A value that would make the object contain itself (`spec.self = spec`),
 * or nests deeper than any accepted object, is refused: the step's write throws, as JSON cannot say it.
 */
function unwrap(value: unknown, holder: Container, key: string, at: ViewHandler, depth = 0): unknown {
  if (!isContainer(value)) return value;
  const view = handlerOf(value);
  if (view) {
    for (let above: ViewHandler | undefined = at; above; above = above.parent) {
      if (above.target === view.target) throw new TypeError('a container cannot be written inside itself');
    }
    at.session.placed(holder, key, view);
    return view.target;
  }
  if (depth >= MAX_NESTING_DEPTH) {
    throw new TypeError(`a value nested deeper than ${MAX_NESTING_DEPTH} levels (or cyclic) cannot be written`);
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const plain = isContainer(item) ? unwrap(item, value, String(i), at, depth + 1) : item;
      if (plain !== item) value[i] = plain;
    }
  } else {
    // for…in rather than Object.keys: no array per object (a JSON object inherits nothing enumerable).
    for (const name in value) {
      const item = value[name];
      const plain = isContainer(item) ? unwrap(item, value, name, at, depth + 1) : item;
      if (plain !== item) value[name] = plain;
    }
  }
  return value;
}

/** Whether a canonical array index (no sign, no leading zero) names `key`. */
const isIndex = (key: string): boolean => /^(?:0|[1-9]\d*)$/.test(key);

/** What every view of one session shares. */
class Session<T extends object> implements TrackedSession<T>, ReplacingOwn {
  open = true;
  /** The writes, two slots an entry: the place of the container written to, and the key. */
  private readonly journal: Array<ContainerPlace | string> = [];
  /**
   * What rollback() replays backwards, four slots an entry: (container, key, whether it had the key, old
   * value) for a set; (container, SNAPSHOT, shallow copy, unused) before the first delete in a container,
   * since deleting and re-adding a key would not restore the key order; (container, REPLACED, key, the member
   * it held and its copy) where the working copy put a copy of one of its own containers in its place (the same
   * JSON: rollback leaves it, and keeps the entry for unapplyTo, which works back to the containers earlier
   * steps wrote). A copy of a container that was not the copy's own yet (the request's, or a value a step wrote)
   * gets no entry (WorkingCopy.own tells the two apart): no session wrote into the container it replaces, so a
   * state that reads the copy, with the writes into it worked back, holds the same JSON as one that reads the
   * container (and a large object's every container is copied so, once).
   */
  private readonly undo: unknown[] = [];
  private snapshotted: Set<Container> | undefined;
  /** Arrays the step deleted from or lengthened: JSON has no holes, so they are checked when it returns. */
  private reshaped: Set<unknown[]> | undefined;
  /** Containers of the copy the step put somewhere, three slots an entry: holder, key, the view's handler. */
  private moved: unknown[] | undefined;
  /**
   * The view of each container below the root, so reading a field twice gives the same view. A plain Map,
   * not a WeakMap: a session lives for one step call, and ephemeron tables are costly to collect.
   */
  private views: Map<object, object> | undefined;
  readonly view: T;

  constructor(
    root: T,
    readonly owner: string,
    readonly readOnly: boolean,
    /** When set, each container is made the copy's own before a view of it is handed out. */
    readonly copy: WorkingCopy<object> | undefined,
  ) {
    const target = root as unknown as Container;
    this.view = new Proxy(target, new ViewHandler(this, target, undefined, '')) as unknown as T;
  }

  /**
   * The view of `child`, found at `parent`'s `key` (in container `holder`). The first time, a working copy
   * makes `child` its own (a copy put in its place, which later reads find); the view's JSON pointer is
   * only worked out when a write needs it.
   */
  viewOf(holder: Container, key: string, child: Container, parent: ViewHandler): object {
    this.views ??= new Map();
    // A child this session has a view of is already the copy's own, so own() hands it back as it is.
    const target = this.copy ? this.copy.own(holder, key, child, this) : child;
    let view = this.views.get(target);
    if (!view) this.views.set(target, (view = new Proxy(target, new ViewHandler(this, target, parent, key))));
    return view;
  }

  get writeCount(): number {
    return this.journal.length / 2;
  }

  forEachWrite(visit: (place: ContainerPlace, key: string) => void): void {
    const { journal } = this;
    for (let i = 0; i < journal.length; i += 2) visit(journal[i] as ContainerPlace, journal[i + 1] as string);
  }

  get writes(): string[] {
    const pointers: string[] = [];
    this.forEachWrite((place, key) => pointers.push(`${pointerOf(place)}/${escapeSegment(key)}`));
    return pointers;
  }

  wrote(place: ContainerPlace, key: string): void {
    this.journal.push(place, key);
  }

  refuse(): never {
    throw new TypeError(
      this.readOnly
        ? `"${this.owner}" may not modify the object in the validate phase`
        : `"${this.owner}" modified the object after its step ended`,
    );
  }

  /** The working copy put `copy`, a copy of `previous` (one of its own containers), at `holder[key]`. */
  replaced(holder: Container, key: string, previous: Container, copy: Container): void {
    const replacement: Replacement = { previous, copy };
    this.undo.push(holder, REPLACED, key, replacement);
  }

  rememberSet(target: Container, key: string | symbol): void {
    const had = Object.hasOwn(target, key);
    this.undo.push(target, key, had, had ? (target as Record<string | symbol, unknown>)[key] : undefined);
  }

  rememberDelete(target: Container): void {
    this.snapshotted ??= new Set();
    if (this.snapshotted.has(target)) return;
    this.snapshotted.add(target);
    this.undo.push(target, SNAPSHOT, shallowCopy(target), undefined);
  }

  /**
   * The container behind `view` is being written at `holder[key]`; whether it now sits at two places is
   * decided when the step returns.
   */
  placed(holder: Container, key: string, view: ViewHandler): void {
    if (this.copy && view.parent) (this.moved ??= []).push(holder, key, view);
  }

  reshape(array: unknown[]): void {
    (this.reshaped ??= new Set()).add(array);
  }

  close(): string | undefined {
    this.open = false;
    // The session outlives the step (write-history.ts keeps it for the traces' per-step patches); its views do
    // not need to: a view read later is made again.
    this.views = undefined;
    const { moved, copy } = this;
    if (moved && copy) {
      const placedSoFar = new Set<object>();
      for (let i = 0; i < moved.length; i += 3) {
        const view = moved[i + 2] as ViewHandler;
        const from = { holder: view.parent!.target, key: view.key };
        const holder = moved[i] as Record<string, unknown>;
        const key = moved[i + 1] as string;
        const there = holder[key];
        copy.assignPlace(holder, key, view.target, from, placedSoFar);
        if (there === view.target && holder[key] !== there)
          this.replaced(holder, key, view.target, holder[key] as Container);
      }
    }
    if (!this.reshaped) return undefined;
    for (const array of this.reshaped) {
      for (let i = 0; i < array.length; i++) {
        if (!Object.hasOwn(array, i)) return `"${this.owner}" left a hole at index ${i} of an array (JSON has none)`;
      }
    }
    return undefined;
  }

  rollback(): void {
    const { undo } = this;
    for (let i = undo.length - 4; i >= 0; i -= 4) {
      const target = undo[i] as Record<string | symbol, unknown>;
      const key = undo[i + 1] as string | symbol;
      if (key === SNAPSHOT) restore(target, undo[i + 2] as Container);
      else if (key === REPLACED) continue;
      else if (undo[i + 2]) setOwn(target, key, undo[i + 3]);
      else delete target[key];
    }
    let kept = 0;
    for (let i = 0; i < undo.length; i += 4) {
      if (undo[i + 1] !== REPLACED) continue;
      for (let j = 0; j < 4; j++) undo[kept + j] = undo[i + j];
      kept += 4;
    }
    undo.length = kept;
    this.snapshotted = undefined;
  }

  unapplyTo(states: Map<object, object>): void {
    const { undo } = this;
    for (let i = undo.length - 4; i >= 0; i -= 4) {
      const target = undo[i] as Container;
      const key = undo[i + 1] as string | symbol;
      if (key === SNAPSHOT) {
        states.set(target, shallowCopy(undo[i + 2] as Container));
        continue;
      }
      let state = states.get(target) as Record<string | symbol, unknown> | undefined;
      if (!state) states.set(target, (state = shallowCopy(target) as Record<string | symbol, unknown>));
      if (key === REPLACED) {
        // Only where the copy still is: a rolled-back step may have left there what stood before it.
        const member = undo[i + 2] as string;
        const { previous, copy } = undo[i + 3] as Replacement;
        if (Object.hasOwn(state, member) && state[member] === copy) setOwn(state, member, previous);
      } else if (undo[i + 2]) setOwn(state, key, undo[i + 3]);
      else delete state[key];
    }
  }
}

const SNAPSHOT = Symbol('snapshot');
const REPLACED = Symbol('replaced');

/** A member the working copy replaced with a copy of it. */
interface Replacement {
  readonly previous: Container;
  readonly copy: Container;
}

function pointerOf(place: ContainerPlace): string {
  return place.parent ? `${pointerOf(place.parent)}/${escapeSegment(place.key)}` : '';
}

/**
 * `target[key] = value` as a data property: for a "__proto__" key (an own key, as JSON.parse makes it) an
 * assignment would set the prototype instead.
 */
function setOwn(target: Container, key: string | symbol, value: unknown): boolean {
  if (key !== '__proto__') {
    (target as Record<string | symbol, unknown>)[key] = value;
    return true;
  }
  return Reflect.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

function restore(target: Container, snapshot: Container): void {
  if (Array.isArray(target)) {
    // Element by element: a spread passes each element as an argument, and an array of a few hundred thousand
    // (which a request may hold) overflows the stack.
    const elements = snapshot as unknown[];
    target.length = elements.length;
    for (let i = 0; i < elements.length; i++) target[i] = elements[i];
  } else {
    for (const key of Object.keys(target)) delete target[key];
    for (const key of Object.keys(snapshot)) setOwn(target, key, (snapshot as Record<string, unknown>)[key]);
  }
}

/**
 * The traps of one view: one small object per container handed out, which knows where that container is
 * (the traps themselves live on the prototype).
 */
class ViewHandler implements ProxyHandler<Container>, ContainerPlace {
  written?: WrittenNode;

  constructor(
    readonly session: Session<object>,
    /** The container behind the view. */
    readonly target: Container,
    readonly parent: ViewHandler | undefined,
    readonly key: string,
  ) {}

  get(target: Container, key: string | symbol): unknown {
    if (key === VIEW_HANDLER) return this;
    // A JSON document has no accessors, so no receiver is needed.
    const value: unknown = (target as Record<string | symbol, unknown>)[key];
    // Of the containers reachable through a prototype, only Object.prototype is, as "__proto__".
    if (typeof key === 'symbol' || !isContainer(value) || (key === '__proto__' && !Object.hasOwn(target, key)))
      return value;
    return this.session.viewOf(target, key, value, this);
  }

  set(target: Container, key: string | symbol, value: unknown): boolean {
    const { session } = this;
    if (!session.open || session.readOnly) session.refuse();
    if (Array.isArray(target) && typeof key === 'string' && key !== 'length' && !isIndex(key)) {
      // JSON has no named members of an array: the patch would name a path the apiserver cannot apply.
      throw new TypeError(`cannot set "${key}" on an array: only its elements and length can be written`);
    }
    const plain = typeof key === 'string' ? unwrap(value, target, key, this) : value;
    if (Object.hasOwn(target, key) && Object.is((target as Record<string | symbol, unknown>)[key], plain)) return true;
    if (Array.isArray(target) && key === 'length') {
      // A longer length comes with the element writes that fill it, which are recorded. A shorter one drops
      // elements without a delete each: it is recorded as a write of the first dropped element, and only a
      // snapshot can bring the dropped ones back.
      const length = Number(plain);
      if (length < target.length) {
        session.wrote(this, String(length));
        session.rememberDelete(target);
      } else {
        session.rememberSet(target, key);
        session.reshape(target);
      }
    } else {
      if (typeof key === 'string') {
        session.wrote(this, key);
        // An element written past the end lengthens the array without a write of its length; rollback must
        // shorten it again (before removing the element, so remember the length first).
        if (Array.isArray(target) && isIndex(key) && Number(key) >= target.length) {
          session.rememberSet(target, 'length');
          if (Number(key) > target.length) session.reshape(target);
        }
      }
      session.rememberSet(target, key);
    }
    return setOwn(target, key, plain);
  }

  deleteProperty(target: Container, key: string | symbol): boolean {
    const { session } = this;
    if (!session.open || session.readOnly) session.refuse();
    if (!Object.hasOwn(target, key)) return true;
    if (typeof key === 'string') session.wrote(this, key);
    session.rememberDelete(target);
    // pop, shift and splice delete the last elements and then shorten the array; a delete alone leaves a hole.
    if (Array.isArray(target)) session.reshape(target);
    return Reflect.deleteProperty(target, key);
  }

  defineProperty(): boolean {
    // Accessors or non-enumerable properties have no JSON meaning; refuse rather than produce a wrong patch.
    return this.session.refuse();
  }

  setPrototypeOf(): boolean {
    return this.session.refuse();
  }
}

/**
 * Starts a tracked session on `root`: a working copy's root (its containers are copied as the view
 * reaches them), or a plain object edited in place. With `readOnly`, every write throws a TypeError naming
 * `owner` (validating steps may not modify the object).
 */
export function trackObject<T extends object>(
  root: T | WorkingCopy<T>,
  owner: string,
  readOnly = false,
): TrackedSession<T> {
  return root instanceof WorkingCopy
    ? new Session(root.root, owner, readOnly, root)
    : new Session(root, owner, readOnly, undefined);
}

/** A view of `object` that throws on any write (validating steps, `oldObject`). */
export function readOnlyView<T extends object>(object: T | null | undefined, owner: string): T | undefined {
  return object ? trackObject(object, owner, true).view : undefined;
}
