import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { createLogger } from '../../../server/base/log.js';
import { buildPluginSteps, createChain } from '../../../server/chain/chain.js';
import { createPluginRegistry } from '../../../server/chain/plugin-registry.js';
import { ShadowRunner, disagreementOf } from '../../../server/dispatch/shadow.js';
import type { ShadowStepTrace } from '../../../server/trace/step-report.js';
import { parseConfigText } from '../../../server/config/load.js';
import { createMetrics } from '../../../server/metrics/metrics.js';
import { allow, definePlugin, deny } from '../../../server/plugin-api/index.js';
import { podCreate, requestOf } from '../../fixtures/reviews/index.js';
import { eventually } from '../../helpers/wait.js';

const everything = { rules: [{ operations: ['*' as const], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] };

describe('disagreementOf()', () => {
  const patch = [{ op: 'add' as const, path: '/metadata/labels/a', value: '1' }];
  it('is would_deny, would_allow or patch_differs, and nothing when the shadow step agrees or failed', () => {
    const allowed = { allowed: true as const, patch };
    const denied = { allowed: false as const, message: 'no', code: 403 };
    assert.deepEqual(
      [
        disagreementOf('denied', allowed, denied),
        disagreementOf('denied', denied, denied),
        disagreementOf('allowed', denied, { allowed: true }),
        disagreementOf('allowed', allowed, { allowed: true }),
        disagreementOf('patched', allowed, { allowed: true, patch }),
        disagreementOf('patched', { allowed: true }, { allowed: true, patch }),
        disagreementOf('error', allowed, denied),
        disagreementOf('timeout', denied, denied),
      ],
      [
        { kind: 'would_deny' },
        undefined,
        { kind: 'would_allow' },
        undefined,
        undefined,
        { kind: 'patch_differs', patch },
        undefined,
        undefined,
      ],
    );
  });
});

describe('ShadowRunner', () => {
  it('runs after the answer, as if it enforced, and drops a call over its bound without waiting', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held = definePlugin({
      name: 'held',
      match: everything,
      setup: () => ({
        async validate() {
          await gate;
          return deny('held says no');
        },
      }),
    });
    const config = parseConfigText('chain: [{ plugin: held, shadow: true, mode: warn }]', 'gateway.yaml', '/');
    const chain = createChain(buildPluginSteps(config.chain, createPluginRegistry([held]), config.file));
    assert.deepEqual(chain.stepsOf('validate'), []);
    const steps = chain.shadowOf('validate');
    assert.deepEqual(
      steps.map((s) => s.name),
      ['held'],
    );
    const metrics = createMetrics(new Registry(), { defaultMetrics: false });
    const runner = new ShadowRunner({
      metrics,
      log: createLogger('silent'),
      now: () => performance.now(),
      maxCalls: 1,
    });
    const first: ShadowStepTrace[] = [];
    const second: ShadowStepTrace[] = [];
    const request = requestOf(podCreate());
    const run = { request, phase: 'validate' as const, steps, decision: allow(), namespaceLabels: undefined };
    runner.run({ ...run, traced: first });
    runner.run({ ...run, traced: second });
    assert.deepEqual(second, [{ step: 'held', outcome: 'dropped' }]);
    assert.equal(first.length, 0, 'nothing has run yet: the run starts on a later turn');
    release();
    await eventually('the held shadow step finished', () => first.length === 1);
    const { ms, ...rest } = first[0]!;
    assert.equal(typeof ms, 'number');
    assert.deepEqual(rest, {
      step: 'held',
      outcome: 'denied',
      disagreement: 'would_deny',
      message: 'held: held says no',
    });
    const series = async (name: 'shadowCalls' | 'shadowDisagreements') =>
      (await metrics[name].get()).values.map((v) => [v.labels, v.value]);
    assert.deepEqual(await series('shadowCalls'), [
      [{ step: 'held', outcome: 'dropped' }, 1],
      [{ step: 'held', outcome: 'denied' }, 1],
    ]);
    assert.deepEqual(await series('shadowDisagreements'), [[{ step: 'held', kind: 'would_deny' }, 1]]);
    // The bound is free again.
    const third: ShadowStepTrace[] = [];
    runner.run({ ...run, traced: third });
    await eventually('the third call ran', () => third.length === 1);
    assert.equal(third[0]!.outcome, 'denied');
  });

  it('keeps its trace entry small whatever the step says or writes: a long message cut, ten operations', async () => {
    const long = `${'k'.repeat(5000)}`;
    const noisy = definePlugin({
      name: 'noisy',
      match: everything,
      setup: () => ({
        mutate({ object }) {
          const labels = ((object.metadata ??= {}).labels ??= {});
          for (let i = 0; i < 25; i++) labels[`${long}${i}`] = 'x';
        },
        validate: () => deny(long),
      }),
    });
    const config = parseConfigText('chain: [{ plugin: noisy, shadow: true }]', 'gateway.yaml', '/');
    const chain = createChain(buildPluginSteps(config.chain, createPluginRegistry([noisy]), config.file));
    const runner = new ShadowRunner({
      metrics: createMetrics(new Registry(), { defaultMetrics: false }),
      log: createLogger('silent'),
      now: () => performance.now(),
    });
    const entries: Record<string, ShadowStepTrace[]> = { mutate: [], validate: [] };
    for (const phase of ['mutate', 'validate'] as const) {
      const steps = chain.shadowOf(phase);
      const run = { request: requestOf(podCreate()), phase, steps, decision: allow(), namespaceLabels: undefined };
      runner.run({ ...run, traced: entries[phase] });
    }
    await eventually('both shadow calls ran', () => entries.mutate!.length + entries.validate!.length === 2);
    const [mutated] = entries.mutate!;
    const [validated] = entries.validate!;
    const cut = (text: string, max: number) => `${text.slice(0, max)}… (${text.length - max} more characters)`;
    assert.deepEqual(
      { patch: mutated!.patch, omitted: mutated!.patchOpsOmitted, message: validated!.message },
      {
        patch: Array.from({ length: 10 }, (_, i) => ({ op: 'add', path: cut(`/metadata/labels/${long}${i}`, 256) })),
        omitted: 15,
        message: cut(`noisy: ${cut(long, 4096)}`, 1024),
      },
    );
  });
});
