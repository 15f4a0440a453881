/**
 * The mutate phase's working copy, copied as it is reached instead of cloned up front. Each container a
 * step's view reaches is shallow-copied the first time (copy on read), so the request object is never
 * modified and subtrees no step looks at stay shared with it: a large ConfigMap's data is never copied at all.
 * Why, and what it saved: docs/decisions.md, "The working copy is copied as it is read, and each step's
 * writes are tracked".
 *
 * A copy belongs to one place (its holder and key). A step may put one container at a second place
 * (`template.metadata.labels = metadata.labels`); when a later step reaches it there, it gets a copy of its
 * own, so that between steps the object behaves as the JSON it stands for, where two places never share.
 */
type Container = Record<string, unknown> | unknown[];

export function shallowCopy<T extends Container>(value: T): T {
  if (Array.isArray(value)) return value.slice() as T;
  // Object.assign builds the copy through the shared hidden-class transitions, so a key a step adds later (a
  // container's `resources`) moves it to a map its siblings share. A spread copy gets a map outside that tree,
  // and each such copy then gets a map of its own on its first new key (docs/decisions.md, "The working copy is
  // copied as it is read, and each step's writes are tracked"). Assign sets members, so an own "__proto__" key
  // (as JSON.parse makes it) would set the prototype instead: a spread keeps it a key.
  return Object.hasOwn(value, '__proto__') ? { ...value } : Object.assign({}, value);
}

/** Where a container sits: its holder and its key there. */
interface Place {
  readonly holder: Container;
  readonly key: string;
}

/** Who hears that the working copy put a copy of one of its own containers in that container's place. */
export interface ReplacingOwn {
  replaced(holder: Container, key: string, previous: Container, copy: Container): void;
}

export class WorkingCopy<T extends object> {
  /** The copy's root: the object the steps edit and the phase diffs against the request object. */
  readonly root: T;
  /** Containers that belong to this copy (the rest is shared with the request object). */
  private readonly owned = new Set<object>();
  /**
   * The containers a step moved (a splice, a sort, an assignment), and where they are now. Every other
   * container of the copy is still where it was copied to; most reviews move none.
   */
  private places: Map<object, Place> | undefined;

  constructor(original: T) {
    this.root = shallowCopy(original as unknown as Container) as unknown as T;
    this.owned.add(this.root);
  }

  /**
   * `child`, found at `parent[key]`, as a container of this copy at that place: itself when it already is
   * one there, otherwise a shallow copy put in its place. `parent` must belong to the copy already (views are
   * handed out from the root down, so it does). When the copy replaces one of the copy's own containers (found
   * away from its place), `replacing` hears of it: only then may an earlier step have written into the container
   * that is replaced.
   */
  own(parent: Container, key: string, child: Container, replacing?: ReplacingOwn): Container {
    const wasOwned = this.owned.has(child);
    if (wasOwned) {
      const place = this.places?.get(child);
      if (place === undefined || (place.holder === parent && place.key === key)) return child;
    }
    const copy = shallowCopy(child);
    setMember(parent, key, copy);
    this.owned.add(copy);
    if (wasOwned) replacing?.replaced(parent, key, child, copy);
    return copy;
  }

  /**
   * After a step put `target`, a container of this copy it had found at `from`, at `holder[key]`: if it is
   * still at `from` too, or the step put it at another place as well (`moved` holds the containers placed
   * so far), this place gets a deep copy of its own — between steps two places never share; if it was moved
   * (a splice, a sort), this is its place now.
   */
  assignPlace(holder: Container, key: string, target: Container, from: Place, moved: Set<object>): void {
    if (memberOf(holder, key) !== target) return;
    if (from.holder === holder && from.key === key) return;
    if (memberOf(from.holder, from.key) === target || moved.has(target)) {
      const copy = structuredClone(target);
      setMember(holder, key, copy);
      this.owned.add(copy);
      (this.places ??= new Map()).set(copy, { holder, key });
      return;
    }
    moved.add(target);
    (this.places ??= new Map()).set(target, { holder, key });
  }
}

const memberOf = (holder: Container, key: string): unknown => (holder as Record<string, unknown>)[key];

/** `holder[key] = value` as a data property, "__proto__" included. */
export function setMember(holder: Container, key: string, value: unknown): void {
  // An assignment to "__proto__" would set the prototype; JSON.parse makes it an own key, and so does this.
  if (key === '__proto__')
    Object.defineProperty(holder, key, { value, writable: true, enumerable: true, configurable: true });
  else (holder as Record<string, unknown>)[key] = value;
}
