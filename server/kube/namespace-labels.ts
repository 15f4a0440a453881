/**
 * Namespace labels for namespaceSelector in cluster mode, and the opt-in extensions a namespace references:
 * an informer cache, with a GET on a miss (a namespace created a moment ago), as the apiserver's namespace
 * matcher does. The informer's events also keep the reverse, which namespaces reference each extension
 * (reference-index.ts), for AdmissionProvider status and finalizers; listeners hear which extensions changed.
 */
import { CoreV1Api, makeInformer, type KubeConfig, type V1Namespace } from '@kubernetes/client-node';
import {
  EXTENSIONS_ANNOTATION,
  NO_REFERENCES,
  parseExtensionReferences,
  type ExtensionReferences,
} from '../extensions/extension-references.js';
import type { Labels } from '../steps/label-selector.js';
import { namespaceForPolicies } from '../admission/namespace-object.js';
import type { KubeObject } from '../admission/types.js';
import type { NamespaceLabelSource } from '../dispatch/reviewer.js';
import type { Logger } from '../base/log.js';
import { isDnsLabel } from '../config/names.js';
import { runInformer, type InformerRunner, type InformerRunnerOptions } from './informer-runner.js';
import { kubeErrorMessage } from './kube-errors.js';
import { createReferenceIndex, type ReferencingNamespaces } from './reference-index.js';

const NAME_LABEL = 'kubernetes.io/metadata.name';

/** Kubernetes 1.21+ sets the name label on every namespace; add it on older clusters so selectors agree. */
function withNameLabel(name: string, labels: Record<string, string> | undefined): Labels {
  return labels?.[NAME_LABEL] === name ? labels : { ...labels, [NAME_LABEL]: name };
}

/** What changed: these extensions' referencing namespaces, or `all` once the first list has been read. */
export type ReferenceChange = ReadonlySet<string> | 'all';

/** Which namespaces reference each extension, from the informer's cache. */
export interface NamespaceReferences {
  /** True once the namespace list has been read: until then every count would read 0. */
  synced(): boolean;
  /** The count and the first `limit` referencing namespaces, sorted. */
  namespaces(extension: string, limit: number): ReferencingNamespaces;
  /** Calls `listener` after each change (synchronously, in the informer's event); returns the unsubscribe. */
  subscribe(listener: (change: ReferenceChange) => void): () => void;
}

export interface NamespaceLabelCache extends NamespaceLabelSource {
  readonly runner: InformerRunner;
  extensions(namespace: string): ExtensionReferences | Promise<ExtensionReferences>;
  readonly references: NamespaceReferences;
}

/** What a review reads of a namespace. */
interface NamespaceFacts {
  readonly labels: Labels;
  readonly extensions: ExtensionReferences;
  readonly object: KubeObject;
}

/** What a namespace references in its annotation, bounded by the parser. */
function referencesOf(namespace: V1Namespace): ExtensionReferences {
  return parseExtensionReferences(namespace.metadata?.annotations?.[EXTENSIONS_ANNOTATION]);
}

function factsOf(name: string, namespace: V1Namespace): NamespaceFacts {
  return {
    labels: withNameLabel(name, namespace.metadata?.labels),
    extensions: referencesOf(namespace),
    object: namespaceForPolicies(namespace),
  };
}

/** Each cached namespace as policies read it, made once per version the informer holds. */
const forPolicies = new WeakMap<V1Namespace, KubeObject>();

function cachedForPolicies(namespace: V1Namespace): KubeObject {
  let object = forPolicies.get(namespace);
  if (object === undefined) {
    object = namespaceForPolicies(namespace);
    forPolicies.set(namespace, object);
  }
  return object;
}

/** How long a review waits for a namespace the cache does not have yet (then: no labels, as for an error). */
const LOOKUP_TIMEOUT_MS = 2000;
/** Namespace GETs in flight at once; a review past it gets no labels rather than another request. */
const MAX_LOOKUPS = 16;

/**
 * The GET on a cache miss, bounded: the namespace field is the client's to choose, so a name no namespace
 * can have is not looked up, reviews of one name share one GET, at most MAX_LOOKUPS run at once, and none
 * holds a review longer than LOOKUP_TIMEOUT_MS.
 */
export function boundedLookup<T>(
  read: (name: string) => Promise<T | undefined>,
  options: { timeoutMs?: number; maxLookups?: number } = {},
): (name: string) => Promise<T | undefined> {
  const timeoutMs = options.timeoutMs ?? LOOKUP_TIMEOUT_MS;
  const maxLookups = options.maxLookups ?? MAX_LOOKUPS;
  const pending = new Map<string, Promise<T | undefined>>();
  return (name) => {
    if (!isDnsLabel(name)) return Promise.resolve(undefined);
    let lookup = pending.get(name);
    if (!lookup) {
      if (pending.size >= maxLookups) return Promise.resolve(undefined);
      lookup = read(name).finally(() => pending.delete(name));
      pending.set(name, lookup);
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, timeoutMs, undefined)));
    return Promise.race([lookup, late]).finally(() => clearTimeout(timer));
  };
}

export function createNamespaceLabelCache(
  kc: KubeConfig,
  log: Logger,
  options?: InformerRunnerOptions,
): NamespaceLabelCache {
  const core = kc.makeApiClient(CoreV1Api);
  const informer = makeInformer<V1Namespace>(kc, '/api/v1/namespaces', () => core.listNamespace());
  const index = createReferenceIndex();
  const listeners = new Set<(change: ReferenceChange) => void>();
  const notify = (change: ReferenceChange) => {
    if (change !== 'all' && change.size === 0) return;
    for (const listener of listeners) {
      // A listener's mistake must not break the informer's event loop (client-node calls handlers inline).
      try {
        listener(change);
      } catch (err) {
        log.error({ err: kubeErrorMessage(err) }, 'namespace reference listener failed');
      }
    }
  };
  const record = (namespace: V1Namespace) => {
    const name = namespace.metadata?.name;
    if (name) notify(index.set(name, referencesOf(namespace)));
  };
  informer.on('add', record);
  informer.on('update', record);
  informer.on('delete', (namespace) => {
    const name = namespace.metadata?.name;
    if (name) notify(index.delete(name));
  });
  let announced = false;
  const runner = runInformer('namespaces', informer, log, {
    ...options,
    onConnectionChange: (connected) => {
      options?.onConnectionChange?.(connected);
      // The first list has been read (its adds are in the index): every count is now the cluster's.
      if (connected && !announced) {
        announced = true;
        notify('all');
      }
    },
  });
  const lookup = boundedLookup(async (name): Promise<NamespaceFacts | undefined> => {
    try {
      return factsOf(name, await core.readNamespace({ name }));
    } catch (err) {
      log.debug({ namespace: name, err: kubeErrorMessage(err) }, 'namespace lookup failed');
      return undefined;
    }
  });
  return {
    runner,
    // A cached namespace (nearly every review) is answered at once, without a promise.
    labels(namespace) {
      const cached = informer.get(namespace);
      return cached ? withNameLabel(namespace, cached.metadata?.labels) : lookup(namespace).then((f) => f?.labels);
    },
    object(namespace) {
      const cached = informer.get(namespace);
      return cached ? cachedForPolicies(cached) : lookup(namespace).then((f) => f?.object);
    },
    // A cached namespace's references were parsed once, by its informer event.
    extensions(namespace) {
      if (informer.get(namespace)) return index.of(namespace) ?? NO_REFERENCES;
      return lookup(namespace).then((f) => f?.extensions ?? NO_REFERENCES);
    },
    references: {
      synced: () => announced,
      namespaces: (extension, limit) => index.namespaces(extension, limit),
      subscribe(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    },
  };
}
