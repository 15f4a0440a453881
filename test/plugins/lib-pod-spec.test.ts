import assert from 'node:assert/strict';
import type { KubeObject } from '../../server/plugin-api/index.js';
import {
  containersIn,
  containersOf,
  podSpecsOf,
  type ContainerAt,
  type PodSpecAt,
} from '../../plugins/lib/pod-spec.js';
import {
  cronjobCreate,
  deploymentCreate,
  podCreate,
  podDelete,
  requestOf,
  valueAt,
} from '../fixtures/reviews/index.js';

const spec = { containers: [{ name: 'app', image: 'app:1' }] };
const templated = (apiVersion: string, kind: string): KubeObject => ({
  apiVersion,
  kind,
  spec: { template: { spec } },
});

/** The one PodSpec found, checking it is the object's own (edits go to the object, not a copy). */
function onlySpec(object: KubeObject, path: string): PodSpecAt {
  const found = podSpecsOf(object);
  assert.equal(found.length, 1);
  const [first] = found;
  assert.ok(first);
  assert.equal(first.path, path);
  assert.equal(first.spec, valueAt(object, path));
  return first;
}

describe('lib/pod-spec', () => {
  describe('podSpecsOf()', () => {
    describe('given the fixtures', () => {
      it('finds a Pod spec at spec', () => {
        onlySpec(requestOf(podCreate()).object ?? {}, 'spec');
      });

      it('finds a Deployment template at spec.template.spec', () => {
        onlySpec(requestOf(deploymentCreate()).object ?? {}, 'spec.template.spec');
      });

      it('finds a batch/v1beta1 CronJob template at spec.jobTemplate.spec.template.spec', () => {
        onlySpec(requestOf(cronjobCreate()).object ?? {}, 'spec.jobTemplate.spec.template.spec');
      });

      it('finds nothing on DELETE, where there is no object', () => {
        assert.deepEqual(podSpecsOf(requestOf(podDelete()).object), []);
      });
    });

    describe('given each workload kind', () => {
      const kinds: ReadonlyArray<[string, string]> = [
        ['apps/v1', 'ReplicaSet'],
        ['apps/v1', 'StatefulSet'],
        ['apps/v1', 'DaemonSet'],
        ['extensions/v1beta1', 'Deployment'],
        ['batch/v1', 'Job'],
        ['v1', 'ReplicationController'],
      ];
      for (const [apiVersion, kind] of kinds) {
        it(`finds the ${apiVersion} ${kind} template at spec.template.spec`, () => {
          onlySpec(templated(apiVersion, kind), 'spec.template.spec');
        });
      }

      it('finds a batch/v1 CronJob template at spec.jobTemplate.spec.template.spec', () => {
        const cronJob = {
          apiVersion: 'batch/v1',
          kind: 'CronJob',
          spec: { jobTemplate: { spec: { template: { spec } } } },
        };
        onlySpec(cronJob, 'spec.jobTemplate.spec.template.spec');
      });

      it('finds a PodTemplate spec at template.spec', () => {
        onlySpec({ apiVersion: 'v1', kind: 'PodTemplate', template: { spec } }, 'template.spec');
      });
    });

    describe('given objects without a PodSpec', () => {
      const cases: ReadonlyArray<[string, KubeObject | null | undefined]> = [
        ['a ConfigMap', { apiVersion: 'v1', kind: 'ConfigMap', data: { spec: 'x' } }],
        ['a custom resource that happens to be called Job', templated('example.com/v1', 'Job')],
        ['an object without apiVersion', { kind: 'Pod', spec }],
        ['a kind that is an Object.prototype member', { apiVersion: 'v1', kind: 'constructor', spec }],
        ['a Pod without spec', { apiVersion: 'v1', kind: 'Pod' }],
        ['a Pod whose spec is a list', { apiVersion: 'v1', kind: 'Pod', spec: [spec] }],
        [
          'a Deployment whose template is a string',
          { apiVersion: 'apps/v1', kind: 'Deployment', spec: { template: 'x' } },
        ],
        ['null', null],
        ['undefined', undefined],
      ];
      for (const [description, object] of cases) {
        it(`finds nothing in ${description}`, () => {
          assert.deepEqual(podSpecsOf(object), []);
        });
      }
    });
  });

  describe('containersOf()', () => {
    const pod: PodSpecAt = {
      path: 'spec',
      spec: {
        initContainers: [{ name: 'init' }],
        containers: [{ name: 'a' }, 'not a container', null, { name: 'b' }],
        ephemeralContainers: [{ name: 'debug' }],
      },
    };

    /** The found containers as plain records (`path` is worked out on demand). */
    const listed = (found: readonly ContainerAt[]) =>
      found.map(({ container, path, field }) => ({ container, path, field }));

    it('lists containers, then init containers, then ephemeral containers, with their paths', () => {
      assert.deepEqual(listed(containersOf(pod)), [
        { container: { name: 'a' }, path: 'spec.containers[0]', field: 'containers' },
        { container: { name: 'b' }, path: 'spec.containers[3]', field: 'containers' },
        { container: { name: 'init' }, path: 'spec.initContainers[0]', field: 'initContainers' },
        { container: { name: 'debug' }, path: 'spec.ephemeralContainers[0]', field: 'ephemeralContainers' },
      ]);
    });

    it('lists only the fields asked for', () => {
      assert.deepEqual(listed(containersOf(pod, ['initContainers'])), [
        { container: { name: 'init' }, path: 'spec.initContainers[0]', field: 'initContainers' },
      ]);
    });

    it('skips container lists that are not lists', () => {
      assert.deepEqual(containersOf({ path: 'spec', spec: { containers: { name: 'a' }, initContainers: 'x' } }), []);
    });
  });

  describe('containersIn()', () => {
    it('lists the containers of a Deployment template with full paths', () => {
      const found = containersIn(requestOf(deploymentCreate()).object).map(({ path, container }) => [
        path,
        container.name,
      ]);
      assert.deepEqual(found, [
        ['spec.template.spec.containers[0]', 'checkout'],
        ['spec.template.spec.initContainers[0]', 'migrate'],
      ]);
    });
  });
});
