/**
 * The steps of an `admissionPolicies` entry with `fromCluster: true` in cluster mode, from what its watches hold:
 * the cluster's policies and bindings read as the files' are (read-objects.ts) — one that does not compile is left
 * out and named once, the others run —, joined to the files' (a name in both: the file's), and the params its
 * bindings' paramRefs select, from the queries this says to watch (server/kube/native-policy-watcher.ts does the
 * watching). Pure: the objects are handed in, the steps handed back.
 */
import type { KubeObject, LabelSelector } from '../admission/types.js';
import type { NativePoliciesEntry } from '../config/types.js';
import type { Step } from '../steps/step.js';
import type { NativePolicySet, ParamKind } from './native-objects.js';
import { mergePolicySets, nativeStepsOf, objectKey } from './native-steps.js';
import { clusterPolicySet, readClusterObject, type ClusterRead } from './read-objects.js';

/** The cluster's policies and bindings one entry keeps, at most (as many as its files may hold). */
export const MAX_CLUSTER_POLICY_OBJECTS = 1024;
/** Distinct paramRef queries one entry watches, at most, and objects kept of each. */
export const MAX_PARAM_QUERIES = 64;
export const MAX_PARAM_OBJECTS = 256;

/** What one paramRef needs watched: objects of a kind, in one namespace or all, by name or by labels. */
export interface ParamQuery {
  /** The same for the same query (the watch is shared by the bindings that ask it). */
  readonly key: string;
  readonly paramKind: ParamKind;
  /** Absent: every namespace (the request's namespace is known only per review), or a cluster-scoped kind. */
  readonly namespace?: string;
  /** `metadata.name=NAME` for a paramRef by name. */
  readonly fieldSelector?: string;
  /** The paramRef's selector as the apiserver's labelSelector parameter writes it. */
  readonly labelSelector?: string;
}

/** What a build came to. */
export interface ClusterBuild {
  readonly steps: Step[];
  /** The queries the bindings' params need watched now. */
  readonly queries: readonly ParamQuery[];
}

export interface ClusterPolicies {
  /** The entry's steps from the cluster's `policyObjects` (all four kinds) and the params each query found. */
  build(
    policyObjects: readonly KubeObject[],
    paramsOf: (query: ParamQuery) => readonly KubeObject[] | undefined,
  ): ClusterBuild;
}

function values(list: readonly string[] | undefined): string {
  return `(${(list ?? []).join(',')})`;
}

/** A label selector in the apiserver's query syntax (`app=web,tier in (a,b),!legacy`); '' selects all. */
export function selectorQuery(selector: LabelSelector): string {
  const parts = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => `${key}=${value}`);
  for (const { key, operator, values: list } of selector.matchExpressions ?? []) {
    if (operator === 'In') parts.push(`${key} in ${values(list)}`);
    else if (operator === 'NotIn') parts.push(`${key} notin ${values(list)}`);
    else if (operator === 'Exists') parts.push(key);
    else parts.push(`!${key}`);
  }
  return parts.join(',');
}

/** The queries the bound bindings' paramRefs need, each once, in the order first asked. */
function paramQueries(set: NativePolicySet): ParamQuery[] {
  const policies = new Map([...set.policies, ...set.mutatingPolicies].map((p) => [p.name, p]));
  const queries = new Map<string, ParamQuery>();
  for (const binding of [...set.mutatingBindings, ...set.bindings]) {
    const paramKind = policies.get(binding.policyName)?.paramKind;
    const ref = binding.paramRef;
    if (!paramKind || !ref) continue;
    const labelSelector = ref.selector ? selectorQuery(ref.selector) : undefined;
    const query: Omit<ParamQuery, 'key'> = {
      paramKind: { apiVersion: paramKind.apiVersion, kind: paramKind.kind },
      ...(ref.namespace ? { namespace: ref.namespace } : {}),
      ...(ref.name !== undefined ? { fieldSelector: `metadata.name=${ref.name}` } : {}),
      ...(labelSelector ? { labelSelector } : {}),
    };
    const key = JSON.stringify(query);
    if (!queries.has(key)) queries.set(key, { key, ...query });
  }
  return [...queries.values()];
}

/**
 * The cluster's objects of a query as a binding's params read them: with the apiVersion and kind a list leaves
 * out of its items.
 */
function stamped(query: ParamQuery, objects: readonly KubeObject[]): KubeObject[] {
  return objects.map((o) => ({ ...o, apiVersion: query.paramKind.apiVersion, kind: query.paramKind.kind }));
}

export function createClusterPolicies(
  entry: NativePoliciesEntry,
  files: NativePolicySet,
  /** Told once of each problem (an object that does not compile, a bound reached); again only if it comes back. */
  report: (problem: string) => void,
): ClusterPolicies {
  // Compiled once per resourceVersion: a change to one object recompiles only that one.
  const compiled = new Map<string, { readonly version: string; readonly read: ClusterRead }>();
  let reported = new Set<string>();

  return {
    build(policyObjects, paramsOf) {
      const problems: string[] = [];
      const kept = policyObjects.slice(0, MAX_CLUSTER_POLICY_OBJECTS);
      if (policyObjects.length > kept.length)
        problems.push(
          `the cluster holds ${policyObjects.length} admission policies and bindings: only the first ${MAX_CLUSTER_POLICY_OBJECTS} run`,
        );
      const seen = new Map<string, { readonly version: string; readonly read: ClusterRead }>();
      const reads = kept.map((object) => {
        const id = `${String(object.kind)}/${object.metadata?.name ?? ''}`;
        const version = object.metadata?.resourceVersion ?? '';
        const before = compiled.get(id);
        const read = before && before.version === version && version !== '' ? before.read : readClusterObject(object);
        seen.set(id, { version, read });
        if ('problem' in read) problems.push(`${read.problem} (left out)`);
        return read;
      });
      compiled.clear();
      for (const [id, value] of seen) compiled.set(id, value);

      const merged = mergePolicySets(files, clusterPolicySet(reads));
      const wanted = paramQueries(merged);
      const queries = wanted.slice(0, MAX_PARAM_QUERIES);
      if (wanted.length > queries.length)
        problems.push(
          `the bindings ask for ${wanted.length} different params: only the first ${MAX_PARAM_QUERIES} are read`,
        );
      // Two queries may find one object (a name and a selector): it is one candidate.
      const params = new Map<string, KubeObject>();
      for (const query of queries) {
        const found = paramsOf(query) ?? [];
        if (found.length > MAX_PARAM_OBJECTS)
          problems.push(
            `${query.paramKind.kind} params ${query.key}: ${found.length} objects, only the first ${MAX_PARAM_OBJECTS} are read`,
          );
        for (const o of stamped(query, found.slice(0, MAX_PARAM_OBJECTS))) params.set(objectKey(o), o);
      }
      const steps = nativeStepsOf(entry, mergePolicySets(merged, { ...EMPTY, objects: [...params.values()] }));

      const now = new Set(problems);
      for (const problem of now) if (!reported.has(problem)) report(problem);
      reported = now;
      return { steps, queries };
    },
  };
}

const EMPTY: NativePolicySet = { policies: [], bindings: [], mutatingPolicies: [], mutatingBindings: [], objects: [] };
