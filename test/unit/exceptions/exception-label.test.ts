/**
 * The `exception` label of admission_gateway_exceptions_applied_total stays bounded however many exceptions
 * whoever may create them makes: the first few keep their own series, every later one counts as `_other`.
 */
import assert from 'node:assert/strict';
import { createExceptionLabels } from '../../../server/exceptions/exception-label.js';
import { readException } from '../../../server/exceptions/read-exception.js';

const NOW = Date.parse('2027-01-01T00:00:00Z');

function exception(name: string, namespace?: string) {
  return readException(
    {
      apiVersion: 'admissiongateway.io/v1alpha1',
      kind: namespace === undefined ? 'ClusterAdmissionException' : 'AdmissionException',
      metadata: { name, ...(namespace === undefined ? {} : { namespace }) },
      spec: { steps: ['require-labels'], expiresAt: '2027-02-01T00:00:00Z', reason: 'moving' },
    },
    { maxLifetimeMs: 90 * 86_400_000, now: NOW },
  );
}

describe('createExceptionLabels()', () => {
  it('names the first exceptions namespace/name (a cluster one by name), and any past the bound _other', () => {
    const label = createExceptionLabels(2);
    assert.deepEqual(
      [
        exception('web', 'team-a'),
        exception('legacy'),
        exception('api', 'team-b'),
        exception('web', 'team-a'),
        exception('legacy'),
        exception('web', 'team-c'),
      ].map(label),
      ['team-a/web', 'legacy', '_other', 'team-a/web', 'legacy', '_other'],
    );
  });
});
