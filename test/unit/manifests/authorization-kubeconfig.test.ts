import assert from 'node:assert/strict';
import { KubeConfig } from '@kubernetes/client-node';
import { parse } from 'yaml';
import {
  defaultAuthorizerOrigin,
  isClusterDnsName,
  renderAuthorizationKubeconfig,
} from '../../../server/manifests/authorization-kubeconfig.js';
import { toYaml } from '../../../server/manifests/output.js';

const CA_PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const CA_BUNDLE = Buffer.from(CA_PEM).toString('base64');

describe('renderAuthorizationKubeconfig()', () => {
  it('points the cluster at /authorize with the caBundle, a user without credentials, and the context to use', () => {
    const text = toYaml(
      [renderAuthorizationKubeconfig({ name: 'gw', origin: 'https://10.96.0.20', caBundle: CA_BUNDLE })],
      ['a header'],
    );
    assert.ok(text.startsWith('# a header\napiVersion: v1\nkind: Config\n'), text);
    assert.deepEqual(parse(text), {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'gw', cluster: { server: 'https://10.96.0.20/authorize', 'certificate-authority-data': CA_BUNDLE } },
      ],
      users: [{ name: 'kube-apiserver', user: {} }],
      contexts: [{ name: 'gw', context: { cluster: 'gw', user: 'kube-apiserver' } }],
      'current-context': 'gw',
    });
  });

  it('names the client certificate and key by their paths when the gateway asks for one', () => {
    const kubeconfig = renderAuthorizationKubeconfig({
      name: 'admission-gateway',
      origin: 'https://gw.example.com:8443',
      caBundle: CA_BUNDLE,
      clientCertificate: { certificate: '/etc/kubernetes/pki/gw-client.crt', key: '/etc/kubernetes/pki/gw-client.key' },
    });
    assert.deepEqual(kubeconfig.users, [
      {
        name: 'kube-apiserver',
        user: {
          'client-certificate': '/etc/kubernetes/pki/gw-client.crt',
          'client-key': '/etc/kubernetes/pki/gw-client.key',
        },
      },
    ]);
    assert.equal(kubeconfig.clusters[0].cluster.server, 'https://gw.example.com:8443/authorize');
  });

  it('is a kubeconfig @kubernetes/client-node loads: current cluster, CA and user as rendered', () => {
    const kc = new KubeConfig();
    kc.loadFromString(
      toYaml([
        renderAuthorizationKubeconfig({
          name: 'admission-gateway',
          origin: 'https://[fd00::20]:8443',
          caBundle: CA_BUNDLE,
          clientCertificate: { certificate: '/pki/client.crt', key: '/pki/client.key' },
        }),
      ]),
    );
    assert.equal(kc.getCurrentContext(), 'admission-gateway');
    const cluster = kc.getCurrentCluster();
    assert.equal(cluster?.server, 'https://[fd00::20]:8443/authorize');
    assert.equal(cluster?.caData, CA_BUNDLE);
    assert.equal(cluster?.skipTLSVerify, false);
    const user = kc.getCurrentUser();
    assert.equal(user?.name, 'kube-apiserver');
    assert.equal(user?.certFile, '/pki/client.crt');
    assert.equal(user?.keyFile, '/pki/client.key');
  });

  it('gives client-node the CA to trust, and no credentials, without a client certificate', async () => {
    const kc = new KubeConfig();
    kc.loadFromString(
      toYaml([renderAuthorizationKubeconfig({ name: 'gw', origin: 'https://127.0.0.1:8443', caBundle: CA_BUNDLE })]),
    );
    const options: { ca?: Buffer | string; cert?: unknown; key?: unknown; headers?: Record<string, unknown> } = {};
    await kc.applyToHTTPSOptions(options);
    assert.equal(String(options.ca), CA_PEM);
    assert.equal(options.cert, undefined);
    assert.equal(options.key, undefined);
    assert.equal(options.headers?.Authorization, undefined);
  });
});

describe('defaultAuthorizerOrigin()', () => {
  it("takes --url's origin as it is", () => {
    assert.equal(defaultAuthorizerOrigin({ kind: 'url', url: 'https://192.0.2.10:30443' }), 'https://192.0.2.10:30443');
  });

  it('names the Service by its cluster DNS name, without the port when it is 443', () => {
    assert.equal(
      defaultAuthorizerOrigin({ kind: 'service', namespace: 'admission-gateway', name: 'gw', port: 443 }),
      'https://gw.admission-gateway.svc',
    );
    assert.equal(
      defaultAuthorizerOrigin({ kind: 'service', namespace: 'ns', name: 'gw', port: 8443 }),
      'https://gw.ns.svc:8443',
    );
  });
});

describe('isClusterDnsName()', () => {
  const cases: [string, boolean][] = [
    ['https://gw.ns.svc', true],
    ['https://gw.ns.svc:8443', true],
    ['https://gw.ns.svc.cluster.local', true],
    ['https://gw.ns.svc.example.internal:443', true],
    ['https://10.96.0.20', false],
    ['https://[fd00::20]:8443', false],
    ['https://gateway.example.com', false],
    ['https://svc.example.com', false],
    ['https://my-svc.example.com', false],
  ];
  for (const [origin, expected] of cases) {
    it(`${origin}: ${expected ? 'a cluster Service name' : 'not one'}`, () => {
      assert.equal(isClusterDnsName(origin), expected);
    });
  }
});
