/**
 * `audit` with `admissionPolicies` entries with `fromCluster: true`: the cluster's policies and bindings, and the
 * params their paramRefs select, each listed once in pages (paged-list.ts) within the bounds cluster mode's watches
 * keep (MAX_CLUSTER_POLICY_OBJECTS, `kube.policyParams`), and the entries' steps built from them as cluster mode
 * builds them (cluster-policies.ts): a paramRef past its bound fails its bindings the same way.
 */
import {
  CustomObjectsApi,
  KubernetesObjectApi,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { plain } from '../admission/namespace-object.js';
import type { KubeObject } from '../admission/types.js';
import type { NativePoliciesEntry, PolicyParamsConfig } from '../config/types.js';
import {
  createClusterPolicies,
  describeParams,
  MAX_CLUSTER_POLICY_OBJECTS,
  type ParamQuery,
  type ParamsFound,
} from '../native-policy/cluster-policies.js';
import { readEntryFiles } from '../native-policy/native-steps.js';
import type { Step } from '../steps/step.js';
import { listInPages } from './paged-list.js';
import { createParamLedger, objectBytes, overBoundError, type ParamLedger } from './param-bounds.js';
import { idOf, listWithin, paramPages } from './param-watch.js';
import { POLICY_GROUP, POLICY_KINDS, ResourceDiscovery, servedPolicyKind } from './policy-kinds.js';

export interface ClusterPolicyListOptions {
  readonly kc: KubeConfig;
  readonly entries: readonly NativePoliciesEntry[];
  readonly configFile: string;
  readonly bounds: PolicyParamsConfig;
  /** Told of each problem (a policy that does not compile, a bound reached), once, by entry. */
  readonly report: (entry: string, problem: string) => void;
}

/** What was read: each entry's steps, or why none of the cluster's are (the entries run their files only). */
export type ClusterPolicySteps = { readonly steps: ReadonlyMap<string, Step[]> } | { readonly problem: string };

/** The cluster's policies and bindings, stamped with their kind; or the problem when there are too many. */
async function listPolicyObjects(kc: KubeConfig, discovery: ResourceDiscovery): Promise<KubeObject[] | string> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const objects: KubeObject[] = [];
  for (const policyKind of POLICY_KINDS) {
    const served = await servedPolicyKind(discovery, policyKind);
    if (!served) continue;
    const { version, plural } = served;
    let count = objects.length;
    const read = await listInPages(
      (limit, token) =>
        custom.listClusterCustomObject({
          group: POLICY_GROUP,
          version,
          plural,
          limit,
          ...(token ? { _continue: token } : {}),
        }) as Promise<KubernetesListObject<KubernetesObject>>,
      (page) => {
        count += page.length;
        return count > MAX_CLUSTER_POLICY_OBJECTS ? count : undefined;
      },
    );
    if ('refused' in read)
      return `the cluster holds more than ${MAX_CLUSTER_POLICY_OBJECTS} admission policies and bindings`;
    const apiVersion = `${POLICY_GROUP}/${version}`;
    objects.push(...read.list.items.map((item) => ({ ...(item as KubeObject), apiVersion, kind: policyKind.kind })));
  }
  return objects;
}

/** The objects one query selects, or why none are read (past the bound). */
async function listParams(
  clients: { readonly discovery: ResourceDiscovery; readonly objectsApi: KubernetesObjectApi },
  ledger: ParamLedger,
  query: ParamQuery,
): Promise<ParamsFound> {
  const { apiVersion, kind } = query.paramKind;
  const resource = await clients.discovery.find(apiVersion, kind);
  if (!resource) return [];
  const namespace = resource.namespaced ? query.namespace : undefined;
  const tally = ledger.query();
  const read = await listWithin(tally, paramPages(clients.objectsApi, query, namespace));
  if ('refused' in read) return { error: overBoundError(describeParams(query), read.refused) };
  for (const object of read.list.items) tally.set(idOf(object), objectBytes(object));
  return read.list.items.map((object) => plain(object) as KubeObject);
}

export async function listClusterPolicySteps(o: ClusterPolicyListOptions): Promise<ClusterPolicySteps> {
  const clients = {
    discovery: o.kc.makeApiClient(ResourceDiscovery),
    objectsApi: o.kc.makeApiClient(KubernetesObjectApi),
  };
  const objects = await listPolicyObjects(o.kc, clients.discovery);
  if (typeof objects === 'string') return { problem: objects };
  const ledger = createParamLedger(o.bounds);
  const found = new Map<string, ParamsFound>();
  const entries = o.entries.map((entry) => ({
    entry,
    policies: createClusterPolicies(entry, readEntryFiles(entry, o.configFile), (p) => o.report(entry.name, p)),
  }));
  // The first build says which params the bindings need; the second runs them with what was read.
  for (const { policies } of entries)
    for (const query of policies.build(objects, () => undefined).queries)
      if (!found.has(query.key)) found.set(query.key, await listParams(clients, ledger, query));
  return {
    steps: new Map(
      entries.map(({ entry, policies }) => [entry.name, policies.build(objects, (q) => found.get(q.key)).steps]),
    ),
  };
}
