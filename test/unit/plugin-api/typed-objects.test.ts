/**
 * The types a plugin author gets. Most of what is checked here is checked by the compiler (`npm run
 * typecheck` covers test/): each `@ts-expect-error` fails the type-check if the mistake it marks starts to
 * compile. The runtime part runs the same plugins through the gateway, so the types describe what arrives.
 */
import assert from 'node:assert/strict';
import { allow, definePlugin, deny, on, podSpecResources, type KubeObject } from '../../../server/plugin-api/index.js';
import { reviewOf, runPlugin } from '../../../server/plugin-testing/index.js';

/** A Pod's fields type-check, every one of them optional. */
const podNames = definePlugin({
  name: 'pod-names',
  match: on('pods').create(),
  setup: () => ({
    validate(ctx) {
      const names: string[] = [];
      for (const container of ctx.object?.spec?.containers ?? []) names.push(container.name ?? '(unnamed)');
      // @ts-expect-error a container's name may be missing: mutating admission runs before validation
      const first: string = ctx.object?.spec?.containers?.[0]?.name;
      // @ts-expect-error a Pod has no spec.replicas
      void ctx.object?.spec?.replicas;
      void first;
      return names.includes('debug') ? deny('no container may be called debug') : allow();
    },
  }),
});

/** Timestamps are strings, as in the JSON the apiserver sends (the client library's Date is not). */
const created = definePlugin({
  name: 'created',
  match: on('configmaps').update(),
  setup: () => ({
    validate(ctx) {
      const stamp: string | undefined = ctx.oldObject?.metadata?.creationTimestamp;
      return stamp?.startsWith('2020') ? deny(`created in 2020 (${stamp})`) : allow();
    },
  }),
});

/** Two kinds: the fields both have type-check on the union. */
const replicas = definePlugin({
  name: 'replicas',
  match: on('deployments', 'statefulsets').create(),
  settings: (raw) => Number(raw),
  setup: (max) => ({
    mutate(ctx) {
      const spec = (ctx.object.spec ??= {});
      if ((spec.replicas ?? 1) > max) spec.replicas = max;
      // @ts-expect-error replicas is a number
      spec.replicas = 'many';
    },
  }),
});

/** A custom resource is a KubeObject: only apiVersion, kind and metadata are typed. */
const widgets = definePlugin({
  name: 'widgets',
  match: on('widgets').groups('acme.io').create(),
  setup: () => ({
    validate(ctx) {
      const object: Readonly<KubeObject> | undefined = ctx.object;
      // @ts-expect-error an unknown field is unknown until narrowed
      const spec: { size?: number } | undefined = object?.spec;
      void spec;
      return allow();
    },
  }),
});

/** Workloads and Pods alike: the union of every kind that carries a PodSpec. */
const workloads = definePlugin({
  name: 'workloads',
  match: podSpecResources().create(),
  setup: () => ({
    validate(ctx) {
      const kind = ctx.object?.kind;
      return kind === 'Pod' || kind === 'Deployment' ? allow() : allow();
    },
  }),
});

describe('typed objects for plugins', () => {
  it('reads a Pod through its type', async () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'debug' }] } };
    const result = await runPlugin(podNames, reviewOf(pod));
    assert.deepEqual(result.denial, { message: 'pod-names: no container may be called debug', code: 403 });
  });

  it('gets a timestamp as the string the apiserver sent', async () => {
    const old = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', creationTimestamp: '2020-05-01T00:00:00Z' },
    };
    const result = await runPlugin(created, reviewOf(old, 'UPDATE', { oldObject: old }));
    assert.deepEqual(result.denial, { message: 'created: created in 2020 (2020-05-01T00:00:00Z)', code: 403 });
  });

  it('edits a field the kinds share, and answers with the patch', async () => {
    const set = { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 's' }, spec: { replicas: 9 } };
    // The plugin's last write puts a string there, which the types refuse; at run time it is what gets patched.
    const result = await runPlugin(replicas, reviewOf(set), { settings: 3 });
    assert.deepEqual(result.patch, [{ op: 'replace', path: '/spec/replicas', value: 'many' }]);
  });

  it('gives a custom resource and a workload the types above, and runs them', async () => {
    const widget = { apiVersion: 'acme.io/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { size: 3 } };
    assert.equal((await runPlugin(widgets, reviewOf(widget))).allowed, true);
    const job = { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j' } };
    assert.equal((await runPlugin(workloads, reviewOf(job))).allowed, true);
  });
});
