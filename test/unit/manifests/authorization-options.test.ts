import assert from 'node:assert/strict';
import { parseAuthorizationOptions, type AuthorizationFlags } from '../../../server/manifests/authorization-options.js';
import { parseManifestsOptions } from '../../../server/manifests/options.js';
import { manifestsRefusal } from '../../helpers/manifests-options.js';

describe('parseAuthorizationOptions()', () => {
  it('is undefined without --authorization-kubeconfig', () => {
    assert.equal(parseAuthorizationOptions({}), undefined);
    assert.equal(parseManifestsOptions({}).authorization, undefined);
  });

  it("defaults: kubeadm's Node,RBAC with Webhook before RBAC, the file under /etc/kubernetes, no client certificate", () => {
    assert.deepEqual(parseManifestsOptions({ 'authorization-kubeconfig': 'authz.kubeconfig' }).authorization, {
      kubeconfigFile: 'authz.kubeconfig',
      url: undefined,
      modes: ['Node', 'Webhook', 'RBAC'],
      hadWebhook: false,
      controlPlaneFile: '/etc/kubernetes/admission-gateway/authorization-webhook.kubeconfig',
      clientCertificate: undefined,
      configFile: undefined,
      configControlPlaneFile: '/etc/kubernetes/admission-gateway/authorization-config.yaml',
    });
  });

  it('reads every flag', () => {
    assert.deepEqual(
      parseAuthorizationOptions({
        'authorization-kubeconfig': 'out/authz.yaml',
        'authorization-url': 'https://10.96.0.20:8443/',
        'authorization-mode': 'Node,ABAC,RBAC,Webhook',
        'authorization-webhook-config-file': '/etc/kubernetes/pki/gw-authz.conf',
        'authorization-client-certificate': '/etc/kubernetes/pki/gw-client.crt',
        'authorization-client-key': '/etc/kubernetes/pki/gw-client.key',
        'authorization-config': 'out/authz-config.yaml',
      }),
      {
        kubeconfigFile: 'out/authz.yaml',
        url: 'https://10.96.0.20:8443',
        modes: ['Node', 'Webhook', 'ABAC', 'RBAC'],
        hadWebhook: true,
        controlPlaneFile: '/etc/kubernetes/pki/gw-authz.conf',
        clientCertificate: {
          certificate: '/etc/kubernetes/pki/gw-client.crt',
          key: '/etc/kubernetes/pki/gw-client.key',
        },
        configFile: 'out/authz-config.yaml',
        // Beside the kubeconfig on the control plane: one folder to mount.
        configControlPlaneFile: '/etc/kubernetes/pki/authorization-config.yaml',
      },
    );
  });

  const file = { 'authorization-kubeconfig': 'authz.kubeconfig' };
  const refusals: [string, AuthorizationFlags, string][] = [
    [
      'a companion flag without --authorization-kubeconfig',
      { 'authorization-url': 'https://10.96.0.20' },
      "--authorization-url needs --authorization-kubeconfig FILE: it only shapes the authorization webhook's kubeconfig",
    ],
    [
      'an AuthorizationConfiguration without --authorization-kubeconfig',
      { 'authorization-config': 'authz-config.yaml' },
      "--authorization-config needs --authorization-kubeconfig FILE: it only shapes the authorization webhook's kubeconfig (which the AuthorizationConfiguration names)",
    ],
    [
      'the AuthorizationConfiguration written over the kubeconfig',
      { 'authorization-kubeconfig': 'authz.yaml', 'authorization-config': 'authz.yaml' },
      '--authorization-config: expected the path of a file to write besides the kubeconfig, got "authz.yaml"',
    ],
    [
      'the client key without --authorization-kubeconfig',
      { 'authorization-client-key': '/k' },
      "--authorization-client-key needs --authorization-kubeconfig FILE: it only shapes the authorization webhook's kubeconfig",
    ],
    [
      'standard output as the kubeconfig file',
      { 'authorization-kubeconfig': '-' },
      '--authorization-kubeconfig: expected the path of the file to write (standard output carries the webhook configurations), got "-"',
    ],
    [
      '--no-ca-bundle',
      { ...file, 'no-ca-bundle': true },
      '--authorization-kubeconfig and --no-ca-bundle exclude each other: the kubeconfig must carry the CA, since nothing patches one into a file on the control plane (pass --ca FILE for another CA)',
    ],
    [
      'an authorizer URL with a path',
      { ...file, 'authorization-url': 'https://10.96.0.20/authorize' },
      '--authorization-url: expected https://HOST[:PORT] (the route /authorize is appended), without a path, query, fragment or user, got "https://10.96.0.20/authorize"',
    ],
    [
      'an http authorizer URL',
      { ...file, 'authorization-url': 'http://10.96.0.20' },
      '--authorization-url: the apiserver only calls https URLs; expected https://HOST[:PORT] (the route /authorize is appended), got "http://10.96.0.20"',
    ],
    [
      'an unknown authorizer',
      { ...file, 'authorization-mode': 'Node,Rbac' },
      '--authorization-mode: unknown authorizer "Rbac" (did you mean "RBAC"?); expected a comma-separated list of AlwaysAllow, AlwaysDeny, ABAC, Webhook, RBAC, Node, got "Node,Rbac"',
    ],
    [
      'an authorizer given twice',
      { ...file, 'authorization-mode': 'RBAC,RBAC' },
      '--authorization-mode: "RBAC" is given twice, got "RBAC,RBAC"',
    ],
    [
      'a relative path on the control plane',
      { ...file, 'authorization-webhook-config-file': 'authz.kubeconfig' },
      '--authorization-webhook-config-file: expected the absolute path of the kubeconfig on the control plane, got "authz.kubeconfig"',
    ],
    [
      'a client certificate without its key',
      { ...file, 'authorization-client-certificate': '/pki/c.crt' },
      '--authorization-client-certificate and --authorization-client-key go together: the apiserver presents the certificate with its key, got only --authorization-client-certificate',
    ],
    [
      'a client key without its certificate',
      { ...file, 'authorization-client-key': '/pki/c.key' },
      '--authorization-client-certificate and --authorization-client-key go together: the apiserver presents the certificate with its key, got only --authorization-client-key',
    ],
    [
      'a relative client key',
      { ...file, 'authorization-client-certificate': '/pki/c.crt', 'authorization-client-key': 'c.key' },
      '--authorization-client-key: expected the absolute path of its key (PEM) on the control plane, got "c.key"',
    ],
  ];
  for (const [what, flags, message] of refusals) {
    it(`refuses ${what}`, () => {
      assert.equal(manifestsRefusal(flags), message);
    });
  }
});
