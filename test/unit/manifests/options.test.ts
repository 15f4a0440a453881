import assert from 'node:assert/strict';
import { parseManifestsOptions, type ManifestsFlags } from '../../../server/manifests/options.js';
import { manifestsRefusal } from '../../helpers/manifests-options.js';

describe('parseManifestsOptions()', () => {
  it('defaults: the config Service, the serving CA, name admission-gateway, YAML, no extra selectors', () => {
    assert.deepEqual(parseManifestsOptions({}), {
      target: undefined,
      caBundle: { kind: 'serving' },
      name: 'admission-gateway',
      output: 'yaml',
      allResources: false,
      namespaceLabels: {},
      excludeNamespaces: [],
      authorization: undefined,
      kubeVersion: { major: 1, minor: 37 },
      admission: undefined,
    });
  });

  it('reads every flag', () => {
    assert.deepEqual(
      parseManifestsOptions({
        service: 'gw-system/gw:8443',
        ca: 'ca.pem',
        name: 'gw.example.com',
        output: 'json',
        'all-resources': true,
        'namespace-label': ['team=a', 'example.com/env=prod'],
        'exclude-namespace': ['monitoring'],
        'kube-version': 'v1.30.4',
      }),
      {
        target: { kind: 'service', namespace: 'gw-system', name: 'gw', port: 8443 },
        caBundle: { kind: 'file', file: 'ca.pem' },
        name: 'gw.example.com',
        output: 'json',
        allResources: true,
        namespaceLabels: { team: 'a', 'example.com/env': 'prod' },
        excludeNamespaces: ['monitoring'],
        authorization: undefined,
        kubeVersion: { major: 1, minor: 30 },
        admission: undefined,
      },
    );
  });

  it('takes a Service without a port as port 443, a URL without its trailing slash, --no-ca-bundle', () => {
    assert.deepEqual(parseManifestsOptions({ service: 'ns/svc' }).target, {
      kind: 'service',
      namespace: 'ns',
      name: 'svc',
      port: 443,
    });
    assert.deepEqual(parseManifestsOptions({ url: 'https://127.0.0.1:8443/' }).target, {
      kind: 'url',
      url: 'https://127.0.0.1:8443',
    });
    assert.deepEqual(parseManifestsOptions({ 'no-ca-bundle': true }).caBundle, { kind: 'empty' });
  });

  const refusals: [string, ManifestsFlags, string][] = [
    [
      'both --service and --url',
      { service: 'a/b', url: 'https://x' },
      '--service and --url exclude each other: the webhooks call either a Service or a URL',
    ],
    ['both --ca and --no-ca-bundle', { ca: 'x', 'no-ca-bundle': true }, '--ca and --no-ca-bundle exclude each other'],
    ['a Service without a namespace', { service: 'gw' }, '--service: expected NAMESPACE/NAME[:PORT], got "gw"'],
    [
      'a Service name with capitals',
      { service: 'ns/Gateway' },
      '--service: name "Gateway" is not a lower-case DNS-1123 label (expected NAMESPACE/NAME[:PORT])',
    ],
    ['a Service port of 0', { service: 'ns/gw:0' }, '--service: expected a port from 1 to 65535 after ":", got "0"'],
    [
      'a Service port that is not a number',
      { service: 'ns/gw:https' },
      '--service: expected a port from 1 to 65535 after ":", got "https"',
    ],
    [
      'an http URL',
      { url: 'http://127.0.0.1:8443' },
      '--url: the apiserver only calls https URLs; expected https://HOST[:PORT] (the routes /mutate, /validate/fail and /validate/ignore are appended), got "http://127.0.0.1:8443"',
    ],
    [
      'a URL with a path',
      { url: 'https://gw.example.com/mutate' },
      '--url: expected https://HOST[:PORT] (the routes /mutate, /validate/fail and /validate/ignore are appended), without a path, query, fragment or user, got "https://gw.example.com/mutate"',
    ],
    [
      'something that is not a URL',
      { url: 'gw:8443' },
      '--url: the apiserver only calls https URLs; expected https://HOST[:PORT] (the routes /mutate, /validate/fail and /validate/ignore are appended), got "gw:8443"',
    ],
    ['an output format other than yaml or json', { output: 'xml' }, '--output: expected yaml or json, got "xml"'],
    [
      'a name with an underscore',
      { name: 'my_gateway' },
      '--name: expected a lower-case DNS-1123 subdomain, got "my_gateway"',
    ],
    [
      'a namespace label without "="',
      { 'namespace-label': ['team'] },
      '--namespace-label: expected KEY=VALUE with a valid label key and value, got "team"',
    ],
    [
      'a namespace label with an invalid value',
      { 'namespace-label': ['team=a b'] },
      '--namespace-label: expected KEY=VALUE with a valid label key and value, got "team=a b"',
    ],
    [
      'one namespace label with two values',
      { 'namespace-label': ['team=a', 'team=b'] },
      '--namespace-label: "team" is given twice with different values',
    ],
    [
      'a Kubernetes version without its minor',
      { 'kube-version': '1' },
      '--kube-version: expected a Kubernetes version from 1.16 on, such as 1.37 or 1.37.2, got "1"',
    ],
    [
      'a Kubernetes version before admissionregistration.k8s.io/v1',
      { 'kube-version': '1.15' },
      '--kube-version: expected a Kubernetes version from 1.16 on, such as 1.37 or 1.37.2, got "1.15"',
    ],
    [
      'an AuthorizationConfiguration for a version that does not read one',
      { 'kube-version': '1.31', 'authorization-kubeconfig': 'k', 'authorization-config': 'c' },
      '--authorization-config: kube-apiserver reads an AuthorizationConfiguration from Kubernetes 1.32 on, and --kube-version is 1.31; leave --authorization-config out and add the flags printed for --authorization-kubeconfig instead',
    ],
    [
      'an invalid namespace to exclude',
      { 'exclude-namespace': ['Kube_X'] },
      '--exclude-namespace: expected a namespace name, got "Kube_X"',
    ],
  ];
  for (const [what, flags, message] of refusals) {
    it(`refuses ${what}`, () => {
      assert.equal(manifestsRefusal(flags), message);
    });
  }
});
