/**
 * `manifests --authorization-kubeconfig FILE`: checks the authorization flags against the configuration,
 * writes the kubeconfig kube-apiserver's webhook authorizer reads, and prints on stderr the apiserver flags
 * that turn it on (stdout keeps the webhook configurations, for kubectl).
 */
import path from 'node:path';
import type { GatewayConfig } from '../config/types.js';
import { apiserverFlagReasons, apiserverFlags } from './apiserver-flags.js';
import {
  AUTHORIZE_PATH,
  defaultAuthorizerOrigin,
  isClusterDnsName,
  renderAuthorizationKubeconfig,
} from './authorization-kubeconfig.js';
import type { AuthorizationOptions } from './authorization-options.js';
import { renderAuthorizationConfig } from './authorization-config.js';
import type { AuthorizeMatch } from '../authorization/authorize-match.js';
import type { Exclusions } from '../authorization/exclusions.js';
import type { ManifestsOptions } from './options.js';
import { toYaml } from './output.js';
import { writeRendered } from './rendered-file.js';
import type { WebhookTarget } from './render.js';
import { ManifestsUsageError } from './usage-error.js';

/**
 * The problems only the configuration shows, raised before anything is generated: a certificate the
 * gateway does not serve from files, or client certificates it asks for (or does not).
 */
export function checkAuthorizationConfig(
  authorization: AuthorizationOptions,
  caBundle: ManifestsOptions['caBundle'],
  config: GatewayConfig,
): void {
  const { secretName } = config.kube.certificate;
  if (secretName && config.kube.enabled !== false && caBundle.kind !== 'file') {
    // The server.tls files (generated here if missing) are not what the gateway serves: a kubeconfig trusting
    // their CA would fail every call, silently (a failed call is no opinion).
    const namespace = config.kube.certificate.secretNamespace || config.server.service.namespace;
    throw new ManifestsUsageError(
      `--authorization-kubeconfig: the gateway serves the certificate of the Secret ${namespace}/${secretName} ` +
        `(kube.certificate.secretName), not the server.tls files; pass --ca with that Secret's ca.crt: ` +
        `kubectl -n ${namespace} get secret ${secretName} -o jsonpath='{.data.ca\\.crt}' | base64 -d > gateway-ca.crt`,
    );
  }
  const asksForCertificates = config.server.tls.clientCAFile !== '';
  if (asksForCertificates && !authorization.clientCertificate) {
    throw new ManifestsUsageError(
      '--authorization-kubeconfig: server.tls.clientCAFile is set, so the gateway refuses clients without a ' +
        'certificate; pass --authorization-client-certificate and --authorization-client-key (absolute paths on ' +
        'the control plane of a certificate that CA signed, and its key)',
    );
  }
  if (!asksForCertificates && authorization.clientCertificate) {
    throw new ManifestsUsageError(
      '--authorization-client-certificate: the gateway asks for no client certificate (server.tls.clientCAFile ' +
        'is empty); leave out --authorization-client-certificate and --authorization-client-key',
    );
  }
}

/** What the AuthorizationConfiguration needs of each authorize step. */
export type AuthorizeSteps = readonly { readonly matchSpec: AuthorizeMatch; readonly timeoutMs: number }[];

export interface AuthorizationOutput {
  readonly name: string;
  readonly target: WebhookTarget;
  readonly caBundle: string;
  readonly cwd: string;
  /** The command line after `manifests`, for the header. */
  readonly command: string;
  readonly note: (text: string) => void;
  /** The chain's authorize steps, for the AuthorizationConfiguration's match conditions. */
  readonly authorize: AuthorizeSteps;
  readonly exclusions: Exclusions;
  /** Authorize steps may join at run time: no condition on the steps' matches. */
  readonly allRequests: boolean;
  /** The webhook authorizer's timeout. */
  readonly timeoutSeconds: number;
}

function clusterDnsWarning(server: string): string {
  return [
    `WARNING: the authorization webhook calls ${server}, a cluster Service name. kube-apiserver runs on the ` +
      `host network and resolves it with the host's resolver, which usually does not know cluster DNS names; ` +
      `every call would then fail, and a failed call counts as no opinion: the gateway would forbid nothing, ` +
      `without an error anywhere but the apiserver's log.`,
    "  Pass --authorization-url https://HOST[:PORT] with an address the control plane reaches (the Service's " +
      'ClusterIP, a NodePort, a load balancer) and that the serving certificate names (server.tls.dnsNames, ' +
      'server.tls.ipAddresses).',
  ].join('\n');
}

/** Writes the AuthorizationConfiguration; returns what to say about it. */
async function writeAuthorizationConfig(
  authorization: AuthorizationOptions & { readonly configFile: string },
  output: AuthorizationOutput,
): Promise<string[]> {
  const config = renderAuthorizationConfig({
    modes: authorization.modes,
    name: output.name,
    kubeconfigFile: authorization.controlPlaneFile,
    timeoutSeconds: output.timeoutSeconds,
    exclusions: output.exclusions,
    matches: output.authorize.map((step) => step.matchSpec),
    allRequests: output.allRequests,
  });
  const header = [
    `Rendered by \`${output.command}\`: regenerate it, do not edit it by hand.`,
    `kube-apiserver's --authorization-config (${authorization.configControlPlaneFile}), Kubernetes 1.32+: the`,
    'authorizers in order, the gateway (deny or no opinion, never allow) only asked about the requests its',
    'authorize steps match (docs/authorization-webhook.md in the admission-gateway repository).',
  ];
  const file = path.resolve(output.cwd, authorization.configFile);
  await writeRendered(file, toYaml([config], header), 'authorization-config');
  if (output.authorize.length === 0 && !output.allRequests) {
    output.note(
      'the chain has no authorize step: the AuthorizationConfiguration never calls the gateway (its match condition is false)',
    );
  }
  return [
    `wrote ${file}: kube-apiserver's AuthorizationConfiguration (the gateway's webhook reads ${authorization.controlPlaneFile}).`,
    `Put both files in ${path.posix.dirname(authorization.configControlPlaneFile)} on every control-plane node, and replace ` +
      'the --authorization-mode and --authorization-webhook-* flags of kube-apiserver (they exclude each other) with:',
    `  --authorization-config=${authorization.configControlPlaneFile}`,
    'Why:',
    '  the authorizers keep their order with the gateway placed as --authorization-mode would place it; ' +
      'failurePolicy NoOpinion: a gateway that cannot be reached forbids nothing and locks nobody out; the ' +
      'matchConditions keep off the gateway the identities it never judges' +
      (output.allRequests
        ? ' (every other request is sent: authorize steps may be added at run time).'
        : ' and the requests no authorize step matches.'),
    '  kube-apiserver watches the file: a regenerated one takes effect without a restart (the kubeconfig is read at start).',
  ];
}

/** Writes the kubeconfig (and the AuthorizationConfiguration when asked) and prints what to do with them. */
export async function writeAuthorizationKubeconfig(
  authorization: AuthorizationOptions,
  output: AuthorizationOutput,
): Promise<void> {
  const origin = authorization.url ?? defaultAuthorizerOrigin(output.target);
  const kubeconfig = renderAuthorizationKubeconfig({
    name: output.name,
    origin,
    caBundle: output.caBundle,
    clientCertificate: authorization.clientCertificate,
  });
  const server = `${origin}${AUTHORIZE_PATH}`;
  const header = [
    `Rendered by \`${output.command}\`: regenerate it, do not edit it by hand.`,
    `The kubeconfig of kube-apiserver's --authorization-webhook-config-file (${authorization.controlPlaneFile}):`,
    'it sends each SubjectAccessReview to the gateway, which answers deny or no opinion, never allow',
    '(docs/authorization-webhook.md in the admission-gateway repository).',
  ];
  const file = path.resolve(output.cwd, authorization.kubeconfigFile);
  await writeRendered(file, toYaml([kubeconfig], header), 'authorization-kubeconfig');
  if (isClusterDnsName(origin)) output.note(clusterDnsWarning(server));
  const { configFile } = authorization;
  if (configFile !== undefined) {
    output.note(
      [
        `wrote ${file}: the kubeconfig of kube-apiserver's authorization webhook (calls ${server}).`,
        ...(await writeAuthorizationConfig({ ...authorization, configFile }, output)),
      ].join('\n'),
    );
    return;
  }
  output.note(
    [
      `wrote ${file}: the kubeconfig of kube-apiserver's authorization webhook (calls ${server}).`,
      `Put it at ${authorization.controlPlaneFile} on every control-plane node and add these kube-apiserver flags ` +
        '(keep the others; docs/authorization-webhook.md says how, and how to remove them):',
      ...apiserverFlags(authorization.modes, authorization.controlPlaneFile).map((flag) => `  ${flag}`),
      'Why:',
      ...apiserverFlagReasons(authorization.modes, authorization.hadWebhook),
    ].join('\n'),
  );
}
