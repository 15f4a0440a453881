import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import pino from 'pino';
import { buildPluginSteps, createChain } from '../../../server/chain/chain.js';
import { createPluginRegistry, type AnyPlugin } from '../../../server/chain/plugin-registry.js';
import { parseConfigText } from '../../../server/config/load.js';
import { createMetrics } from '../../../server/metrics/metrics.js';
import { allow, definePlugin } from '../../../server/plugin-api/index.js';
import { createChainForConfig } from '../../../server/providers/configured-chain.js';

const everything = { rules: [{ operations: ['*' as const], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] };
const mutator = definePlugin({ name: 'mutator', match: everything, setup: () => ({ mutate: () => undefined }) });
const checker = definePlugin({ name: 'checker', match: everything, setup: () => ({ validate: () => allow() }) });
const plugins: AnyPlugin[] = [mutator, checker];

function chainFrom(yaml: string) {
  const config = parseConfigText(yaml, 'gateway.yaml', '/');
  return createChain(buildPluginSteps(config.chain, createPluginRegistry(plugins), config.file));
}

/** Each level of the whole mutate phase, as step names. */
const levels = (yaml: string, failurePolicy?: 'Fail' | 'Ignore') =>
  chainFrom(yaml)
    .planOf(failurePolicy)
    .levels.map((level) => level.map((s) => s.name));

describe('the mutate phase in levels', () => {
  it('runs steps that declare disjoint lanes side by side, and says so in the chain order line', () => {
    const chain = chainFrom(`
chain:
  - { plugin: mutator, name: team, supplies: [/metadata/labels/team] }
  - { plugin: mutator, name: cost, supplies: [/metadata/annotations/cost] }
  - { plugin: mutator, name: limits, supplies: ['/spec/containers/*/resources'] }
`);
    assert.equal(chain.summary(), 'mutate=[{team,cost,limits}] validate=[]');
    assert.deepEqual(
      chain.describe().mutate.map((s) => [(s as { name: string }).name, (s as { level: number }).level]),
      [
        ['team', 0],
        ['cost', 0],
        ['limits', 0],
      ],
    );
  });

  it('keeps a step that declares nothing a barrier: after everything before it, before everything after', () => {
    assert.deepEqual(
      levels(`
chain:
  - { plugin: mutator, name: a, supplies: [/metadata/labels/a] }
  - { plugin: mutator, name: b, supplies: [/metadata/labels/b] }
  - { plugin: mutator, name: plain }
  - { plugin: mutator, name: c, supplies: [/metadata/labels/c] }
  - { plugin: mutator, name: d, supplies: [/metadata/labels/d] }
`),
      [['a', 'b'], ['plain'], ['c', 'd']],
    );
  });

  describe('orders a declared step after an earlier one', () => {
    const cases: ReadonlyArray<[string, string]> = [
      ['that supplies what it reads', '{ supplies: [/metadata/labels/a] }, { dependsOn: [/metadata/labels] }'],
      ['whose supplies overlap its own', '{ supplies: [/metadata/labels] }, { supplies: [/metadata/labels/b] }'],
      ['that reads what it supplies', '{ dependsOn: [/spec], supplies: [/x] }, { supplies: [/spec/replicas] }'],
      ['that it names', '{ supplies: [/a] }, { supplies: [/b], dependsOn: [first] }'],
    ];
    for (const [why, pair] of cases) {
      it(why, () => {
        const [first, second] = pair.split('}, {').map((s) => s.replace(/^{ ?| ?}$/g, ''));
        assert.deepEqual(
          levels(`
chain:
  - { plugin: mutator, name: first, ${first} }
  - { plugin: mutator, name: second, ${second} }
`),
          [['first'], ['second']],
        );
      });
    }
  });

  it('makes a level of consecutive steps: one that must follow a step of the level starts the next', () => {
    assert.deepEqual(
      levels(`
chain:
  - { plugin: mutator, name: a, supplies: [/metadata/labels/a] }
  - { plugin: mutator, name: b, supplies: [/metadata/labels/b] }
  - { plugin: mutator, name: c, supplies: [/metadata/labels/c], dependsOn: [/metadata/labels/a] }
  - { plugin: mutator, name: d, supplies: [/metadata/labels/d], dependsOn: [c] }
  - { plugin: mutator, name: e, supplies: [/metadata/labels/e] }
`),
      // e could have started with a and b; it joins d instead, so that what the steps report (a denial, the
      // warnings) comes in the chain's order.
      [['a', 'b'], ['c'], ['d', 'e']],
    );
  });

  it('plans each failure policy route among its own steps', () => {
    const yaml = `
chain:
  - { plugin: mutator, name: a, supplies: [/metadata/labels/a], failurePolicy: Ignore }
  - { plugin: mutator, name: b, supplies: [/metadata/labels/b] }
  - { plugin: mutator, name: c, supplies: [/metadata/labels/c], failurePolicy: Ignore }
`;
    assert.deepEqual(levels(yaml, 'Ignore'), [['a', 'c']]);
    assert.deepEqual(levels(yaml, 'Fail'), [['b']]);
  });

  it('gives a validating step no level and ignores its declarations', () => {
    const chain = chainFrom('chain: [{ plugin: checker, supplies: [/a] }]');
    assert.deepEqual(chain.describe().validate, [
      {
        name: 'checker',
        source: 'plugin',
        plugin: 'checker',
        phase: 'validate',
        order: 10,
        description: undefined,
        mode: 'enforce',
        failurePolicy: 'Fail',
        timeoutSeconds: 10,
        sideEffects: 'None',
        reinvocationPolicy: 'Never',
        match: everything,
      },
    ]);
  });

  describe('declarations that cannot be ordered', () => {
    const cases: ReadonlyArray<[string, string, string]> = [
      [
        'a step that names itself',
        '{ plugin: mutator, name: a, supplies: [/a], dependsOn: [a] }',
        'a: dependsOn names itself',
      ],
      [
        'a step that names a later one',
        '{ plugin: mutator, name: a, supplies: [/a], dependsOn: [b] }, { plugin: mutator, name: b, supplies: [/b] }',
        "a: dependsOn names b, which runs after it in the chain (a cycle against the chain's order: move b before a, or drop the name)",
      ],
      [
        'a name that is no mutating step',
        '{ plugin: mutator, name: a, supplies: [/a] }, { plugin: mutator, name: b, supplies: [/b], dependsOn: [checker] }, { plugin: checker }',
        'b: dependsOn names "checker", which is not a mutating step of the chain',
      ],
      [
        'a misspelt name',
        '{ plugin: mutator, name: labeller, supplies: [/a] }, { plugin: mutator, name: b, supplies: [/b], dependsOn: [labeler] }',
        'b: dependsOn names "labeler", which is not a mutating step of the chain (did you mean "labeller"?)',
      ],
    ];
    for (const [what, entries, message] of cases) {
      it(`sets aside ${what}: the step runs as a barrier, and the problem is told`, () => {
        const chain = chainFrom(`chain: [${entries}]`);
        assert.deepEqual(chain.describe().problems, [message]);
        assert.ok(chain.planOf().levels.every((level) => level.length === 1));
      });
    }

    it('sets aside two steps of one order whose supplies overlap: nothing says which writes first', () => {
      const steps = chainFrom(`
chain:
  - { plugin: mutator, name: a, supplies: [/metadata/labels] }
  - { plugin: mutator, name: b, supplies: [/metadata/labels/team] }
  - { plugin: mutator, name: c, supplies: [/spec] }
`).steps.map((s) => ({ ...s, order: 5 }));
      const chain = createChain(steps);
      assert.deepEqual(chain.describe().problems, [
        "a and b both supply /metadata/labels / /metadata/labels/team and have the same order (5), so nothing says which writes first: give them different orders, or name one in the other's dependsOn",
      ]);
      assert.deepEqual(
        chain.planOf().levels.map((level) => level.map((s) => s.name)),
        [['a'], ['b'], ['c']],
      );
    });

    it('refuses them at start as a config error naming the entry, the field and its line', async () => {
      const yaml = `chain:
  - plugin: mutator
    name: a
    supplies: [/a]
    dependsOn: [b]
  - { plugin: mutator, name: b, supplies: [/b] }
`;
      const config = parseConfigText(yaml, 'gateway.yaml', '/');
      await assert.rejects(
        createChainForConfig(config, plugins, {
          metrics: createMetrics(new Registry(), { defaultMetrics: false }),
          log: pino({ level: 'silent' }),
          onChain: () => undefined,
        }),
        {
          name: 'ConfigError',
          message:
            "gateway.yaml:5:5: chain[0].dependsOn: a: dependsOn names b, which runs after it in the chain (a cycle against the chain's order: move b before a, or drop the name)",
        },
      );
    });
  });

  describe('reading the declarations', () => {
    const refusals: ReadonlyArray<[string, string, string]> = [
      [
        'a pointer without its leading /',
        'supplies: [metadata/labels]',
        'chain[0].supplies[0]: expected a JSON pointer below the root (/metadata/labels/team, * for any one segment), got "metadata/labels"',
      ],
      [
        'the whole object',
        'supplies: [/]',
        'chain[0].supplies[0]: expected a JSON pointer below the root (/metadata/labels/team, * for any one segment), got "/"',
      ],
      [
        'a bad escape',
        'dependsOn: [/a~2b]',
        'chain[0].dependsOn[0]: expected a JSON pointer below the root (/metadata/labels/team, * for any one segment) or a step name, got "/a~2b"',
      ],
      ['a list that is not one', 'supplies: /a', 'chain[0].supplies: expected a list, got "/a"'],
    ];
    for (const [what, field, message] of refusals) {
      it(`refuses ${what}`, () => {
        assert.throws(
          () => chainFrom(`chain: [{ plugin: mutator, ${field} }]`),
          (err: Error) => {
            assert.equal(err.message.replace(/^gateway\.yaml(:\d+:\d+)?: /, ''), message);
            return true;
          },
        );
      });
    }
  });
});
