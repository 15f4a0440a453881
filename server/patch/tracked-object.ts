/**
 * A write-tracking view of the chain's working copy. The gateway clones the request object once per
 * review; each mutating step edits it through one of these views, which records
 *  - an undo log (a shallow snapshot of every container the step writes to), so a step whose failure is
 *    ignored, or whose deny is only a warning, leaves no half-applied edits behind;
 *  - the JSON pointers the step wrote, for patch-conflict detection;
 * and refuses writes once the step has returned (a timed-out async plugin cannot keep editing).
 * This keeps the per-step cost to the properties a step actually touches, instead of a clone and a
 * diff per step; the final patch is one diff per review.
 */

type Container = Record<string | symbol, unknown> | unknown[];

export interface TrackedSession<T extends object> {
  /** The view to hand to the step. */
  readonly view: T;
  /** JSON pointers written (set or deleted) through the view, in order. */
  readonly writes: readonly string[];
  /** Stops recording; any later write through the view throws. */
  close(): void;
  /** Restores every container the step wrote to. Call after close(). */
  rollback(): void;
}

const escapePointer = (key: string): string =>
  key.includes('~') || key.includes('/') ? key.replace(/~/g, '~0').replace(/\//g, '~1') : key;

function isContainer(value: unknown): value is Container {
  return typeof value === 'object' && value !== null;
}

/** Proxies in `value` are replaced by their targets so the document never holds a view. */
function unwrap(value: unknown, targets: ReadonlyMap<object, object>, seen = new Set<object>()): unknown {
  if (!isContainer(value)) return value;
  const target = targets.get(value);
  if (target) return target;
  if (seen.has(value)) return value;
  seen.add(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = unwrap(value[i], targets, seen);
  } else {
    for (const key of Object.keys(value)) value[key] = unwrap(value[key], targets, seen);
  }
  return value;
}

/**
 * Starts a tracked session on `root`. With `readOnly`, every write throws a TypeError naming `owner`
 * (validating steps may not modify the object).
 */
export function trackObject<T extends object>(root: T, owner: string, readOnly = false): TrackedSession<T> {
  let open = true;
  const writes: string[] = [];
  const snapshots = new Map<Container, Container>();
  // Plain Maps, not WeakMaps: a session lives for one step call, and ephemeron tables are costly to collect.
  const proxies = new Map<object, object>();
  const targets = new Map<object, object>();
  /** JSON pointer of each container, fixed when its view is first handed out. */
  const paths = new Map<object, string>();

  const refuse = (): never => {
    throw new TypeError(
      readOnly
        ? `"${owner}" may not modify the object in the validate phase`
        : `"${owner}" modified the object after its step ended`,
    );
  };

  const remember = (target: Container): void => {
    if (!snapshots.has(target)) snapshots.set(target, Array.isArray(target) ? target.slice() : { ...target });
  };

  const record = (target: Container, key: string | symbol): void => {
    if (typeof key === 'string') writes.push(`${paths.get(target) ?? ''}/${escapePointer(key)}`);
  };

  const handler: ProxyHandler<Container> = {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof key === 'symbol' || !isContainer(value) || !Object.hasOwn(target, key)) return value;
      return proxies.get(value) ?? viewOf(value, `${paths.get(target) ?? ''}/${escapePointer(key)}`);
    },
    set(target, key, value: unknown) {
      if (!open || readOnly) refuse();
      const plain = unwrap(value, targets);
      if (Object.hasOwn(target, key) && Object.is((target as Record<string | symbol, unknown>)[key], plain))
        return true;
      // Array length changes are implied by the element writes that caused them.
      if (!(Array.isArray(target) && key === 'length')) record(target, key);
      remember(target);
      return Reflect.set(target, key, plain);
    },
    deleteProperty(target, key) {
      if (!open || readOnly) refuse();
      if (!Object.hasOwn(target, key)) return true;
      record(target, key);
      remember(target);
      return Reflect.deleteProperty(target, key);
    },
    defineProperty() {
      // Accessors or non-enumerable properties have no JSON meaning; refuse rather than produce a wrong patch.
      return refuse();
    },
    setPrototypeOf() {
      return refuse();
    },
  };

  function viewOf(target: Container, path: string): object {
    const proxy = new Proxy(target, handler);
    proxies.set(target, proxy);
    targets.set(proxy, target);
    paths.set(target, path);
    return proxy;
  }

  return {
    view: viewOf(root as unknown as Container, '') as T,
    writes,
    close() {
      open = false;
    },
    rollback() {
      for (const [target, snapshot] of [...snapshots].reverse()) {
        if (Array.isArray(target)) {
          target.length = 0;
          target.push(...(snapshot as unknown[]));
        } else {
          for (const key of Object.keys(target)) delete target[key];
          Object.assign(target, snapshot);
        }
      }
      snapshots.clear();
    },
  };
}

/** A view of `object` that throws on any write (validating steps, `oldObject`). */
export function readOnlyView<T extends object>(object: T | null | undefined, owner: string): T | undefined {
  return object ? trackObject(object, owner, true).view : undefined;
}
