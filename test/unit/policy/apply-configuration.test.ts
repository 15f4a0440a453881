import assert from 'node:assert/strict';
import type { KubeObject } from '../../../server/admission/types.js';
import { applyConfigurationPatch } from '../../../server/policy/apply-configuration.js';
import { mergeSchemaFor } from '../../../server/policy/merge-schema.js';
import { applyPatch } from '../../helpers/patch.js';

const pod = (): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', labels: { app: 'web' }, finalizers: ['a'] },
  spec: {
    nodeSelector: { disk: 'ssd' },
    containers: [{ name: 'web', image: 'nginx', ports: [{ containerPort: 80, protocol: 'TCP' }] }],
  },
});

/** The operations and the object they make, for `config` merged into `object` of `kind`. */
function merged(config: unknown, object: KubeObject = pod(), kind = 'Pod') {
  const ops = applyConfigurationPatch(object, config, mergeSchemaFor(kind));
  return { ops, object: applyPatch(object, ops) };
}

describe('applyConfigurationPatch(): an apply configuration merged as the apiserver merges it', () => {
  it('adds to a set list only what it lacks', () => {
    const { ops, object } = merged({ metadata: { finalizers: ['a', 'b'] } });
    assert.deepEqual(ops, [{ op: 'add', path: '/metadata/finalizers/-', value: 'b' }]);
    assert.deepEqual(object.metadata?.finalizers, ['a', 'b']);
  });

  it('merges a port by containerPort with the protocol it defaults to', () => {
    const { ops } = merged({ spec: { containers: [{ name: 'web', ports: [{ containerPort: 80, name: 'http' }] }] } });
    assert.deepEqual(ops, [{ op: 'add', path: '/spec/containers/0/ports/0/name', value: 'http' }]);
  });

  it('removes a field set to null, and keeps no null in what it adds', () => {
    const { ops, object } = merged({
      metadata: { labels: { app: null, 'a/b': 'c' }, annotations: { x: null, y: '1' } },
    });
    assert.deepEqual(ops, [
      { op: 'remove', path: '/metadata/labels/app' },
      { op: 'add', path: '/metadata/labels/a~1b', value: 'c' },
      { op: 'add', path: '/metadata/annotations', value: { y: '1' } },
    ]);
    assert.deepEqual([object.metadata?.labels, object.metadata?.annotations], [{ 'a/b': 'c' }, { y: '1' }]);
  });

  it('changes nothing when the configuration is what the object has', () => {
    assert.deepEqual(
      merged({ metadata: { name: 'web' }, spec: { containers: [{ name: 'web', image: 'nginx' }] } }).ops,
      [],
    );
  });

  const refused: readonly [string, unknown, string, string][] = [
    ['an atomic map (nodeSelector)', { spec: { nodeSelector: { disk: 'hdd' } } }, 'Pod', '.spec.nodeSelector'],
    [
      'an atomic struct (a Deployment selector)',
      { spec: { selector: { matchLabels: {} } } },
      'Deployment',
      '.spec.selector',
    ],
    ['a list of a kind it has no schema of', { spec: { items: [1] } }, 'Widget', '.spec.items'],
  ];
  for (const [name, config, kind, path] of refused) {
    it(`refuses ${name}`, () => {
      assert.throws(
        () => merged(config, pod(), kind),
        (err: Error) => err.message === `may not mutate atomic arrays, maps or structs: ${path}`,
      );
    });
  }

  it('refuses two items of one key, and an item that is not an object', () => {
    assert.throws(
      () => merged({ spec: { containers: [{ name: 'x' }, { name: 'x' }] } }),
      /^ApplyConfigurationError: \.spec\.containers: two items have the key \["x"\]$/,
    );
    assert.throws(() => merged({ spec: { containers: ['x'] } }), /expected an object in a list keyed by name/);
  });
});
