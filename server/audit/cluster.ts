/**
 * The audit's calls to the apiserver, through client-node's typed APIs, each with the audit's deadline as its
 * signal: discovery (`ApisApi`, `CoreV1Api`, `CustomObjectsApi.getAPIResources`), listing pages of any resource
 * (`CustomObjectsApi`, which answers the objects as the apiserver sent them: the wire shape a webhook gets),
 * namespace labels (`CoreV1Api.readNamespace`, cached for the run), and the reports (server-side apply with
 * field manager admission-gateway; delete).
 *
 * client-node is imported on the first call, not with this module: the command line loads this module for
 * every command, serve included, and the library is tens of MiB for a process that talks to no cluster.
 */
import type { ConfigurationOptions, CoreV1Api, KubeConfig, ObservableMiddleware } from '@kubernetes/client-node';
import type { KubeObject } from '../admission/types.js';
import { namespaceForPolicies } from '../admission/namespace-object.js';
import { errorMessage } from '../base/errors.js';
import type { Labels } from '../steps/label-selector.js';
import type { NamespaceLabelSource } from '../dispatch/reviewer.js';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../base/managed-by.js';
import { REPORT_GROUP, REPORT_NAME, REPORT_VERSION, type PolicyReport } from './reports.js';
import type { AuditTarget, DiscoveredGroup, DiscoveredResource } from './targets.js';

export interface ListedPage {
  readonly items: readonly KubeObject[];
  /** The token of the next page, absent on the last. */
  readonly continue?: string;
}

/** Where a report is: its namespace, or none for the ClusterPolicyReport. */
export interface ReportPlace {
  readonly namespace: string | undefined;
}

export interface AuditCluster {
  groups(signal: AbortSignal): Promise<DiscoveredGroup[]>;
  resources(group: string, version: string, signal: AbortSignal): Promise<DiscoveredResource[]>;
  listPage(target: AuditTarget, limit: number, token: string | undefined, signal: AbortSignal): Promise<ListedPage>;
  applyReport(report: PolicyReport, signal: AbortSignal): Promise<void>;
  /** The reports the gateway wrote (label app.kubernetes.io/managed-by=admission-gateway). */
  writtenReports(signal: AbortSignal): Promise<ReportPlace[]>;
  deleteReport(place: ReportPlace, signal: AbortSignal): Promise<void>;
}

/** The HTTP status of a client-node ApiException, if `err` is one. */
export const statusOf = (err: unknown): number | undefined => {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
};

/** `HTTP 403: <the apiserver's message>` for an ApiException, else the error's first line. */
export function apiErrorMessage(err: unknown): string {
  const code = statusOf(err);
  if (code === undefined) return errorMessage(err).split('\n', 1)[0]!;
  const body = (err as { body?: unknown }).body;
  let detail = '';
  try {
    const parsed = typeof body === 'string' ? (JSON.parse(body) as { message?: unknown }) : undefined;
    if (typeof parsed?.message === 'string') detail = parsed.message;
  } catch {
    detail = String(body).slice(0, 200);
  }
  return `HTTP ${code}${detail ? `: ${detail}` : ''}`;
}

/**
 * Options for one call: the signal, and a URL rewrite for the core group. `CustomObjectsApi` builds
 * `/apis/{group}/{version}/…` paths; the core group is served under `/api/v1`, so its empty group's `/apis//`
 * becomes `/api/`.
 */
function callOptions(kube: KubeClient, signal: AbortSignal, contentType?: string): ConfigurationOptions {
  const { Observable, setHeaderOptions } = kube;
  const middleware: ObservableMiddleware = {
    pre: (request) => {
      request.setSignal(signal);
      const url = request.getUrl();
      if (url.includes('/apis//')) request.setUrl(url.replace('/apis//', '/api/'));
      return new Observable(Promise.resolve(request));
    },
    post: (response) => new Observable(Promise.resolve(response)),
  };
  const options: ConfigurationOptions = { middleware: [middleware], middlewareMergeStrategy: 'append' };
  return contentType ? setHeaderOptions('Content-Type', contentType, options) : options;
}

const REPORTS = { group: REPORT_GROUP, version: REPORT_VERSION };

type KubeClient = typeof import('@kubernetes/client-node');

/** client-node's module, loaded on first use (and then from the module cache). */
const kubeClient = (): Promise<KubeClient> => import('@kubernetes/client-node');

/** The typed APIs the audit calls, and the module they come from. */
function apiClients(kc: KubeConfig, kube: KubeClient) {
  return {
    kube,
    apis: kc.makeApiClient(kube.ApisApi),
    core: kc.makeApiClient(kube.CoreV1Api),
    objects: kc.makeApiClient(kube.CustomObjectsApi),
  };
}

export function createAuditCluster(kc: KubeConfig): AuditCluster {
  let loaded: Promise<ReturnType<typeof apiClients>> | undefined;
  const clients = () => (loaded ??= kubeClient().then((kube) => apiClients(kc, kube)));
  return {
    async groups(signal) {
      const { kube, apis } = await clients();
      const list = await apis.getAPIVersions(callOptions(kube, signal));
      const named = list.groups.map((g) => ({
        name: g.name,
        preferredVersion: g.preferredVersion?.version ?? g.versions[0]?.version ?? '',
        versions: g.versions.map((v) => v.version),
      }));
      return [{ name: '', preferredVersion: 'v1', versions: ['v1'] }, ...named];
    },
    async resources(group, version, signal) {
      const { kube, core, objects } = await clients();
      const list =
        group === ''
          ? await core.getAPIResources(callOptions(kube, signal))
          : await objects.getAPIResources({ group, version }, callOptions(kube, signal));
      return list.resources.map((r) => ({ name: r.name, kind: r.kind, namespaced: r.namespaced, verbs: r.verbs }));
    },
    async listPage(target, limit, token, signal) {
      const { kube, objects } = await clients();
      const page = (await objects.listClusterCustomObject(
        {
          group: target.group,
          version: target.version,
          plural: target.resource,
          limit,
          ...(token ? { _continue: token } : {}),
        },
        callOptions(kube, signal),
      )) as { items?: KubeObject[]; metadata?: { continue?: string } };
      const next = page.metadata?.continue;
      return { items: page.items ?? [], ...(next ? { continue: next } : {}) };
    },
    async applyReport(report, signal) {
      const { kube, objects } = await clients();
      const { name, namespace } = report.metadata;
      const common = { ...REPORTS, name, body: report, fieldManager: REPORT_NAME, force: true };
      const options = callOptions(kube, signal, kube.PatchStrategy.ServerSideApply);
      if (namespace === undefined) {
        await objects.patchClusterCustomObject({ ...common, plural: 'clusterpolicyreports' }, options);
      } else {
        await objects.patchNamespacedCustomObject({ ...common, namespace, plural: 'policyreports' }, options);
      }
    },
    async writtenReports(signal) {
      const { kube, objects } = await clients();
      const labelSelector = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
      const places: ReportPlace[] = [];
      for (const plural of ['policyreports', 'clusterpolicyreports']) {
        const list = (await objects.listClusterCustomObject(
          { ...REPORTS, plural, labelSelector },
          callOptions(kube, signal),
        )) as { items?: { metadata?: { name?: string; namespace?: string } }[] };
        for (const item of list.items ?? []) {
          if (item.metadata?.name === REPORT_NAME) places.push({ namespace: item.metadata.namespace });
        }
      }
      return places;
    },
    async deleteReport({ namespace }, signal) {
      const { kube, objects } = await clients();
      try {
        if (namespace === undefined) {
          await objects.deleteClusterCustomObject(
            { ...REPORTS, plural: 'clusterpolicyreports', name: REPORT_NAME },
            callOptions(kube, signal),
          );
        } else {
          await objects.deleteNamespacedCustomObject(
            { ...REPORTS, plural: 'policyreports', namespace, name: REPORT_NAME },
            callOptions(kube, signal),
          );
        }
      } catch (err) {
        if (statusOf(err) !== 404) throw err;
      }
    },
  };
}

/**
 * Namespace labels for namespaceSelector, and namespaces for `namespaceObject`, from the cluster: one GET per
 * namespace per run (kept as the promise, so concurrent reviews of one namespace share it). A namespace that
 * cannot be read has no labels and is null.
 */
export function namespaceLabelsFromCluster(kc: KubeConfig, signal: AbortSignal): NamespaceLabelSource {
  let core: Promise<{ kube: KubeClient; api: CoreV1Api }> | undefined;
  const cache = new Map<string, Promise<{ labels: Labels; object: KubeObject } | undefined>>();
  const read = (namespace: string) => {
    let found = cache.get(namespace);
    if (!found) {
      core ??= kubeClient().then((kube) => ({ kube, api: kc.makeApiClient(kube.CoreV1Api) }));
      found = core
        .then(({ kube, api }) => api.readNamespace({ name: namespace }, callOptions(kube, signal)))
        .then(
          (ns) => ({ labels: ns.metadata?.labels ?? {}, object: namespaceForPolicies(ns) }),
          () => undefined,
        );
      cache.set(namespace, found);
    }
    return found;
  };
  return {
    labels: (namespace) => read(namespace).then((found) => found?.labels),
    object: (namespace) => read(namespace).then((found) => found?.object),
  };
}
