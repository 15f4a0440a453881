/**
 * The watch of one paramRef query (native-policy-watcher.ts), kept within the gateway's bounds (param-bounds.ts):
 * its list is read in pages and weighed after each one (paged-list.ts), every add and update through the watch is
 * weighed before the next event. Past a bound the query is "over its bound": its informer and cache are dropped,
 * a warning is logged once, the bindings reading it are told why (`paramsNow()`), and it is listed again after a
 * backoff that doubles up to its maximum, until the objects fit again.
 */
import type {
  Informer,
  KubernetesListObject,
  KubernetesObject,
  KubernetesObjectApi,
  ObjectCache,
} from '@kubernetes/client-node';
import type { ParamQuery } from '../native-policy/cluster-policies.js';
import type { Logger } from '../base/log.js';
import { runInformer, type BackoffOptions, type InformerRunner } from './informer-runner.js';
import { listInPages, type FetchPage, type PagedList } from './paged-list.js';
import { objectBytes, overBoundError, type OverBound, type QueryTally } from './param-bounds.js';

export type ParamInformer = Informer<KubernetesObject> & ObjectCache<KubernetesObject>;

export interface ParamWatchOptions {
  /** For logs: the informer's name. */
  readonly name: string;
  /** The query in words (`of v1 ConfigMap selected by …`), for the bindings' error. */
  readonly params: string;
  readonly listPage: FetchPage<KubernetesObject>;
  /** A new informer whose lists are `list` (a fresh one each time: dropping it drops its cache). */
  readonly informer: (list: () => Promise<KubernetesListObject<KubernetesObject>>) => ParamInformer;
  /** This query's share of the process's ledger. */
  readonly tally: QueryTally;
  readonly log: Logger;
  readonly backoff?: BackoffOptions;
  /** Told when what the query holds, or whether it is over its bound, changed. */
  readonly onChange: () => void;
}

/** What a query holds now: its objects, why it holds none (over its bound), or nothing read yet. */
export type ParamsNow = readonly KubernetesObject[] | { readonly error: string } | undefined;

export interface ParamWatch {
  paramsNow(): ParamsNow;
  /** True while the query is over its bound. */
  overBound(): boolean;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Thrown by the list of a query over its bound: its informer is already dropped, so nobody retries it. */
class OverBoundError extends Error {}

/** The pages of a query's objects: `namespace` is the query's for a namespaced kind, else undefined. */
export function paramPages(
  objectsApi: KubernetesObjectApi,
  query: ParamQuery,
  namespace: string | undefined,
): FetchPage<KubernetesObject> {
  const { apiVersion, kind } = query.paramKind;
  return (limit, token) =>
    objectsApi.list<KubernetesObject>(
      apiVersion,
      kind,
      namespace,
      undefined,
      undefined,
      undefined,
      query.fieldSelector,
      query.labelSelector,
      limit,
      token,
    );
}

/** A query's list, read in pages and weighed after each against its share of the ledger (not yet kept in it). */
export async function listWithin(
  tally: QueryTally,
  fetchPage: FetchPage<KubernetesObject>,
): Promise<PagedList<KubernetesObject, OverBound>> {
  let objects = 0;
  let bytes = 0;
  return listInPages(fetchPage, (page) => {
    objects += page.length;
    for (const object of page) bytes += objectBytes(object);
    return tally.fits({ objects, bytes });
  });
}

export const idOf = (o: KubernetesObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

export function createParamWatch(o: ParamWatchOptions): ParamWatch {
  const initialMs = o.backoff?.initialMs ?? 500;
  const maxMs = o.backoff?.maxMs ?? 30_000;
  let delay = initialMs;
  let current: { readonly informer: ParamInformer; readonly runner: InformerRunner } | undefined;
  let over: string | undefined;
  let stopped = true;
  let timer: NodeJS.Timeout | undefined;

  function goOver(bound: OverBound): void {
    if (stopped) return;
    const dropped = current;
    current = undefined;
    void dropped?.runner.stop();
    o.tally.clear();
    if (over === undefined)
      o.log.warn(
        { params: o.params, bound: `kube.policyParams.${bound.field}`, limit: bound.limit, retryInMs: delay },
        'params over the gateway’s bound: dropped; the bindings reading them fail until they fit',
      );
    over = overBoundError(o.params, bound);
    o.onChange();
    clearTimeout(timer);
    timer = setTimeout(() => void connect(), delay);
    timer.unref();
    delay = Math.min(delay * 2, maxMs);
  }

  /** The list, weighed page by page against what the rest of the process holds. */
  async function list(): Promise<KubernetesListObject<KubernetesObject>> {
    const read = await listWithin(o.tally, o.listPage);
    if ('refused' in read) {
      goOver(read.refused);
      throw new OverBoundError(overBoundError(o.params, read.refused));
    }
    if (over !== undefined) o.log.info({ params: o.params }, 'params fit the gateway’s bound again');
    over = undefined;
    delay = initialMs;
    o.onChange();
    return read.list;
  }

  async function connect(): Promise<void> {
    if (stopped) return;
    const informer = o.informer(list);
    const runner = runInformer(o.name, informer, o.log, o.backoff ? { backoff: o.backoff } : {});
    const mine = { informer, runner };
    current = mine;
    // A dropped informer may still deliver the rest of a list it was applying: only the current one counts.
    const weigh = (object: KubernetesObject) => {
      if (current !== mine) return;
      const bound = o.tally.set(idOf(object), objectBytes(object));
      if (bound) goOver(bound);
      else o.onChange();
    };
    informer.on('add', weigh);
    informer.on('update', weigh);
    informer.on('delete', (object: KubernetesObject) => {
      if (current !== mine) return;
      o.tally.delete(idOf(object));
      o.onChange();
    });
    await runner.start();
    if (current === mine) o.onChange();
  }

  return {
    paramsNow: () => (over !== undefined ? { error: over } : current?.informer.list()),
    overBound: () => over !== undefined,
    async start() {
      stopped = false;
      await connect();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      const dropped = current;
      current = undefined;
      o.tally.clear();
      await dropped?.runner.stop();
    },
  };
}
