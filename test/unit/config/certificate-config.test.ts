import assert from 'node:assert/strict';
import { configError, parseConfig as parse } from '../../helpers/config.js';

describe('kube.certificate', () => {
  it('takes every field, with the Secret namespace defaulting to the Service namespace', () => {
    const config = parse(`
server: { service: { name: gw, namespace: gw-system } }
kube:
  certificate:
    secretName: gw-tls
    mutatingWebhookConfigurations: [gw-mutating]
    validatingWebhookConfigurations: []
    caValiditySeconds: 120
    certValiditySeconds: 60
    caRenewBeforeSeconds: 90
    certRenewBeforeSeconds: 20
    propagationSeconds: 2
    overlapSeconds: 3
    resyncSeconds: 0.5
`);
    assert.deepEqual(config.kube.certificate, {
      secretName: 'gw-tls',
      secretNamespace: 'gw-system',
      mutatingWebhookConfigurations: ['gw-mutating'],
      validatingWebhookConfigurations: [],
      caValiditySeconds: 120,
      certValiditySeconds: 60,
      caRenewBeforeSeconds: 90,
      certRenewBeforeSeconds: 20,
      propagationSeconds: 2,
      overlapSeconds: 3,
      resyncSeconds: 0.5,
    });
  });

  it('derives the renew points from the lifetimes (a third before expiry)', () => {
    const config = parse('kube: { certificate: { secretName: s, caValiditySeconds: 3000, certValiditySeconds: 300 } }');
    assert.equal(config.kube.certificate.caRenewBeforeSeconds, 1000);
    assert.equal(config.kube.certificate.certRenewBeforeSeconds, 100);
  });

  const invalid: [string, string, string][] = [
    [
      'a Secret with kube disabled',
      'kube: { enabled: false, certificate: { secretName: s } }',
      'gateway.yaml:1:40: kube.certificate.secretName: needs cluster mode, but kube.enabled is false',
    ],
    [
      'an invalid Secret name',
      'kube: { certificate: { secretName: My_Secret } }',
      'gateway.yaml:1:24: kube.certificate.secretName: expected a DNS subdomain name, got "My_Secret"',
    ],
    [
      'a Secret namespace with an empty label between dots',
      'kube: { certificate: { secretName: s, secretNamespace: gw..system } }',
      'gateway.yaml:1:39: kube.certificate.secretNamespace: expected a DNS subdomain name, got "gw..system"',
    ],
    [
      'an empty webhook configuration name',
      'kube: { certificate: { secretName: s, validatingWebhookConfigurations: [""] } }',
      'gateway.yaml:1:73: kube.certificate.validatingWebhookConfigurations[0]: is required (a non-empty string)',
    ],
    [
      'a serving certificate outliving its CA',
      'kube: { certificate: { secretName: s, caValiditySeconds: 100, certValiditySeconds: 200 } }',
      'gateway.yaml:1:63: kube.certificate.certValiditySeconds: must not exceed caValiditySeconds (100), got 200',
    ],
    [
      'a CA renewal too late to finish a rotation',
      'kube: { certificate: { secretName: s, caValiditySeconds: 100, caRenewBeforeSeconds: 10, propagationSeconds: 8, resyncSeconds: 2 } }',
      'gateway.yaml:1:63: kube.certificate.caRenewBeforeSeconds: must exceed propagationSeconds + resyncSeconds (10), got 10',
    ],
    [
      'an overlap shorter than the resync',
      'kube: { certificate: { secretName: s, overlapSeconds: 10 } }',
      'gateway.yaml:1:39: kube.certificate.overlapSeconds: must be at least resyncSeconds (30), got 10',
    ],
    [
      'an unknown field',
      'kube: { certificate: { secret: s } }',
      'gateway.yaml:1:24: kube.certificate.secret: unknown field (known: secretName, ',
    ],
  ];
  for (const [name, yaml, message] of invalid) {
    it(`refuses ${name}, naming the field`, () => {
      const got = configError(yaml);
      assert.ok(got.startsWith(message), `got: ${got}`);
    });
  }
});
