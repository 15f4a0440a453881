/**
 * One paramRef query's watch against the gateway's bounds, on client-node's own ListWatch (its cache is what is
 * bounded) with a scripted list and a watch whose events the test sends.
 */
import assert from 'node:assert/strict';
import { ListWatch, type KubernetesListObject, type KubernetesObject, type Watch } from '@kubernetes/client-node';
import { createLogger } from '../../../server/base/log.js';
import { createParamLedger } from '../../../server/kube/param-bounds.js';
import { createParamWatch, type ParamWatch } from '../../../server/kube/param-watch.js';
import { eventually } from '../../helpers/wait.js';

const BOUNDS = { maxObjects: 3, maxBytes: 4096, maxTotalObjects: 10, maxTotalBytes: 8192 };

const configMap = (name: string, resourceVersion = '1'): KubernetesObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'team-a', resourceVersion, labels: { team: 'a' } },
});

type Handler = (phase: string, object: KubernetesObject, watchObj?: unknown) => void;

/** The cluster as the watch sees it: the objects a list finds, the pages asked, and the open watch's events. */
function scriptedCluster() {
  const state = {
    objects: [] as KubernetesObject[],
    pages: 0,
    handler: undefined as Handler | undefined,
    aborted: 0,
  };
  const watch = {
    watch: (_path: string, _query: unknown, handler: Handler) => {
      state.handler = handler;
      return Promise.resolve({
        abort: () => {
          state.aborted += 1;
        },
      });
    },
  } as unknown as Watch;
  const listPage = (limit: number, token: string | undefined): Promise<KubernetesListObject<KubernetesObject>> => {
    state.pages += 1;
    const from = token ? Number(token) : 0;
    const next = from + limit < state.objects.length ? String(from + limit) : undefined;
    return Promise.resolve({
      metadata: { resourceVersion: '10', ...(next ? { _continue: next } : {}) },
      items: state.objects.slice(from, from + limit),
    });
  };
  return { state, watch, listPage };
}

function start(cluster: ReturnType<typeof scriptedCluster>) {
  const lines: string[] = [];
  const log = createLogger('info', { write: (line: string) => void lines.push(line) });
  const ledger = createParamLedger(BOUNDS);
  let changes = 0;
  const watch: ParamWatch = createParamWatch({
    name: 'params v1 ConfigMap',
    params: 'of v1 ConfigMap selected by "team=a"',
    listPage: cluster.listPage,
    informer: (list) => new ListWatch('/api/v1/configmaps', cluster.watch, list, false, 'team=a'),
    tally: ledger.query(),
    log,
    backoff: { initialMs: 5, maxMs: 20 },
    onChange: () => void (changes += 1),
  });
  const warnings = () =>
    lines.map((l) => JSON.parse(l) as { level: string; msg: string }).filter((l) => l.level === 'warn');
  return { watch, ledger, warnings, changes: () => changes };
}

const names = (now: ReturnType<ParamWatch['paramsNow']>) =>
  now && !('error' in now) ? now.map((o) => o.metadata?.name).sort() : now;

const ERROR = {
  error:
    'the params of v1 ConfigMap selected by "team=a" exceed the gateway\'s bound (more than 3 objects, kube.policyParams.maxObjects): none are read until they fit',
};

describe('createParamWatch(): one paramRef query watched within the gateway’s bounds', function () {
  let running: ParamWatch | undefined;
  afterEach(async () => {
    await running?.stop();
  });

  it('holds what a list that fits finds, and follows the watch', async function () {
    const cluster = scriptedCluster();
    cluster.state.objects = [configMap('a'), configMap('b')];
    const { watch, ledger } = start(cluster);
    running = watch;
    await watch.start();
    assert.deepEqual(names(watch.paramsNow()), ['a', 'b']);
    cluster.state.handler!('ADDED', configMap('c'));
    cluster.state.handler!('DELETED', configMap('a'));
    assert.deepEqual(names(watch.paramsNow()), ['b', 'c']);
    assert.equal(ledger.held().objects, 2);
    assert.equal(watch.overBound(), false);
  });

  it('gives up a list past the bound after its first page, holds nothing, warns once, and relists until it fits', async function () {
    const cluster = scriptedCluster();
    cluster.state.objects = Array.from({ length: 500 }, (_, i) => configMap(`p${i}`));
    const { watch, ledger, warnings } = start(cluster);
    running = watch;
    await watch.start();
    assert.equal(cluster.state.pages, 1);
    assert.deepEqual(watch.paramsNow(), ERROR);
    assert.equal(watch.overBound(), true);
    assert.deepEqual(ledger.held(), { objects: 0, bytes: 0 });
    // Relisted after its backoff, still too many: the same error, no second warning.
    await eventually('a second list', () => cluster.state.pages >= 3);
    assert.deepEqual(watch.paramsNow(), ERROR);
    assert.deepEqual(
      warnings().map((w) => w.msg),
      ['params over the gateway’s bound: dropped; the bindings reading them fail until they fit'],
    );
    cluster.state.objects = [configMap('a'), configMap('b'), configMap('c')];
    await eventually('the params read again', () => Array.isArray(watch.paramsNow()));
    assert.deepEqual(names(watch.paramsNow()), ['a', 'b', 'c']);
    assert.equal(watch.overBound(), false);
    assert.equal(ledger.held().objects, 3);
  });

  it('drops its cache and stops watching when an add through the watch goes past the bound, then recovers', async function () {
    const cluster = scriptedCluster();
    cluster.state.objects = [configMap('a'), configMap('b'), configMap('c')];
    const { watch, ledger, warnings } = start(cluster);
    running = watch;
    await watch.start();
    assert.deepEqual(names(watch.paramsNow()), ['a', 'b', 'c']);
    const handler = cluster.state.handler!;
    handler('ADDED', configMap('d'));
    assert.deepEqual(watch.paramsNow(), ERROR);
    assert.deepEqual(ledger.held(), { objects: 0, bytes: 0 });
    assert.equal(cluster.state.aborted, 1);
    // Events the dropped watch still delivers are not counted.
    handler('ADDED', configMap('e'));
    assert.deepEqual(ledger.held(), { objects: 0, bytes: 0 });
    assert.equal(warnings().length, 1);
    cluster.state.objects = [configMap('a'), configMap('d')];
    await eventually('the params read again', () => Array.isArray(watch.paramsNow()));
    assert.deepEqual(names(watch.paramsNow()), ['a', 'd']);
    assert.deepEqual(ledger.held().objects, 2);
  });

  it('notices an update that makes an object too large', async function () {
    const cluster = scriptedCluster();
    cluster.state.objects = [configMap('a')];
    const { watch } = start(cluster);
    running = watch;
    await watch.start();
    cluster.state.handler!('MODIFIED', { ...configMap('a', '2'), data: { big: 'x'.repeat(5000) } } as KubernetesObject);
    assert.match(JSON.stringify(watch.paramsNow()), /more than 4096 bytes, kube\.policyParams\.maxBytes/);
  });
});
