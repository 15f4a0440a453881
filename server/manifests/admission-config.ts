/**
 * What kube-apiserver reads to present a client certificate to the gateway's admission webhooks: an
 * AdmissionConfiguration (`--admission-control-config-file`) that gives the Mutating- and
 * ValidatingAdmissionWebhook plugins a kubeconfig, and that kubeconfig, whose user entry is named by the webhooks'
 * server as the apiserver looks it up: `<service>.<namespace>.svc:<port>` for a Service, `host:port` for a URL.
 * Pure: the objects are built from their inputs; admission-command.ts writes them.
 */
import type { WebhookTarget } from './render.js';

export interface AdmissionKubeconfig {
  readonly apiVersion: 'v1';
  readonly kind: 'Config';
  readonly users: readonly [
    { readonly name: string; readonly user: { readonly 'client-certificate': string; readonly 'client-key': string } },
  ];
}

export interface AdmissionConfiguration {
  readonly apiVersion: 'apiserver.config.k8s.io/v1';
  readonly kind: 'AdmissionConfiguration';
  readonly plugins: readonly {
    readonly name: 'ValidatingAdmissionWebhook' | 'MutatingAdmissionWebhook';
    readonly configuration: {
      readonly apiVersion: 'apiserver.config.k8s.io/v1';
      readonly kind: 'WebhookAdmissionConfiguration';
      readonly kubeConfigFile: string;
    };
  }[];
}

/**
 * The name kube-apiserver looks a webhook's credentials up by (k8s.io/apiserver's webhook authentication
 * resolver): the Service's DNS name with its port, or the URL's host and port (443 when it has none).
 */
export function webhookServerName(target: WebhookTarget): string {
  if (target.kind === 'service') return `${target.name}.${target.namespace}.svc:${target.port}`;
  const url = new URL(target.url);
  return `${url.hostname}:${url.port || '443'}`;
}

export function renderAdmissionKubeconfig(
  target: WebhookTarget,
  certificate: string,
  key: string,
): AdmissionKubeconfig {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    users: [{ name: webhookServerName(target), user: { 'client-certificate': certificate, 'client-key': key } }],
  };
}

export function renderAdmissionConfiguration(kubeconfigFile: string): AdmissionConfiguration {
  const configuration = {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'WebhookAdmissionConfiguration',
    kubeConfigFile: kubeconfigFile,
  } as const;
  return {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'AdmissionConfiguration',
    plugins: [
      { name: 'ValidatingAdmissionWebhook', configuration },
      { name: 'MutatingAdmissionWebhook', configuration },
    ],
  };
}
