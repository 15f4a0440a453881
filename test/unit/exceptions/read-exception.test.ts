import assert from 'node:assert/strict';
import { readException } from '../../../server/exceptions/read-exception.js';

const DAY = 86_400_000;
const NOW = Date.parse('2027-01-01T00:00:00Z');
const RULES = { maxLifetimeMs: 90 * DAY, now: NOW };

/** An AdmissionException in team-a with `spec` over a valid one. */
function object(spec: Record<string, unknown> = {}, meta: Record<string, unknown> = {}, kind = 'AdmissionException') {
  return {
    apiVersion: 'admissiongateway.io/v1alpha1',
    kind,
    metadata: { name: 'web-no-team', namespace: 'team-a', ...meta },
    spec: {
      steps: ['require-labels'],
      match: { names: ['web'] },
      expiresAt: '2027-03-01T00:00:00Z',
      reason: 'the web team moves to the new labels next quarter',
      ...spec,
    },
  };
}

describe('readException()', () => {
  it('reads a valid exception: its reference, steps, expiry as RFC 3339, reason, ticket and mode', () => {
    const e = readException(object({ ticket: 'PLAT-123', mode: 'Warn' }), RULES);
    assert.deepEqual(
      {
        ref: e.ref,
        namespace: e.namespace,
        steps: e.steps,
        expiresAt: e.expiresAt,
        expiresAtText: e.expiresAtText,
        reason: e.reason,
        ticket: e.ticket,
        mode: e.mode,
      },
      {
        ref: 'AdmissionException team-a/web-no-team',
        namespace: 'team-a',
        steps: ['require-labels'],
        expiresAt: Date.parse('2027-03-01T00:00:00Z'),
        expiresAtText: '2027-03-01T00:00:00Z',
        reason: 'the web team moves to the new labels next quarter',
        ticket: 'PLAT-123',
        mode: 'Warn',
      },
    );
  });

  it('defaults mode to Exempt; a ClusterAdmissionException has no namespace and may name "*"', () => {
    assert.equal(readException(object(), RULES).mode, 'Exempt');
    const cluster = readException(
      object({ steps: ['*'] }, { namespace: undefined }, 'ClusterAdmissionException'),
      RULES,
    );
    assert.equal(cluster.ref, 'ClusterAdmissionException web-no-team');
    assert.equal(cluster.namespace, undefined);
    assert.deepEqual(cluster.steps, ['*']);
  });

  const refused: Array<[string, unknown, string]> = [
    [
      'no steps',
      object({ steps: [] }),
      'AdmissionException team-a/web-no-team: spec.steps: is required (a non-empty list of step names)',
    ],
    [
      '"*" in a namespaced exception',
      object({ steps: ['*'] }),
      'AdmissionException team-a/web-no-team: spec.steps[0]: "*" is for a ClusterAdmissionException only: name the steps this exception lets off',
    ],
    [
      'no expiresAt',
      object({ expiresAt: undefined }),
      'AdmissionException team-a/web-no-team: spec.expiresAt: is required (a non-empty string)',
    ],
    [
      'an expiresAt that is not a time',
      object({ expiresAt: 'next quarter' }),
      'AdmissionException team-a/web-no-team: spec.expiresAt: expected an RFC 3339 time such as "2027-03-01T00:00:00Z", got "next quarter"',
    ],
    [
      'an expiresAt past the longest lifetime from creation',
      object({ expiresAt: '2027-04-02T00:00:00Z' }, { creationTimestamp: '2027-01-01T00:00:00Z' }),
      'AdmissionException team-a/web-no-team: spec.expiresAt: must be at most 90d after the exception\'s creation (2027-01-01T00:00:00Z; exceptions.maxLifetime), got "2027-04-02T00:00:00Z"',
    ],
    [
      'no reason',
      object({ reason: '' }),
      'AdmissionException team-a/web-no-team: spec.reason: is required (a non-empty string)',
    ],
    [
      'an unknown mode',
      object({ mode: 'Ignore' }),
      'AdmissionException team-a/web-no-team: spec.mode: expected one of Exempt, Warn, got "Ignore"',
    ],
    [
      'a namespaced exception without a namespace',
      object({}, { namespace: undefined }),
      'exception: metadata.namespace: is required for an AdmissionException',
    ],
    [
      'a ServiceAccount not written namespace/name',
      object({ match: { serviceAccounts: ['deployer'] } }),
      'AdmissionException team-a/web-no-team: spec.match.serviceAccounts[0]: expected "namespace/name" of a ServiceAccount, got "deployer"',
    ],
    [
      'an unknown match field',
      object({ match: { name: ['web'] } }),
      'AdmissionException team-a/web-no-team: spec.match.name: unknown field (did you mean "names"?)',
    ],
  ];
  for (const [what, given, message] of refused) {
    it(`refuses ${what}, naming the exception and the field`, () => {
      assert.throws(() => readException(given, RULES), { name: 'ConfigError', message });
    });
  }

  it('names a lifetime that is not whole days in the largest unit that divides it', () => {
    for (const [maxLifetimeMs, written] of [
      [36 * 3_600_000, '36h'],
      [90 * 60_000, '90m'],
      [45_000, '45s'],
    ] as const) {
      assert.throws(() => readException(object(), { maxLifetimeMs, now: NOW }), {
        message: new RegExp(`must be at most ${written} after`),
      });
    }
  });

  it('counts the lifetime of an object without creationTimestamp (from a file) from now', () => {
    assert.doesNotThrow(() => readException(object({ expiresAt: '2027-03-31T00:00:00Z' }), RULES));
    assert.throws(() => readException(object({ expiresAt: '2027-04-01T00:00:01Z' }), RULES), /must be at most 90d/);
  });
});
