/**
 * The mutate phase's working copy, copied as it is reached instead of cloned up front. Each container a
 * step's view reaches is shallow-copied the first time (copy on read), so the request object is never
 * modified and subtrees no step looks at stay shared with it. For a Pod and the shipped plugins that is
 * about ten small containers instead of the whole object; a large ConfigMap's data is never copied at all.
 *
 * A copy belongs to one place (its holder and key). A step may put one container at a second place
 * (`template.metadata.labels = metadata.labels`); when a later step reaches it there, it gets a copy of its
 * own, so that between steps the object behaves as the JSON it stands for, where two places never share.
 */
type Container = Record<string, unknown> | unknown[];

export function shallowCopy<T extends Container>(value: T): T {
  // Spread defines own data properties, so a "__proto__" key stays a key (as JSON.parse made it).
  return (Array.isArray(value) ? value.slice() : { ...value }) as T;
}

export class WorkingCopy<T extends object> {
  /** The copy's root: the object the steps edit and the phase diffs against the request object. */
  readonly root: T;
  /** The containers that belong to this copy (the rest is shared with the request object): their holders… */
  private readonly holders = new Map<object, Container>();
  /** …and their keys there. */
  private readonly keys = new Map<object, string>();

  constructor(original: T) {
    this.root = shallowCopy(original as unknown as Container) as unknown as T;
  }

  /**
   * `child`, found at `parent[key]`, as a container of this copy at that place: itself when it already is
   * one there, otherwise a shallow copy put in its place. `parent` must belong to the copy already (views are
   * handed out from the root down, so it does).
   */
  own(parent: Container, key: string, child: Container): Container {
    if (this.holders.get(child) === parent && this.keys.get(child) === key) return child;
    const copy = shallowCopy(child);
    if (key === '__proto__')
      Object.defineProperty(parent, key, { value: copy, writable: true, enumerable: true, configurable: true });
    else (parent as Record<string, unknown>)[key] = copy;
    this.holders.set(copy, parent);
    this.keys.set(copy, key);
    return copy;
  }

  /**
   * After a step put `target` (a container of this copy) at `holder[key]`: if it is also still at the place
   * it came from, this place gets a deep copy of its own (between steps two places never share); if it was
   * moved (a splice, a sort), this is its place now.
   */
  settle(holder: Container, key: string, target: Container): void {
    if ((holder as Record<string, unknown>)[key] !== target) return;
    const from = this.holders.get(target);
    const fromKey = this.keys.get(target);
    if (from === holder && fromKey === key) return;
    if (from !== undefined && (from as Record<string, unknown>)[fromKey!] === target) {
      const copy = structuredClone(target);
      if (key === '__proto__')
        Object.defineProperty(holder, key, { value: copy, writable: true, enumerable: true, configurable: true });
      else (holder as Record<string, unknown>)[key] = copy;
      this.holders.set(copy, holder);
      this.keys.set(copy, key);
      return;
    }
    this.holders.set(target, holder);
    this.keys.set(target, key);
  }

  /** Whether `container` is `node` or holds it, at any depth. */
  holds(container: object, node: object): boolean {
    for (let at: object | undefined = node; at !== undefined; at = this.holders.get(at)) {
      if (at === container) return true;
    }
    return false;
  }
}
