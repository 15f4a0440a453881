/**
 * `manifests --admission-config FILE`: checks the flags against the configuration (the gateway asks for client
 * certificates), writes the AdmissionConfiguration and the kubeconfig it names, and prints on stderr where they
 * go and the kube-apiserver flag that reads them (stdout keeps the webhook configurations, for kubectl).
 */
import path from 'node:path';
import type { GatewayConfig } from '../config/types.js';
import { renderAdmissionConfiguration, renderAdmissionKubeconfig, webhookServerName } from './admission-config.js';
import { CONFIG_NAME, KUBECONFIG_NAME, type AdmissionOptions } from './admission-options.js';
import { writeRendered } from './rendered-file.js';
import { toYaml } from './output.js';
import type { WebhookTarget } from './render.js';
import { ManifestsUsageError } from './usage-error.js';

/** Client certificates and the configuration go together: one without the other fails every call. */
export function checkAdmissionConfig(admission: AdmissionOptions | undefined, config: GatewayConfig): string[] {
  const asks = config.server.tls.clientCAFile !== '';
  if (admission && !asks) {
    throw new ManifestsUsageError(
      '--admission-config: the gateway asks for no client certificate (server.tls.clientCAFile is empty); set it ' +
        'to the CA that signed --admission-client-certificate, or leave the --admission-* flags out',
    );
  }
  if (!admission && asks) {
    return [
      'server.tls.clientCAFile is set: the gateway refuses every caller without a client certificate that CA ' +
        'signed, kube-apiserver included. Render with --admission-config FILE --admission-client-certificate PATH ' +
        '--admission-client-key PATH, or every webhook call fails (and its failurePolicy decides).',
    ];
  }
  return [];
}

export interface AdmissionOutput {
  readonly target: WebhookTarget;
  readonly cwd: string;
  /** The command line, for the headers. */
  readonly command: string;
  readonly note: (text: string) => void;
}

export async function writeAdmissionConfig(admission: AdmissionOptions, output: AdmissionOutput): Promise<void> {
  const controlPlaneKubeconfig = path.posix.join(admission.controlPlaneDir, KUBECONFIG_NAME);
  const controlPlaneConfig = path.posix.join(admission.controlPlaneDir, CONFIG_NAME);
  const header = (what: string) => [`Rendered by \`${output.command}\`: regenerate it, do not edit it by hand.`, what];
  const kubeconfig = path.resolve(output.cwd, admission.kubeconfigFile);
  const config = path.resolve(output.cwd, admission.configFile);
  await writeRendered(
    kubeconfig,
    toYaml(
      [renderAdmissionKubeconfig(output.target, admission.certificate, admission.key)],
      header(
        `The client certificate kube-apiserver presents to the gateway's admission webhooks (${controlPlaneKubeconfig}).`,
      ),
    ),
    'admission-config',
  );
  await writeRendered(
    config,
    toYaml(
      [renderAdmissionConfiguration(controlPlaneKubeconfig)],
      header(`kube-apiserver's --admission-control-config-file (${controlPlaneConfig}).`),
    ),
    'admission-config',
  );
  output.note(
    [
      `wrote ${config} and ${kubeconfig}: kube-apiserver presents ${admission.certificate} when it calls the ` +
        `webhooks at ${webhookServerName(output.target)}.`,
      `Put both files in ${admission.controlPlaneDir} on every control-plane node and add this kube-apiserver flag:`,
      `  --admission-control-config-file=${controlPlaneConfig}`,
      'If kube-apiserver already has an admission configuration, add these two plugins to its list instead (one ' +
        'file per apiserver), and the user entry to the kubeconfig they name.',
    ].join('\n'),
  );
}
