import assert from 'node:assert/strict';
import type { KubeObject } from '../../server/plugin-api/index.js';
import {
  containersIn,
  containersOf,
  forEachContainer,
  podSpecOf,
  type AnyContainer,
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

/** The PodSpec found, checking it is the object's own (edits go to the object, not a copy). */
function specAt(object: KubeObject, path: string): PodSpecAt {
  const found = podSpecOf(object);
  assert.ok(found);
  assert.equal(found.path, path);
  assert.equal(found.spec, valueAt(object, path));
  return found;
}

/**
 * A Pod whose container lists hold entries that are not containers, as a client other than the apiserver
 * could send: they are skipped, and keep their index in the paths of the others.
 */
const untidyPod: KubeObject = {
  apiVersion: 'v1',
  kind: 'Pod',
  spec: {
    initContainers: [{ name: 'init' }],
    containers: [{ name: 'a' }, 'not a container', null, { name: 'b' }],
    ephemeralContainers: [{ name: 'debug' }],
  },
};

describe('lib/pod-spec', () => {
  describe('podSpecOf()', () => {
    describe('given the fixtures', () => {
      it('finds a Pod spec at spec', () => {
        specAt(requestOf(podCreate()).object ?? {}, 'spec');
      });

      it('finds a Deployment template at spec.template.spec', () => {
        specAt(requestOf(deploymentCreate()).object ?? {}, 'spec.template.spec');
      });

      it('finds a batch/v1beta1 CronJob template at spec.jobTemplate.spec.template.spec', () => {
        specAt(requestOf(cronjobCreate()).object ?? {}, 'spec.jobTemplate.spec.template.spec');
      });

      it('finds nothing on DELETE, where there is no object', () => {
        assert.equal(podSpecOf(requestOf(podDelete()).object), undefined);
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
          specAt(templated(apiVersion, kind), 'spec.template.spec');
        });
      }

      it('finds a batch/v1 CronJob template at spec.jobTemplate.spec.template.spec', () => {
        const cronJob = {
          apiVersion: 'batch/v1',
          kind: 'CronJob',
          spec: { jobTemplate: { spec: { template: { spec } } } },
        };
        specAt(cronJob, 'spec.jobTemplate.spec.template.spec');
      });

      it('finds a PodTemplate spec at template.spec', () => {
        specAt({ apiVersion: 'v1', kind: 'PodTemplate', template: { spec } }, 'template.spec');
      });
    });

    describe('given objects without a PodSpec', () => {
      const cases: ReadonlyArray<[string, KubeObject | null | undefined]> = [
        ['a ConfigMap', { apiVersion: 'v1', kind: 'ConfigMap', data: { spec: 'x' } }],
        ['a custom resource that happens to be called Job', templated('example.com/v1', 'Job')],
        ['an object without apiVersion', { kind: 'Pod', spec }],
        ['a kind that is an Object.prototype member', { apiVersion: 'v1', kind: 'constructor', spec }],
        ['a Pod without spec', { apiVersion: 'v1', kind: 'Pod' }],
        ['a Pod whose spec is null', { apiVersion: 'v1', kind: 'Pod', spec: null }],
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
          assert.equal(podSpecOf(object), undefined);
        });
      }
    });
  });

  describe('containersOf()', () => {
    const pod = specAt(untidyPod, 'spec');

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
      const odd: KubeObject = {
        apiVersion: 'v1',
        kind: 'Pod',
        spec: { containers: { name: 'a' }, initContainers: 'x' },
      };
      assert.deepEqual(containersOf(specAt(odd, 'spec')), []);
    });

    it('skips null container lists', () => {
      const nulls: KubeObject = { apiVersion: 'v1', kind: 'Pod', spec: { containers: null, initContainers: null } };
      assert.deepEqual(containersOf(specAt(nulls, 'spec')), []);
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

    it('lists none for an object without a PodSpec', () => {
      assert.deepEqual(containersIn(requestOf(podDelete()).object), []);
    });
  });

  describe('forEachContainer()', () => {
    it('visits the containers of the fields asked for, in order, skipping entries that are not containers', () => {
      const visited: AnyContainer[] = [];
      forEachContainer(untidyPod, ['containers', 'initContainers'], (container) => visited.push(container));
      assert.deepEqual(visited, [{ name: 'a' }, { name: 'b' }, { name: 'init' }]);
    });

    it('visits none for an object without a PodSpec', () => {
      forEachContainer(templated('example.com/v1', 'Job'), ['containers'], () => assert.fail('visited'));
    });
  });
});
