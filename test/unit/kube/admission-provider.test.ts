import assert from 'node:assert/strict';
import { resolveProvider, type AdmissionProvider } from '../../../server/kube/admission-provider.js';

const CA = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n').toString('base64');

function provider(name: string, spec: unknown): AdmissionProvider {
  return {
    apiVersion: 'admissiongateway.io/v1alpha1',
    kind: 'AdmissionProvider',
    metadata: { name, generation: 3 },
    spec,
  };
}

describe('resolveProvider()', () => {
  describe('given a valid resource', () => {
    it('becomes a provider entry placed by spec.order', () => {
      const resolution = resolveProvider(
        provider('scanner', {
          url: 'https://scanner.example:9443/admit',
          caBundle: CA,
          phases: ['validate'],
          order: 15,
          timeoutSeconds: 3,
          failurePolicy: 'Ignore',
          mode: 'warn',
          settings: { level: 'high' },
          circuitBreaker: { volumeThreshold: 2 },
        }),
        new Set(),
      );
      assert.deepEqual(resolution, {
        entry: {
          kind: 'provider',
          provider: 'scanner',
          name: 'scanner',
          order: 15,
          path: 'spec',
          url: 'https://scanner.example:9443/admit',
          phases: ['validate'],
          caBundle: CA,
          circuitBreaker: {
            errorThresholdPercentage: 50,
            volumeThreshold: 2,
            resetTimeoutMs: 30000,
            rollingWindowMs: 10000,
          },
          discovery: false,
          discoveryPath: 'discovery',
          admissionReviewVersions: ['v1', 'v1beta1'],
          timeoutSeconds: 3,
          failurePolicy: 'Ignore',
          mode: 'warn',
          settings: { level: 'high' },
        },
      });
    });

    it('sits after the configured chain when it has no order', () => {
      assert.equal(resolveProvider(provider('p', { url: 'https://p.example/' }), new Set()).entry?.order, 1000);
    });

    it('resolves a service reference', () => {
      const { entry } = resolveProvider(
        provider('p', { service: { namespace: 'sec', name: 'scan', path: '/admit' } }),
        new Set(),
      );
      assert.deepEqual(entry?.service, { namespace: 'sec', name: 'scan', port: 443, path: '/admit' });
    });
  });

  const invalid: Array<[string, string, unknown, string, string]> = [
    [
      'both url and service',
      'p',
      { url: 'https://a/', service: { namespace: 'n', name: 's' } },
      'InvalidSpec',
      'spec: expected exactly one of url or service',
    ],
    ['an http URL', 'p', { url: 'http://a/' }, 'InvalidSpec', 'spec.url: expected an https:// URL, got "http://a/"'],
    [
      'a timeout over 30 s',
      'p',
      { url: 'https://a/', timeoutSeconds: 31 },
      'InvalidSpec',
      'spec.timeoutSeconds: expected an integer from 1 to 30, got 31',
    ],
    [
      'a caBundle that is no certificate',
      'p',
      { url: 'https://a/', caBundle: 'bm90IGEgY2VydA==' },
      'InvalidSpec',
      'spec.caBundle: expected base64 of PEM certificates',
    ],
    ['an unknown field', 'p', { url: 'https://a/', timeout: 3 }, 'InvalidSpec', 'spec.timeout: unknown field (known: '],
    [
      'a name that is not a DNS label',
      'a.b',
      { url: 'https://a/' },
      'InvalidName',
      'metadata.name "a.b" must be a DNS-1123 label of at most 63 characters',
    ],
    [
      'a name taken by gateway.yaml',
      'default-labels',
      { url: 'https://a/' },
      'NameConflict',
      `a step named "default-labels" is already defined in the gateway's configuration`,
    ],
    ['no spec', 'p', undefined, 'InvalidSpec', 'spec: is required'],
  ];
  for (const [name, metaName, spec, reason, message] of invalid) {
    it(`refuses ${name} with reason ${reason}, naming the field`, () => {
      const { error } = resolveProvider(provider(metaName, spec), new Set(['default-labels']));
      assert.equal(error?.reason, reason);
      assert.ok(error.message.startsWith(message), `message: ${error.message}`);
    });
  }
});
