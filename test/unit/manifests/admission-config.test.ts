import assert from 'node:assert/strict';
import {
  renderAdmissionConfiguration,
  renderAdmissionKubeconfig,
  webhookServerName,
} from '../../../server/manifests/admission-config.js';
import { parseAdmissionOptions, type AdmissionFlags } from '../../../server/manifests/admission-options.js';
import { ManifestsUsageError } from '../../../server/manifests/options.js';

const CERT = {
  'admission-client-certificate': '/pki/apiserver-webhook.crt',
  'admission-client-key': '/pki/apiserver-webhook.key',
};

describe('the admission configuration for client certificates', () => {
  it('names the webhooks’ server as kube-apiserver looks credentials up: Service DNS name and port, or URL host and port', () => {
    assert.equal(
      webhookServerName({ kind: 'service', namespace: 'admission-gateway', name: 'gw', port: 443 }),
      'gw.admission-gateway.svc:443',
    );
    assert.equal(webhookServerName({ kind: 'url', url: 'https://127.0.0.1:16444' }), '127.0.0.1:16444');
    assert.equal(webhookServerName({ kind: 'url', url: 'https://gw.example.com' }), 'gw.example.com:443');
  });

  it('renders a kubeconfig with only that user, and both webhook plugins pointing at it', () => {
    assert.deepEqual(
      renderAdmissionKubeconfig({ kind: 'url', url: 'https://127.0.0.1:16444' }, '/pki/c.crt', '/pki/c.key'),
      {
        apiVersion: 'v1',
        kind: 'Config',
        users: [{ name: '127.0.0.1:16444', user: { 'client-certificate': '/pki/c.crt', 'client-key': '/pki/c.key' } }],
      },
    );
    const configuration = {
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'WebhookAdmissionConfiguration',
      kubeConfigFile: '/etc/k/admission-webhooks.kubeconfig',
    };
    assert.deepEqual(renderAdmissionConfiguration('/etc/k/admission-webhooks.kubeconfig'), {
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'AdmissionConfiguration',
      plugins: [
        { name: 'ValidatingAdmissionWebhook', configuration },
        { name: 'MutatingAdmissionWebhook', configuration },
      ],
    });
  });

  it('reads the flags: the kubeconfig beside the file, the control-plane folder by default', () => {
    assert.equal(parseAdmissionOptions({}), undefined);
    assert.deepEqual(parseAdmissionOptions({ 'admission-config': 'out/admission.yaml', ...CERT }), {
      configFile: 'out/admission.yaml',
      kubeconfigFile: 'out/admission-webhooks.kubeconfig',
      controlPlaneDir: '/etc/kubernetes/admission-gateway',
      certificate: '/pki/apiserver-webhook.crt',
      key: '/pki/apiserver-webhook.key',
    });
  });

  const refusals: [string, AdmissionFlags, string][] = [
    [
      'a companion without the file',
      { 'admission-client-key': '/k' },
      "--admission-client-key needs --admission-config FILE: it only shapes kube-apiserver's admission configuration",
    ],
    [
      'the file without the certificate',
      { 'admission-config': 'a.yaml' },
      '--admission-config needs --admission-client-certificate and --admission-client-key: the certificate kube-apiserver presents to the gateway, and its key',
    ],
    [
      'a relative certificate path',
      { 'admission-config': 'a.yaml', ...CERT, 'admission-client-certificate': 'c.crt' },
      '--admission-client-certificate: expected the absolute path of the client certificate (PEM) on the control plane, got "c.crt"',
    ],
    [
      'standard output as the file',
      { 'admission-config': '-', ...CERT },
      '--admission-config: expected the path of the file to write (standard output carries the webhook configurations), got "-"',
    ],
  ];
  for (const [what, flags, message] of refusals) {
    it(`refuses ${what}`, () => {
      assert.throws(
        () => parseAdmissionOptions(flags),
        (err: unknown) => {
          assert.ok(err instanceof ManifestsUsageError);
          assert.equal(err.message, message);
          return true;
        },
      );
    });
  }
});
