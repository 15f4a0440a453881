/**
 * The params a binding hands its policy, from the objects of the entry's files and, with `fromCluster`, those its
 * watches read from the cluster (cluster-policies.ts), as generic.CollectParams in the apiserver. A policy without paramKind, or a binding
 * without paramRef, runs once with `params` null; a paramRef by name runs with that object, by selector with
 * every object it selects, each a run of its own. A kind is namespaced when Kubernetes serves it so, or when
 * one of its objects in the files has a namespace.
 */
import type { KubeObject } from '../admission/types.js';
import { builtInKind } from '../admission/built-in-kinds.js';
import { toCel } from '../cel/index.js';
import { compileSelector } from '../steps/label-selector.js';
import type { NativeBinding, NativePolicy, ParamKind } from './native-objects.js';

/** The params of one binding for a request in `namespace`: the objects (null: none asked), or the error. */
export type ParamsOutcome = { readonly params: readonly (KubeObject | null)[] } | { readonly error: string };

const NO_PARAMS: ParamsOutcome = { params: [null] };

function ofKind(objects: readonly KubeObject[], kind: ParamKind): KubeObject[] {
  return objects.filter((o) => o.apiVersion === kind.apiVersion && o.kind === kind.kind);
}

function isNamespaced(kind: ParamKind, objects: readonly KubeObject[]): boolean {
  const group = kind.apiVersion.includes('/') ? kind.apiVersion.slice(0, kind.apiVersion.indexOf('/')) : '';
  return builtInKind(group, kind.kind)?.namespaced ?? objects.some((o) => !!o.metadata?.namespace);
}

/** A function giving the params of `binding` for a request's namespace; all but the namespace settled at load. */
export function paramsOfBinding(
  policy: Pick<NativePolicy, 'paramKind'>,
  binding: Pick<NativeBinding, 'paramRef'>,
  objects: readonly KubeObject[],
): (namespace: string) => ParamsOutcome {
  const { paramKind } = policy;
  const ref = binding.paramRef;
  if (!paramKind || !ref) return () => NO_PARAMS;
  const candidates = ofKind(objects, paramKind);
  const namespaced = isNamespaced(paramKind, candidates);
  if (ref.namespace && !namespaced)
    return () => ({ error: 'paramRef.namespace must not be provided for a cluster-scoped `paramKind`' });
  const selector = ref.selector ? compileSelector(ref.selector) : undefined;
  // What the paramRef selects, by namespace ('' for a cluster-scoped kind): a request only looks its namespace up.
  const found = new Map<string, { params: KubeObject[] }>();
  for (const o of candidates) {
    const selected = selector
      ? selector((o.metadata?.labels as Record<string, string> | undefined) ?? {})
      : o.metadata?.name === ref.name;
    if (!selected) continue;
    const key = namespaced ? (o.metadata?.namespace ?? '') : '';
    const earlier = found.get(key);
    if (earlier) earlier.params.push(o);
    else found.set(key, { params: [o] });
  }
  const notFound: ParamsOutcome =
    ref.parameterNotFoundAction === 'Deny'
      ? { error: 'no params found for policy binding with `Deny` parameterNotFoundAction' }
      : { params: [] };
  return (requestNamespace) => {
    if (!namespaced) return found.get('') ?? notFound;
    const namespace = ref.namespace || requestNamespace;
    if (!namespace)
      return { error: 'cannot use namespaced paramRef in policy binding that matches cluster-scoped resources' };
    return found.get(namespace) ?? notFound;
  };
}

/** Each params object as CEL reads it: converted at its first use, once (the objects never change). */
const celValues = new WeakMap<KubeObject, unknown>();

/** `object` as CEL reads it (CelValueError when it nests too deep). */
export function celParams(object: KubeObject): unknown {
  let value = celValues.get(object);
  if (value === undefined) {
    value = toCel(object);
    celValues.set(object, value);
  }
  return value;
}
