/**
 * Cluster mode's side of `admissionPolicies` entries with `fromCluster: true`: the cluster's
 * ValidatingAdmissionPolicies and their bindings (admissionregistration.k8s.io/v1) and MutatingAdmissionPolicies
 * and theirs (v1 where served, else v1beta1, else none: discovery says) watched through informers, and the objects
 * the bindings' paramRefs select watched as narrowly as the paramRef allows (its namespace, a field selector on
 * its name, its label selector). Every change rebuilds the entries' steps off the request path (coalesced, then
 * swapped into the chain whole, as provider changes are); a review never calls the apiserver for them.
 */
import {
  CustomObjectsApi,
  KubernetesObjectApi,
  ListWatch,
  Watch,
  makeInformer,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type ObjectCache,
  type V1APIResource,
} from '@kubernetes/client-node';
import { plain } from '../admission/namespace-object.js';
import type { KubeObject } from '../admission/types.js';
import type { Logger } from '../base/log.js';
import type { NativePoliciesEntry } from '../config/types.js';
import { createClusterPolicies, type ClusterPolicies, type ParamQuery } from '../native-policy/cluster-policies.js';
import { readEntryFiles } from '../native-policy/native-steps.js';
import type { Step } from '../steps/step.js';
import { runInformer, type BackoffOptions, type InformerRunner } from './informer-runner.js';
import { kubeErrorMessage, statusCode } from './kube-errors.js';

const GROUP = 'admissionregistration.k8s.io';

/** The four kinds, and the versions each is looked for in, preferred first. */
const WATCHED = [
  { kind: 'ValidatingAdmissionPolicy', versions: ['v1'] },
  { kind: 'ValidatingAdmissionPolicyBinding', versions: ['v1'] },
  { kind: 'MutatingAdmissionPolicy', versions: ['v1', 'v1beta1'] },
  { kind: 'MutatingAdmissionPolicyBinding', versions: ['v1', 'v1beta1'] },
] as const;

export interface NativePolicyWatcherOptions {
  readonly kc: KubeConfig;
  /** The entries with `fromCluster: true`. */
  readonly entries: readonly NativePoliciesEntry[];
  readonly configFile: string;
  /** Where the entries' new steps go (the chain manager). */
  readonly setEntrySteps: (entry: string, steps: readonly Step[]) => void;
  readonly log: Logger;
  readonly backoff?: BackoffOptions;
  /** Told when a policy kind's list/watch connects or loses its connection (by its resource, for a metric). */
  readonly onConnectionChange?: (resource: string, connected: boolean) => void;
}

export interface NativePolicyWatcher {
  /** True once every served kind's first list has been read. */
  hasSynced(): boolean;
  lastError(): string | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Discovery, from client-node's own cached lookup of a group version's resources. */
class ResourceDiscovery extends KubernetesObjectApi {
  /** The resource serving `kind` at `apiVersion`, or undefined when the group version or kind is not served. */
  async find(apiVersion: string, kind: string): Promise<V1APIResource | undefined> {
    try {
      return await this.resource(apiVersion, kind);
    } catch (err) {
      if (statusCode(err) === 404) return undefined;
      throw err;
    }
  }
}

type Watched = ObjectCache<KubernetesObject> & { readonly kind: string; readonly apiVersion: string };

interface ParamWatch {
  readonly informer?: ListWatch<KubernetesObject>;
  readonly runner?: InformerRunner;
}

function apiPath(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

export function createNativePolicyWatcher(o: NativePolicyWatcherOptions): NativePolicyWatcher {
  const discovery = o.kc.makeApiClient(ResourceDiscovery);
  const objectsApi = o.kc.makeApiClient(KubernetesObjectApi);
  const custom = o.kc.makeApiClient(CustomObjectsApi);
  const states: { entry: NativePoliciesEntry; policies: ClusterPolicies }[] = o.entries.map((entry) => ({
    entry,
    policies: createClusterPolicies(entry, readEntryFiles(entry, o.configFile), (problem) =>
      o.log.warn({ admissionPolicies: entry.name, problem }, 'cluster admission policy left out'),
    ),
  }));
  const watched: Watched[] = [];
  const runners: InformerRunner[] = [];
  const params = new Map<string, ParamWatch>();
  let stopped = true;
  let discovered = false;
  let failure: string | undefined;
  let scheduled = false;

  const schedule = () => {
    if (scheduled || stopped) return;
    scheduled = true;
    // After the informer's burst of events (a list delivers one per object): one rebuild for all of them.
    setImmediate(rebuild);
  };

  function policyObjects(): KubeObject[] {
    return watched.flatMap((w) =>
      w.list().map((object) => ({ ...(object as KubeObject), apiVersion: w.apiVersion, kind: w.kind })),
    );
  }

  function paramsOf(query: ParamQuery): readonly KubeObject[] | undefined {
    return params
      .get(query.key)
      ?.informer?.list()
      .map((object) => plain(object) as KubeObject);
  }

  function rebuild(): void {
    scheduled = false;
    if (stopped) return;
    const objects = policyObjects();
    const queries = new Map<string, ParamQuery>();
    for (const { entry, policies } of states) {
      const built = policies.build(objects, paramsOf);
      o.setEntrySteps(entry.name, built.steps);
      for (const query of built.queries) queries.set(query.key, query);
    }
    syncParams(queries);
  }

  function syncParams(queries: ReadonlyMap<string, ParamQuery>): void {
    for (const [key, watch] of params) {
      if (queries.has(key)) continue;
      params.delete(key);
      void watch.runner?.stop();
    }
    for (const [key, query] of queries) {
      if (params.has(key)) continue;
      params.set(key, {});
      void watchParams(query);
    }
  }

  async function watchParams(query: ParamQuery): Promise<void> {
    const { apiVersion, kind } = query.paramKind;
    let resource: V1APIResource | undefined;
    try {
      resource = await discovery.find(apiVersion, kind);
    } catch (err) {
      o.log.warn({ paramKind: `${apiVersion} ${kind}`, err: kubeErrorMessage(err) }, 'params: discovery failed');
    }
    if (!params.has(query.key) || stopped) return;
    if (!resource) {
      o.log.warn({ paramKind: `${apiVersion} ${kind}` }, 'params: the cluster does not serve this kind; none found');
      return;
    }
    const namespace = resource.namespaced ? query.namespace : undefined;
    const path = `${apiPath(apiVersion)}${namespace ? `/namespaces/${namespace}` : ''}/${resource.name}`;
    const informer = new ListWatch<KubernetesObject>(
      path,
      new Watch(o.kc),
      () =>
        objectsApi.list<KubernetesObject>(
          apiVersion,
          kind,
          namespace,
          undefined,
          undefined,
          undefined,
          query.fieldSelector,
          query.labelSelector,
        ),
      false,
      query.labelSelector,
      query.fieldSelector,
    );
    for (const event of ['add', 'update', 'delete'] as const) informer.on(event, schedule);
    const runner = runInformer(`params ${apiVersion} ${kind}`, informer, o.log, {
      ...(o.backoff ? { backoff: o.backoff } : {}),
    });
    params.set(query.key, { informer, runner });
    await runner.start();
    schedule();
  }

  /** The served version of each kind (retried with backoff until the apiserver answers). */
  async function discover(): Promise<void> {
    let delay = o.backoff?.initialMs ?? 500;
    const max = o.backoff?.maxMs ?? 30_000;
    while (!stopped) {
      try {
        for (const { kind, versions } of WATCHED) {
          let served: { version: string; plural: string } | undefined;
          for (const version of versions) {
            const resource = await discovery.find(`${GROUP}/${version}`, kind);
            if (resource) {
              served = { version, plural: resource.name };
              break;
            }
          }
          if (!served) {
            o.log.info({ kind }, 'not served by this cluster: none read');
            continue;
          }
          watch(kind, served.version, served.plural);
        }
        discovered = true;
        failure = undefined;
        return;
      } catch (err) {
        failure = kubeErrorMessage(err);
        o.log.warn({ err: failure, retryInMs: delay }, 'admission policies: discovery failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, delay).unref());
        delay = Math.min(delay * 2, max);
      }
    }
  }

  function watch(kind: string, version: string, plural: string): void {
    const informer = makeInformer<KubernetesObject>(
      o.kc,
      `/apis/${GROUP}/${version}/${plural}`,
      () =>
        custom.listClusterCustomObject({ group: GROUP, version, plural }) as Promise<
          KubernetesListObject<KubernetesObject>
        >,
    );
    for (const event of ['add', 'update', 'delete'] as const) informer.on(event, schedule);
    watched.push(Object.assign(informer, { kind, apiVersion: `${GROUP}/${version}` }));
    runners.push(
      runInformer(plural, informer, o.log, {
        ...(o.backoff ? { backoff: o.backoff } : {}),
        onConnectionChange: (connected) => o.onConnectionChange?.(plural, connected),
      }),
    );
  }

  return {
    hasSynced: () => discovered && runners.every((r) => r.hasSynced()),
    lastError: () => failure ?? runners.map((r) => r.lastError()).find((e) => e !== undefined),
    async start() {
      stopped = false;
      await discover();
      await Promise.all(runners.map((r) => r.start()));
      schedule();
    },
    async stop() {
      stopped = true;
      await Promise.all([...runners.map((r) => r.stop()), ...[...params.values()].map((p) => p.runner?.stop())]);
      params.clear();
    },
  };
}
