/**
 * Where an exception's usage is stored (exception-usage.ts): status.usage of the AdmissionException or
 * ClusterAdmissionException its ref names, read from the informers' caches, written as a conditional merge
 * patch of the status subresource; and that the usage writes alone do not make the watcher read every
 * exception again (rebuildSignature).
 */
import assert from 'node:assert/strict';
import type { CustomObjectsApi, ObjectCache } from '@kubernetes/client-node';
import { kubeExceptionUsageStore, usageKey, type UsageObject } from '../../../server/kube/exception-usage.js';
import { rebuildSignature } from '../../../server/kube/exception-watcher.js';

const namespaced: UsageObject = {
  kind: 'AdmissionException',
  metadata: { name: 'web', namespace: 'team-a', resourceVersion: '7' },
  status: { usage: { reviews: 3, windowStart: '2026-11-22T10:00:00Z', previousWindowReviews: 1, lastUsed: 'x' } },
};
const cluster: UsageObject = { kind: 'ClusterAdmissionException', metadata: { name: 'legacy', resourceVersion: '9' } };

function cacheOf(objects: UsageObject[]): ObjectCache<UsageObject> {
  return {
    get: (name, namespace) => objects.find((o) => o.metadata.name === name && o.metadata.namespace === namespace),
    list: () => objects,
  };
}

/** The calls the store makes, with what it sends; the patch methods answer as the apiserver's success. */
function recordingApi() {
  const calls: Array<[string, unknown]> = [];
  const record = (method: string) => (params: unknown) => {
    calls.push([method, params]);
    return Promise.resolve({});
  };
  const api = {
    getNamespacedCustomObject: record('getNamespaced'),
    getClusterCustomObject: record('getCluster'),
    patchNamespacedCustomObjectStatus: record('patchNamespacedStatus'),
    patchClusterCustomObjectStatus: record('patchClusterStatus'),
  } as unknown as CustomObjectsApi;
  return { api, calls };
}

describe('the exceptions’ usage store (status.usage)', () => {
  it('names each exception by its ref and reads its usage from the informers’ caches', () => {
    const store = kubeExceptionUsageStore(recordingApi().api, {
      namespaced: cacheOf([namespaced]),
      cluster: cacheOf([cluster]),
    });
    assert.deepEqual(store.keys(), ['AdmissionException team-a/web', 'ClusterAdmissionException legacy']);
    assert.deepEqual(store.cached(usageKey(namespaced)), {
      resourceVersion: '7',
      counts: { count: 3, windowStart: '2026-11-22T10:00:00Z', previousWindowCount: 1, lastUsed: 'x' },
    });
    assert.deepEqual(store.cached('ClusterAdmissionException legacy'), { resourceVersion: '9', counts: undefined });
    for (const key of ['AdmissionException web', 'ClusterAdmissionException team-a/web', 'Pod team-a/web'])
      assert.equal(store.cached(key), undefined, key);
  });

  it('writes a merge patch of the status subresource carrying the resourceVersion it was computed from', async () => {
    const { api, calls } = recordingApi();
    const store = kubeExceptionUsageStore(api, { namespaced: cacheOf([]), cluster: cacheOf([]) });
    const counts = { count: 4, windowStart: '2026-11-22T10:00:00Z', previousWindowCount: 0 };
    await store.write('AdmissionException team-a/web', '7', { ...counts, lastUsed: '2026-11-22T10:20:00Z' });
    await store.write('ClusterAdmissionException legacy', '9', counts);
    const resource = { group: 'admissiongateway.io', version: 'v1alpha1' };
    assert.deepEqual(calls, [
      [
        'patchNamespacedStatus',
        {
          ...resource,
          plural: 'admissionexceptions',
          namespace: 'team-a',
          name: 'web',
          body: {
            metadata: { resourceVersion: '7' },
            status: {
              usage: {
                reviews: 4,
                windowStart: '2026-11-22T10:00:00Z',
                previousWindowReviews: 0,
                lastUsed: '2026-11-22T10:20:00Z',
              },
            },
          },
        },
      ],
      [
        'patchClusterStatus',
        {
          ...resource,
          plural: 'clusteradmissionexceptions',
          name: 'legacy',
          body: {
            metadata: { resourceVersion: '9' },
            status: { usage: { reviews: 4, windowStart: '2026-11-22T10:00:00Z', previousWindowReviews: 0 } },
          },
        },
      ],
    ]);
  });

  it('changes no rebuild signature with a usage write, and changes it with the spec or the conditions', () => {
    const object = {
      ...namespaced,
      metadata: { ...namespaced.metadata, generation: 1 },
      spec: { steps: ['require-labels'] },
      status: { conditions: [], usage: { reviews: 1 } },
    };
    const signature = rebuildSignature(object);
    const counted = {
      ...object,
      metadata: { ...object.metadata, resourceVersion: '8', managedFields: [{ manager: 'admission-gateway' }] },
      status: { ...object.status, usage: { reviews: 2, lastUsed: '2026-11-22T10:20:00Z' } },
    };
    assert.equal(rebuildSignature(counted), signature);
    assert.notEqual(rebuildSignature({ ...counted, spec: { steps: ['other'] } }), signature);
    assert.notEqual(rebuildSignature({ ...counted, status: { usage: { reviews: 2 } } }), signature);
  });
});
