/**
 * The kubeconfig kube-apiserver's `--authorization-webhook-config-file` names: where its webhook authorizer
 * POSTs each SubjectAccessReview (the cluster's `server`, used as is, path included), the CA it trusts for the
 * gateway's serving certificate, and the client certificate it presents when the gateway asks for one. Pure:
 * the object is built from its inputs; command.ts writes it.
 */
import type { WebhookTarget } from './render.js';

/** The gateway's authorization route (server/http): the apiserver appends nothing but `?timeout=30s`. */
export const AUTHORIZE_PATH = '/authorize';

/** The user entry's name: the identity the entry stands for is kube-apiserver's own. */
export const KUBECONFIG_USER = 'kube-apiserver';

export interface AuthorizationKubeconfigOptions {
  /** The cluster and context name (the command's --name). */
  readonly name: string;
  /** `https://HOST[:PORT]` without a path. */
  readonly origin: string;
  /** base64 of the PEM CA bundle: the same caBundle as the webhook configurations'. */
  readonly caBundle: string;
  /** Paths on the control plane, when the gateway asks for client certificates (server.tls.clientCAFile). */
  readonly clientCertificate?: { readonly certificate: string; readonly key: string } | undefined;
}

export interface AuthorizationKubeconfig {
  readonly apiVersion: 'v1';
  readonly kind: 'Config';
  readonly clusters: readonly [
    {
      readonly name: string;
      readonly cluster: { readonly server: string; readonly 'certificate-authority-data': string };
    },
  ];
  readonly users: readonly [
    {
      readonly name: string;
      readonly user: { readonly 'client-certificate'?: string; readonly 'client-key'?: string };
    },
  ];
  readonly contexts: readonly [{ readonly name: string; readonly context: { cluster: string; user: string } }];
  readonly 'current-context': string;
}

/**
 * The origin the apiserver calls when no --authorization-url is given: --url's, else the Service's DNS name
 * (which kube-apiserver usually cannot resolve: see clusterDnsWarning).
 */
export function defaultAuthorizerOrigin(target: WebhookTarget): string {
  if (target.kind === 'url') return target.url;
  const port = target.port === 443 ? '' : `:${target.port}`;
  return `https://${target.name}.${target.namespace}.svc${port}`;
}

/** Whether `origin`'s host is a cluster Service name (`*.svc`, `*.svc.cluster.local`, …). */
export function isClusterDnsName(origin: string): boolean {
  return /\.svc(\.|$)/.test(new URL(origin).hostname);
}

export function renderAuthorizationKubeconfig(options: AuthorizationKubeconfigOptions): AuthorizationKubeconfig {
  const { name, clientCertificate } = options;
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name,
        cluster: { server: `${options.origin}${AUTHORIZE_PATH}`, 'certificate-authority-data': options.caBundle },
      },
    ],
    // No credentials unless the gateway asks for a client certificate: it authenticates nobody otherwise, and
    // a token here would only be one more secret on the control plane.
    users: [
      {
        name: KUBECONFIG_USER,
        user: clientCertificate
          ? { 'client-certificate': clientCertificate.certificate, 'client-key': clientCertificate.key }
          : {},
      },
    ],
    contexts: [{ name, context: { cluster: name, user: KUBECONFIG_USER } }],
    // Required: kube-apiserver's loader finds the cluster through the current context.
    'current-context': name,
  };
}
