/**
 * Which namespaces reference each opt-in extension (their `admissiongateway.io/extensions` annotation), kept
 * up to date one namespace event at a time: an event costs the names of that namespace (at most
 * MAX_EXTENSION_REFERENCES), never a scan of the cluster. Namespace annotations are anyone's to write who can
 * edit a namespace, so what is kept is what parseExtensionReferences already bounded.
 */
import type { ExtensionReferences } from '../extensions/extension-references.js';

/** The first namespaces of a reference, sorted, and how many more there are. */
export interface ReferencingNamespaces {
  readonly count: number;
  /** At most the number asked for, in code-point order. */
  readonly first: readonly string[];
}

export interface ReferenceIndex {
  /**
   * Records what `namespace` references now (after an add or an update; NO_REFERENCES or a delete: none);
   * returns the extensions whose set of namespaces changed.
   */
  set(namespace: string, references: ExtensionReferences): ReadonlySet<string>;
  /** Forgets a deleted namespace; returns the extensions it referenced. */
  delete(namespace: string): ReadonlySet<string>;
  /** What the namespace references, as last set (undefined: not known). */
  of(namespace: string): ExtensionReferences | undefined;
  /** How many namespaces reference `extension`. */
  count(extension: string): number;
  /** The referencing namespaces of `extension`: the count and the first `limit` in sorted order. */
  namespaces(extension: string, limit: number): ReferencingNamespaces;
}

const NOTHING: ReadonlySet<string> = new Set();

export function createReferenceIndex(): ReferenceIndex {
  const byNamespace = new Map<string, ExtensionReferences>();
  const byExtension = new Map<string, Set<string>>();

  const link = (extension: string, namespace: string) => {
    let namespaces = byExtension.get(extension);
    if (!namespaces) byExtension.set(extension, (namespaces = new Set()));
    namespaces.add(namespace);
  };
  const unlink = (extension: string, namespace: string) => {
    const namespaces = byExtension.get(extension);
    if (!namespaces) return;
    namespaces.delete(namespace);
    // Names no namespace references any more go, so hostile churn of made-up names leaves nothing behind.
    if (namespaces.size === 0) byExtension.delete(extension);
  };

  const index: ReferenceIndex = {
    set(namespace, references) {
      const before = byNamespace.get(namespace)?.names ?? [];
      const after = references.names;
      // Kept with only invalid names too: the request path warns about those.
      if (after.length === 0 && references.invalid.length === 0) byNamespace.delete(namespace);
      else byNamespace.set(namespace, references);
      if (before.length === 0 && after.length === 0) return NOTHING;
      const changed = new Set<string>();
      // Both lists hold at most MAX_EXTENSION_REFERENCES names: includes() is cheap here.
      for (const name of before) {
        if (!after.includes(name)) {
          unlink(name, namespace);
          changed.add(name);
        }
      }
      for (const name of after) {
        if (!before.includes(name)) {
          link(name, namespace);
          changed.add(name);
        }
      }
      return changed;
    },
    delete(namespace) {
      const before = byNamespace.get(namespace)?.names ?? [];
      byNamespace.delete(namespace);
      for (const name of before) unlink(name, namespace);
      return before.length === 0 ? NOTHING : new Set(before);
    },
    of: (namespace) => byNamespace.get(namespace),
    count: (extension) => byExtension.get(extension)?.size ?? 0,
    namespaces(extension, limit) {
      const all = byExtension.get(extension);
      if (!all) return { count: 0, first: [] };
      return { count: all.size, first: smallest(all, limit) };
    },
  };
  return index;
}

/**
 * The `limit` smallest names, sorted: one pass keeping a sorted list of at most `limit` (a condition names a
 * few namespaces of what may be thousands; sorting them all for that would be wasted).
 */
export function smallest(names: Iterable<string>, limit: number): string[] {
  const kept: string[] = [];
  if (limit <= 0) return kept;
  for (const name of names) {
    if (kept.length === limit && name >= kept[limit - 1]!) continue;
    let low = 0;
    let high = kept.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (kept[middle]! < name) low = middle + 1;
      else high = middle;
    }
    kept.splice(low, 0, name);
    if (kept.length > limit) kept.pop();
  }
  return kept;
}
