import assert from 'node:assert/strict';
import { resolveProvider } from '../../../server/kube/admission-provider.js';
import { configError, parseConfig } from '../../helpers/config.js';

describe('config record: and shadow:', () => {
  it('records nothing by default', () => {
    assert.deepEqual(parseConfig('{}').record, {
      path: '',
      sampleRate: 0,
      redact: [],
      maxFileBytes: 256 * 1024 * 1024,
      routes: ['mutate', 'mutate/fail', 'mutate/ignore', 'validate', 'validate/fail', 'validate/ignore'],
    });
  });

  it('resolves the path against the config file and keeps what is written', () => {
    const config = parseConfig(`
record:
  path: recordings/reviews.ndjson
  sampleRate: 0.25
  redact: [/spec/password, /metadata/annotations/*]
  maxFileBytes: 1048576
  routes: [validate, validate]
`);
    assert.deepEqual(config.record, {
      path: '/etc/gateway/recordings/reviews.ndjson',
      sampleRate: 0.25,
      redact: ['/spec/password', '/metadata/annotations/*'],
      maxFileBytes: 1048576,
      routes: ['validate'],
    });
  });

  it('refuses a sample rate without a path, a rate out of 0..1, a pointer that is not one, an unknown route', () => {
    assert.match(
      configError('record: { sampleRate: 0.5 }'),
      /record\.path: is required when record\.sampleRate is above 0/,
    );
    assert.match(configError('record: { path: r.ndjson, sampleRate: 2 }'), /record\.sampleRate/);
    assert.match(configError('record: { redact: [spec.password] }'), /record\.redact\[0\]: expected a JSON pointer/);
    assert.match(configError('record: { routes: [authorize] }'), /record\.routes\[0\]/);
  });

  it('reads shadow on a chain entry, and refuses it with attach: OptIn or on an authorize provider', () => {
    const config = parseConfig('chain: [{ plugin: require-labels, shadow: true }]');
    assert.equal(config.chain[0]!.shadow, true);
    assert.equal(parseConfig('chain: [{ plugin: require-labels }]').chain[0]!.shadow, undefined);
    assert.match(
      configError('chain: [{ plugin: require-labels, shadow: true, attach: OptIn }]'),
      /chain\[0\]\.shadow: cannot be set with attach: OptIn or conflictGroup/,
    );
    assert.match(
      configError(`chain:
  - provider: p
    url: https://p.example
    phases: [authorize]
    authorizeMatch: { resources: [pods] }
    shadow: true`),
      /chain\[0\]\.shadow: cannot be set on a provider with the authorize phase/,
    );
  });

  it('reads spec.shadow of an AdmissionProvider with the same rules', () => {
    const provider = (spec: Record<string, unknown>) =>
      resolveProvider(
        { apiVersion: 'admissiongateway.io/v1alpha1', kind: 'AdmissionProvider', metadata: { name: 'p' }, spec },
        new Set(),
      );
    const resolved = provider({ url: 'https://p.example', shadow: true });
    assert.equal(resolved.entry?.shadow, true);
    assert.deepEqual(provider({ url: 'https://p.example', shadow: true, attach: 'OptIn' }), {
      error: { reason: 'InvalidSpec', message: 'spec.shadow: cannot be set with attach: OptIn or conflictGroup' },
    });
  });
});
