/**
 * The mutate phase's working copy, copied as it is reached instead of cloned up front. Each container a
 * step's view reaches is shallow-copied the first time (copy on read), so the request object is never
 * modified and subtrees no step looks at stay shared with it. For a Pod and the shipped plugins that is
 * about ten small containers instead of the whole object; a large ConfigMap's data is never copied at all.
 */
type Container = Record<string, unknown> | unknown[];

export function shallowCopy<T extends Container>(value: T): T {
  // Spread defines own data properties, so a "__proto__" key stays a key (as JSON.parse made it).
  return (Array.isArray(value) ? value.slice() : { ...value }) as T;
}

export class WorkingCopy<T extends object> {
  /** The copy's root: the object the steps edit and the phase diffs against the request object. */
  readonly root: T;
  /** Containers that belong to this copy (the rest is shared with the request object). */
  private readonly owned = new Set<object>();

  constructor(original: T) {
    this.root = shallowCopy(original as unknown as Container) as unknown as T;
    this.owned.add(this.root);
  }

  /**
   * `child`, found at `parent[key]`, as a container of this copy: itself when it already is one, otherwise
   * a shallow copy put in its place. `parent` must belong to the copy already (views are handed out from
   * the root down, so it does).
   */
  own(parent: Container, key: string, child: Container): Container {
    if (this.owned.has(child)) return child;
    const copy = shallowCopy(child);
    (parent as Record<string, unknown>)[key] = copy;
    this.owned.add(copy);
    return copy;
  }
}
