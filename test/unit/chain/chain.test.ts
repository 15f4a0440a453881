import assert from 'node:assert/strict';
import { buildPluginSteps, createChain } from '../../../server/chain/chain.js';
import { createPluginRegistry, type AnyPlugin } from '../../../server/chain/plugin-registry.js';
import { parseConfigText } from '../../../server/config/load.js';
import { ConfigError, PluginRegistrationError } from '../../../server/base/errors.js';
import { allow, definePlugin, optionalStringList, settingsObject } from '../../../server/plugin-api/index.js';

const everything = { rules: [{ operations: ['*' as const], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] };
const both = definePlugin({
  name: 'both',
  match: everything,
  setup: () => ({ mutate: () => undefined, validate: () => allow() }),
});
const validator = definePlugin({
  name: 'validator',
  match: everything,
  settings: (raw) => {
    const s = settingsObject(raw, ['labels']);
    return { labels: optionalStringList(s, 'labels') ?? [] };
  },
  setup: () => ({ validate: () => allow() }),
});
/** Mutates only when its settings name a label to add; with `idle: true` it has nothing to do at all. */
const optional = definePlugin({
  name: 'optional',
  match: everything,
  settings: (raw) => {
    const s = settingsObject(raw, ['labels', 'idle']);
    return { labels: optionalStringList(s, 'labels') ?? [], idle: s.idle === true };
  },
  setup: ({ labels, idle }) =>
    idle ? {} : { ...(labels.length > 0 ? { mutate: () => undefined } : {}), validate: () => allow() },
});
/** Its setup refuses the settings it was given. */
const picky = definePlugin({
  name: 'picky',
  match: everything,
  setup: () => {
    throw new Error('needs a cluster it cannot reach');
  },
});
const plugins: AnyPlugin[] = [both, validator, optional, picky];

function chainFrom(yaml: string) {
  const config = parseConfigText(yaml, 'gateway.yaml', '/');
  return createChain(buildPluginSteps(config.chain, createPluginRegistry(plugins), config.file));
}

describe('createChain()', () => {
  it('gives each phase its steps in chain order, a plugin with both handlers in both', () => {
    const chain = chainFrom(`
chain:
  - { plugin: validator, name: v-first, failurePolicy: Ignore }
  - { plugin: both }
  - { plugin: validator }
`);
    assert.equal(chain.summary(), 'mutate=[both] validate=[v-first,both,validator]');
    assert.deepEqual(
      chain.stepsOf('validate', 'Ignore').map((s) => s.name),
      ['v-first'],
    );
    assert.deepEqual(
      chain.stepsOf('validate', 'Fail').map((s) => s.name),
      ['both', 'validator'],
    );
    assert.deepEqual(chain.stepsOf('mutate', 'Ignore'), []);
  });

  it('routes a warn or audit step as Ignore whatever its failurePolicy: it never blocks, so its webhook must not', () => {
    const chain = chainFrom(`
chain:
  - { plugin: validator, name: enforced }
  - { plugin: validator, name: warned, mode: warn, failurePolicy: Fail }
  - { plugin: validator, name: audited, mode: audit }
  - { plugin: both, name: both-warned, mode: warn }
`);
    assert.deepEqual(
      chain.stepsOf('validate', 'Fail').map((s) => s.name),
      ['enforced'],
    );
    assert.deepEqual(
      chain.stepsOf('validate', 'Ignore').map((s) => s.name),
      ['warned', 'audited', 'both-warned'],
    );
    assert.deepEqual(
      chain.stepsOf('mutate', 'Ignore').map((s) => s.name),
      ['both-warned'],
    );
    assert.deepEqual(chain.stepsOf('mutate', 'Fail'), []);
  });

  it('gives a plugin no mutate step when its setup returns no mutate for these settings', () => {
    const chain = chainFrom(`
chain:
  - { plugin: optional, name: idle }
  - { plugin: optional, name: busy, settings: { labels: [team] } }
`);
    assert.equal(chain.summary(), 'mutate=[busy] validate=[idle,busy]');
  });

  it('breaks order ties by name', () => {
    const steps = chainFrom('chain: [{ plugin: validator, name: b }, { plugin: validator, name: a }]').steps;
    const reordered = createChain(steps.map((s) => ({ ...s, order: 5 })));
    assert.deepEqual(
      reordered.steps.map((s) => s.name),
      ['a', 'b'],
    );
  });

  it('describes each step for /chain', () => {
    const chain = chainFrom('chain: [{ plugin: validator, mode: warn, timeoutSeconds: 2 }]');
    assert.deepEqual(chain.describe().validate, [
      {
        name: 'validator',
        source: 'plugin',
        plugin: 'validator',
        phase: 'validate',
        order: 10,
        description: undefined,
        mode: 'warn',
        failurePolicy: 'Fail',
        timeoutSeconds: 2,
        sideEffects: 'None',
        reinvocationPolicy: 'Never',
        match: everything,
      },
    ]);
  });

  it("shows an opt-in entry's attach and conflict group in each of its steps, and nothing for the defaults", () => {
    const chain = chainFrom(`
chain:
  - { plugin: both, name: scanner, attach: OptIn, conflictGroup: scanners }
  - { plugin: validator, name: plain, attach: Always }
`);
    const shown = (list: object[]) =>
      list.map((s) => {
        const { name, attach, conflictGroup } = s as { name: string; attach?: string; conflictGroup?: string };
        return { name, attach, conflictGroup };
      });
    assert.deepEqual(shown(chain.describe().mutate), [{ name: 'scanner', attach: 'OptIn', conflictGroup: 'scanners' }]);
    assert.deepEqual(shown(chain.describe().validate), [
      { name: 'scanner', attach: 'OptIn', conflictGroup: 'scanners' },
      { name: 'plain', attach: undefined, conflictGroup: undefined },
    ]);
    assert.deepEqual(
      chain.steps.map((s) => [s.name, s.phase, s.extension, s.attach, s.conflictGroup]),
      [
        ['scanner', 'mutate', 'scanner', 'OptIn', 'scanners'],
        ['scanner', 'validate', 'scanner', 'OptIn', 'scanners'],
        ['plain', 'validate', 'plain', 'Always', undefined],
      ],
    );
  });

  it('indexes its extensions: steps of both phases in order, where they stand, what a review must read', () => {
    const chain = chainFrom(`
chain:
  - { plugin: validator, name: first }
  - { plugin: both, name: scanner, attach: OptIn }
  - plugin: validator
    name: scoped
    conflictGroup: g
    match:
      rules: [{ operations: ["*"], apiGroups: ["*"], apiVersions: ["*"], resources: ["*"] }]
      namespaceSelector: { matchLabels: { env: prod } }
`);
    const { extensions } = chain;
    const scanner = extensions.get('scanner')!;
    assert.deepEqual(
      [scanner.attach, scanner.conflictGroup, scanner.position, scanner.mutates, scanner.needsNamespaceLabels],
      ['OptIn', undefined, 1, true, false],
    );
    assert.deepEqual(
      scanner.steps.map((s) => s.phase),
      ['mutate', 'validate'],
    );
    assert.deepEqual(
      [extensions.get('scoped')!.conflictGroup, extensions.get('scoped')!.needsNamespaceLabels],
      ['g', true],
    );
    assert.equal(extensions.get('nope'), undefined);
    assert.deepEqual(extensions.names, ['first', 'scanner', 'scoped']);
    assert.deepEqual(
      [extensions.usesReferences, extensions.optInMutates, extensions.needsNamespaceLabels],
      [true, true, true],
    );
    const plain = chainFrom('chain: [{ plugin: both }]').extensions;
    assert.deepEqual([plain.usesReferences, plain.optInMutates], [false, false]);
  });

  it('knows which routes need namespace labels', () => {
    const chain = chainFrom(`
chain:
  - plugin: validator
    match:
      rules: [{ operations: ["*"], apiGroups: ["*"], apiVersions: ["*"], resources: ["*"] }]
      namespaceSelector: { matchLabels: { env: prod } }
`);
    assert.equal(chain.needsNamespaceLabels('validate'), true);
    assert.equal(chain.needsNamespaceLabels('mutate'), false);
  });

  it('needs namespace labels for a shadow step whose namespaceSelector reads them, in every selection of its phase', () => {
    const chain = chainFrom(`
chain:
  - plugin: validator
    shadow: true
    match:
      rules: [{ operations: ["*"], apiGroups: ["*"], apiVersions: ["*"], resources: ["*"] }]
      namespaceSelector: { matchLabels: { env: prod } }
`);
    assert.deepEqual(
      [
        chain.needsNamespaceLabels('validate'),
        chain.needsNamespaceLabels('validate', 'Fail'),
        chain.needsNamespaceLabels('validate', 'Ignore'),
        chain.needsNamespaceLabels('mutate'),
      ],
      [true, true, true, false],
    );
  });
});

describe('buildPluginSteps()', () => {
  it('refuses an unknown plugin, listing the known ones', () => {
    assert.throws(() => chainFrom('chain: [{ plugin: defualt-labels }]'), {
      name: 'ConfigError',
      message:
        'gateway.yaml: chain[0].plugin: unknown plugin "defualt-labels" (known: both, optional, picky, validator)',
    });
  });

  it('refuses an entry whose plugin has nothing to do with its settings', () => {
    assert.throws(() => chainFrom('chain: [{ plugin: optional, settings: { idle: true } }]'), {
      name: 'ConfigError',
      message:
        'gateway.yaml: chain[0]: plugin "optional" has nothing to do with these settings (its setup returned neither mutate, validate nor authorize)',
    });
  });

  it('refuses an entry whose plugin cannot be set up, with the reason', () => {
    assert.throws(() => chainFrom('chain: [{ plugin: picky }]'), {
      name: 'ConfigError',
      message: 'gateway.yaml: chain[0]: plugin "picky" could not be set up: needs a cluster it cannot reach',
    });
  });

  it('reports a settings error with the full field path', () => {
    assert.throws(
      () => chainFrom('chain: [{ plugin: validator, settings: { labels: [team, 3] } }]'),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.equal(err.message, 'gateway.yaml: chain[0].settings.labels[1]: expected a string, got number 3');
        return true;
      },
    );
  });

  it('refuses settings for a plugin that takes none', () => {
    assert.throws(() => chainFrom('chain: [{ plugin: both, settings: { x: 1 } }]'), {
      message: 'gateway.yaml: chain[0].settings: this plugin takes no settings',
    });
  });

  it('leaves provider entries to their runtimes', () => {
    assert.deepEqual(chainFrom('chain: [{ provider: p, url: "https://127.0.0.1:1/x" }]').steps, []);
  });
});

describe('createPluginRegistry()', () => {
  const cases: Array<[string, unknown[], string]> = [
    [
      'a name that is not kebab-case',
      [{ ...both, name: 'Both' }],
      'plugin at index 0 has name "Both": expected a kebab-case name (lower-case DNS-1123 label)',
    ],
    ['a duplicate name', [both, both], 'plugin "both" is registered twice'],
    ['a plugin without setup', [{ name: 'idle', match: everything }], 'plugin "idle" has no setup: it could never run'],
    [
      'a plugin without rules',
      [{ ...both, match: { rules: [] } }],
      'plugin "both" has no match.rules: it would never run',
    ],
  ];
  for (const [name, list, message] of cases) {
    it(`refuses ${name}`, () => {
      assert.throws(
        () => createPluginRegistry(list as AnyPlugin[]),
        (err: unknown) => {
          assert.ok(err instanceof PluginRegistrationError);
          assert.equal(err.message, message);
          return true;
        },
      );
    });
  }
});
