/** `kube.leaderElection` (docs/configuration.md "kube.leaderElection"): its defaults, and client-go's rules on the timings. */
import assert from 'node:assert/strict';
import { configError, parseConfig as parse } from '../../helpers/config.js';

describe('kube.leaderElection', () => {
  it('defaults to the Lease admission-gateway in the Service namespace, with kube-controller-manager’s timings', () => {
    assert.deepEqual(parse('server: { service: { name: gw, namespace: gw-system } }').kube.leaderElection, {
      leaseName: 'admission-gateway',
      leaseNamespace: 'gw-system',
      leaseDurationSeconds: 15,
      renewDeadlineSeconds: 10,
      retryPeriodSeconds: 2,
    });
  });

  it('takes every field', () => {
    const config = parse(`
kube:
  leaderElection:
    leaseName: gw-leader
    leaseNamespace: ops
    leaseDurationSeconds: 3
    renewDeadlineSeconds: 2
    retryPeriodSeconds: 0.5
`);
    assert.deepEqual(config.kube.leaderElection, {
      leaseName: 'gw-leader',
      leaseNamespace: 'ops',
      leaseDurationSeconds: 3,
      renewDeadlineSeconds: 2,
      retryPeriodSeconds: 0.5,
    });
  });

  it('scales unset timings from the lease duration (two thirds, then a fifth of that, at least 0.2 s)', () => {
    assert.deepEqual(
      ['renewDeadlineSeconds', 'retryPeriodSeconds'].map(
        (k) =>
          parse('kube: { leaderElection: { leaseDurationSeconds: 60 } }').kube.leaderElection[
            k as 'retryPeriodSeconds'
          ],
      ),
      [40, 8],
    );
    assert.equal(
      parse('kube: { leaderElection: { leaseDurationSeconds: 1 } }').kube.leaderElection.retryPeriodSeconds,
      0.2,
    );
  });

  const invalid: [string, string, string][] = [
    [
      'a renew deadline as long as the lease',
      'kube: { leaderElection: { leaseDurationSeconds: 10, renewDeadlineSeconds: 10 } }',
      'gateway.yaml:1:53: kube.leaderElection.renewDeadlineSeconds: must be less than leaseDurationSeconds (10), got 10',
    ],
    [
      'a renew deadline that leaves no second try',
      'kube: { leaderElection: { renewDeadlineSeconds: 2.4, retryPeriodSeconds: 2 } }',
      'gateway.yaml:1:27: kube.leaderElection.renewDeadlineSeconds: must exceed 1.2 × retryPeriodSeconds (2.4), got 2.4',
    ],
    [
      'a retry period that would have every replica read the Lease more than 5 times a second',
      'kube: { leaderElection: { retryPeriodSeconds: 0.1 } }',
      'gateway.yaml:1:27: kube.leaderElection.retryPeriodSeconds: expected a number from 0.2 to 600, got 0.1',
    ],
    [
      'a lease duration in fractions (the Lease keeps whole seconds)',
      'kube: { leaderElection: { leaseDurationSeconds: 2.5 } }',
      'gateway.yaml:1:27: kube.leaderElection.leaseDurationSeconds: expected an integer from 1 to 3600, got 2.5',
    ],
    [
      'a Lease name that is no DNS subdomain',
      'kube: { leaderElection: { leaseName: Leader_1 } }',
      'gateway.yaml:1:27: kube.leaderElection.leaseName: expected a DNS subdomain name, got "Leader_1"',
    ],
    [
      'a namespace that is no DNS label',
      'kube: { leaderElection: { leaseNamespace: ops.system } }',
      'gateway.yaml:1:27: kube.leaderElection.leaseNamespace: expected a namespace name, got "ops.system"',
    ],
    [
      'an unknown field',
      'kube: { leaderElection: { leaseDuration: 15 } }',
      'gateway.yaml:1:27: kube.leaderElection.leaseDuration: unknown field',
    ],
  ];
  for (const [name, yaml, message] of invalid) {
    it(`refuses ${name}, naming the field`, () => {
      const got = configError(yaml);
      assert.ok(got.startsWith(message), `got: ${got}`);
    });
  }
});
