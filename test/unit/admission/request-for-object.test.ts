import assert from 'node:assert/strict';
import {
  DEFAULT_USER,
  ObjectShapeError,
  guessResource,
  requestForObject,
} from '../../../server/admission/request-for-object.js';
import type { AdmissionRequest, KubeObject } from '../../../server/plugin-api/types.js';
import {
  cronjobCreate,
  deploymentCreate,
  namespaceCreate,
  podCreate,
  podDelete,
  requestOf,
} from '../../fixtures/reviews/index.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** What the apiserver sent, minus what depends on who sent it and how (user, options, uid). */
function comparable(request: AdmissionRequest): Partial<AdmissionRequest> {
  const { uid: _uid, userInfo: _user, options: _options, ...rest } = request;
  return rest;
}

describe('requestForObject()', () => {
  describe('builds the request kube-apiserver sends for a CREATE', () => {
    const fixtures = { 'a Pod': podCreate, 'a Deployment': deploymentCreate, 'a CronJob': cronjobCreate };
    for (const [what, fixture] of Object.entries(fixtures)) {
      it(`of ${what}: kind, resource, name, namespace and object as in the recorded review`, () => {
        const sent = requestOf(fixture());

        const built = requestForObject(sent.object!);

        assert.deepEqual(comparable(built), comparable(sent));
      });
    }

    it('of a cluster-scoped Namespace, without a namespace', () => {
      const sent = requestOf(namespaceCreate());

      const built = requestForObject(sent.object!);

      assert.deepEqual(comparable(built), comparable(sent));
      assert.equal('namespace' in built, false);
    });
  });

  it('generates a fresh uid, and names a default user and the create options', () => {
    const object = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'b' } };

    const [first, second] = [requestForObject(object), requestForObject(object)];

    assert.match(first.uid, UUID);
    assert.notEqual(first.uid, second.uid);
    assert.deepEqual(first.userInfo, DEFAULT_USER);
    assert.deepEqual(first.options, { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' });
    assert.equal(first.dryRun, false);
  });

  describe('the namespace', () => {
    const pod = (namespace?: string): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', ...(namespace ? { namespace } : {}) },
    });

    it("is the object's own, whatever the option says", () => {
      const request = requestForObject(pod('team-a'), { namespace: 'team-b' });
      assert.equal(request.namespace, 'team-a');
    });

    it('is the option when the object has none, and is written into the object as the apiserver does', () => {
      const object = pod();

      const request = requestForObject(object, { namespace: 'team-b' });

      assert.equal(request.namespace, 'team-b');
      assert.deepEqual(request.object?.metadata, { name: 'web', namespace: 'team-b' });
      assert.deepEqual(object.metadata, { name: 'web' }, 'the given object is not changed');
    });

    it('is "default" for a namespaced built-in kind that names none (as kubectl does)', () => {
      assert.equal(requestForObject(pod()).namespace, 'default');
    });

    it('is never set for a cluster-scoped built-in kind, even when an option is given', () => {
      const role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'r' } };

      const request = requestForObject(role, { namespace: 'team-a' });

      assert.equal(request.namespace, undefined);
      assert.deepEqual(request.object, role);
    });

    it('is only set for a kind it does not know when one is given', () => {
      const widget = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } };

      assert.equal(requestForObject(widget).namespace, undefined);
      assert.equal(requestForObject(widget, { namespace: 'team-a' }).namespace, 'team-a');
    });
  });

  describe('the resource', () => {
    it('comes from the table for built-in kinds whose plural a guess gets wrong', () => {
      const endpoints = requestForObject({ apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'e' } });
      const policy = requestForObject({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' });

      assert.deepEqual(endpoints.resource, { group: '', version: 'v1', resource: 'endpoints' });
      assert.deepEqual(policy.resource, { group: 'networking.k8s.io', version: 'v1', resource: 'networkpolicies' });
    });

    it('is the English plural in lower case for any other kind', () => {
      const request = requestForObject({ apiVersion: 'example.com/v1alpha1', kind: 'Widget' });

      assert.deepEqual(request.kind, { group: 'example.com', version: 'v1alpha1', kind: 'Widget' });
      assert.deepEqual(request.resource, { group: 'example.com', version: 'v1alpha1', resource: 'widgets' });
      assert.deepEqual(['Widget', 'Ingress', 'Policy', 'Gateway', 'Box', 'Patch', 'Mesh'].map(guessResource), [
        'widgets',
        'ingresses',
        'policies',
        'gateways',
        'boxes',
        'patches',
        'meshes',
      ]);
    });
  });

  describe('the operation', () => {
    it('UPDATE carries the old object and the update options', () => {
      const old = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'b' }, data: { x: '1' } };
      const object = { ...old, data: { x: '2' } };

      const request = requestForObject(object, { operation: 'UPDATE', oldObject: old });

      assert.equal(request.operation, 'UPDATE');
      assert.deepEqual(request.object, object);
      assert.deepEqual(request.oldObject, old);
      assert.deepEqual(request.options, { apiVersion: 'meta.k8s.io/v1', kind: 'UpdateOptions' });
    });

    it('DELETE sends the object as oldObject, with no object, as the recorded review does', () => {
      const sent = requestOf(podDelete());

      const built = requestForObject(sent.oldObject!, { operation: 'DELETE', userInfo: sent.userInfo });

      assert.deepEqual(comparable(built), comparable(sent));
      assert.deepEqual(built.userInfo, sent.userInfo);
    });

    it('passes dry run, the user and a subresource through', () => {
      const user = { username: 'alice', groups: ['devs'] };

      const request = requestForObject(
        { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', namespace: 'n' } },
        { operation: 'UPDATE', dryRun: true, userInfo: user, subResource: 'scale' },
      );

      assert.equal(request.dryRun, true);
      assert.deepEqual(request.userInfo, user);
      assert.equal(request.subResource, 'scale');
      assert.equal(request.requestSubResource, 'scale');
    });
  });

  describe('refuses an object that cannot be a request', () => {
    const cases: Array<[string, KubeObject, string]> = [
      [
        'without apiVersion',
        { kind: 'Pod' },
        'expected apiVersion as "group/version" or "version" (e.g. apps/v1, v1), got null',
      ],
      [
        'with an apiVersion of three parts',
        { apiVersion: 'a/b/c', kind: 'Pod' },
        'expected apiVersion as "group/version" or "version" (e.g. apps/v1, v1), got "a/b/c"',
      ],
      ['without kind', { apiVersion: 'v1' }, 'expected kind as a name such as Pod, got null'],
      [
        'with a kind that is no name',
        { apiVersion: 'v1', kind: 'a pod' },
        'expected kind as a name such as Pod, got "a pod"',
      ],
    ];
    for (const [what, object, message] of cases) {
      it(what, () => {
        assert.throws(
          () => requestForObject(object),
          (err: unknown) => {
            assert.ok(err instanceof ObjectShapeError);
            assert.equal(err.message, message);
            return true;
          },
        );
      });
    }
  });
});
