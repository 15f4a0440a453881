/**
 * The status conditions the exception watcher keeps: what it would write, and that an object whose status
 * already says so — as the apiserver returns it — is not written again on every rebuild.
 */
import assert from 'node:assert/strict';
import { readException } from '../../../server/exceptions/read-exception.js';
import { desiredConditions, sameConditions } from '../../../server/kube/exception-watcher.js';

const NOW = Date.parse('2027-01-01T00:00:00Z');
const object = {
  apiVersion: 'admissiongateway.io/v1alpha1',
  kind: 'AdmissionException',
  metadata: { name: 'web', namespace: 'team-a', generation: 2 },
  spec: { steps: ['require-labels'], expiresAt: '2027-02-01T00:00:00Z', reason: 'moving' },
};
const exception = readException(object, { maxLifetimeMs: 90 * 86_400_000, now: NOW });

/** A value as a custom resource comes back from the apiserver: every map's keys sorted. */
const sortedKeys = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(sortedKeys)
    : value && typeof value === 'object'
      ? Object.fromEntries(
          Object.entries(value)
            .sort(([a], [b]) => (a < b ? -1 : 1))
            .map(([k, v]) => [k, sortedKeys(v)]),
        )
      : value;

describe('exception watcher status', () => {
  it('says Accepted and in force until expiresAt, then Expired, keeping the transition time of what stays', () => {
    const inForce = desiredConditions(object, exception, NOW);
    assert.deepEqual(inForce, [
      {
        type: 'Accepted',
        status: 'True',
        reason: 'Valid',
        message: 'applies to steps require-labels',
        lastTransitionTime: '2027-01-01T00:00:00Z',
        observedGeneration: 2,
      },
      {
        type: 'Expired',
        status: 'False',
        reason: 'InForce',
        message: 'expires at 2027-02-01T00:00:00Z',
        lastTransitionTime: '2027-01-01T00:00:00Z',
        observedGeneration: 2,
      },
    ]);
    const later = Date.parse('2027-02-01T00:00:00Z');
    assert.deepEqual(desiredConditions(object, exception, later, inForce)[1], {
      type: 'Expired',
      status: 'True',
      reason: 'Expired',
      message: 'expired at 2027-02-01T00:00:00Z',
      lastTransitionTime: '2027-02-01T00:00:00Z',
      observedGeneration: 2,
    });
    assert.equal(desiredConditions(object, exception, later, inForce)[0]!.lastTransitionTime, '2027-01-01T00:00:00Z');
  });

  it('finds the status the apiserver returns, keys sorted, the same as the one it would write', () => {
    const written = desiredConditions(object, exception, NOW);
    const stored = sortedKeys(written) as typeof written;
    assert.equal(sameConditions(stored, desiredConditions(object, exception, NOW + 1000, stored)), true);
    assert.equal(sameConditions(undefined, written), false);
  });
});
