import assert from 'node:assert/strict';
import type { KubeObject } from '../../../server/admission/types.js';
import { buildPluginSteps, createChain } from '../../../server/chain/chain.js';
import { appliedValue, writeApplied } from '../../../server/dispatch/extensions-applied.js';
import { createPluginRegistry } from '../../../server/chain/plugin-registry.js';
import { parseConfigText } from '../../../server/config/load.js';
import { diffWritten } from '../../../server/patch/diff-written.js';
import { WorkingCopy } from '../../../server/patch/working-copy.js';
import { WrittenPaths } from '../../../server/patch/written-paths.js';
import { allow, definePlugin } from '../../../server/plugin-api/index.js';
import { applyPatch } from '../../helpers/patch.js';

const everything = { rules: [{ operations: ['*' as const], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] };
const mutator = definePlugin({ name: 'mutator', match: everything, setup: () => ({ mutate: () => undefined }) });
const validator = definePlugin({ name: 'validator', match: everything, setup: () => ({ validate: () => allow() }) });

// first and third are OptIn mutators behind /mutate/fail, second one behind /mutate/ignore; checks validates.
const config = parseConfigText(
  `
chain:
  - { plugin: mutator, name: first, attach: OptIn }
  - { plugin: mutator, name: second, attach: OptIn, failurePolicy: Ignore }
  - { plugin: mutator, name: third, attach: OptIn }
  - { plugin: mutator, name: always }
  - { plugin: validator, name: checks, attach: OptIn }
`,
  'gateway.yaml',
  '/',
);
const { extensions } = createChain(
  buildPluginSteps(config.chain, createPluginRegistry([mutator, validator]), config.file),
);

const KEY = 'admissiongateway.io/extensions-applied';
const pod = (annotations?: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', ...(annotations ? { annotations } : {}) },
  spec: { containers: [] },
});

describe('admissiongateway.io/extensions-applied (extensions-applied.ts)', () => {
  describe('appliedValue()', () => {
    const all = new Set(['first', 'second', 'third', 'always', 'checks']);
    const value = (
      route: 'Fail' | 'Ignore' | undefined,
      approved: string[],
      { referenced = all, stored, current }: { referenced?: Set<string>; stored?: string; current?: string } = {},
    ) => appliedValue(extensions, route, { approved: new Set(approved), referenced, stored, current });

    it('lists the extensions that applied in chain order, and nothing for none', () => {
      assert.equal(value(undefined, ['third', 'first']), 'first,third');
      assert.equal(
        value(undefined, [], { current: 'first,third' }),
        undefined,
        "the object's own value counts for nothing",
      );
    });

    it('keeps what the stored object listed and the object still references, and nothing else', () => {
      // An UPDATE that first's steps had nothing to do in: first is still what it was.
      assert.equal(value(undefined, ['third'], { stored: 'first' }), 'first,third');
      assert.equal(value(undefined, [], { stored: 'first,third', referenced: new Set(['third']) }), 'third');
      // Names that are no OptIn mutator: unknown, Always, validating.
      assert.equal(value(undefined, [], { stored: 'nope,always,checks' }), undefined);
    });

    it('on a split route, keeps what the other half listed in the object in hand, and answers for its own', () => {
      // The Ignore half runs after the Fail half: first and third (Fail half) stay, a "second" there is dropped.
      assert.equal(value('Ignore', [], { current: 'third,second,first' }), 'first,third');
      assert.equal(value('Ignore', ['second'], { current: 'first' }), 'first,second');
      assert.equal(value('Fail', ['first'], { current: 'nope,always,checks,second' }), 'first,second');
      assert.equal(value('Fail', [], { current: 'second', referenced: new Set() }), undefined);
    });
  });

  describe('writeApplied()', () => {
    it('adds the annotation (and the map) on a copy, recorded for the diff; the original is untouched', () => {
      const original = pod();
      const written = new WrittenPaths();
      const copy = writeApplied(original, undefined, written, 'first');
      assert.ok(copy);
      const patch = diffWritten(original, copy.root, written);
      assert.deepEqual(patch, [{ op: 'add', path: '/metadata/annotations', value: { [KEY]: 'first' } }]);
      assert.deepEqual(original, pod());
      assert.deepEqual(applyPatch(original, patch), pod({ [KEY]: 'first' }));
    });

    it('writes into the working copy the steps left, beside their annotations', () => {
      const original = pod({ team: 'payments' });
      const working = new WorkingCopy(original);
      const written = new WrittenPaths();
      assert.equal(writeApplied(original, working, written, 'first,third'), working);
      assert.deepEqual(diffWritten(original, working.root, written), [
        { op: 'add', path: '/metadata/annotations/admissiongateway.io~1extensions-applied', value: 'first,third' },
      ]);
    });

    it('removes a stale value, and writes nothing when the value is already right', () => {
      const stale = pod({ [KEY]: 'first', team: 'payments' });
      const written = new WrittenPaths();
      const copy = writeApplied(stale, undefined, written, undefined);
      assert.deepEqual(diffWritten(stale, copy!.root, written), [
        { op: 'remove', path: '/metadata/annotations/admissiongateway.io~1extensions-applied' },
      ]);
      assert.equal(writeApplied(pod({ [KEY]: 'first' }), undefined, new WrittenPaths(), 'first'), undefined);
      assert.equal(writeApplied(pod(), undefined, new WrittenPaths(), undefined), undefined);
    });

    it('leaves alone an object whose metadata or annotations are not maps', () => {
      const odd = [
        { metadata: 'web' },
        { metadata: { annotations: ['x'] } },
        { metadata: { annotations: 'x' } },
      ] as unknown as KubeObject[];
      for (const object of odd) assert.equal(writeApplied(object, undefined, new WrittenPaths(), 'first'), undefined);
    });
  });
});
