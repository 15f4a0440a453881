/**
 * The `manifests` flags that render kube-apiserver's authorization webhook (`--authorization-*`), checked
 * before anything is read: each problem is a ManifestsUsageError naming the flag, what was expected and what
 * was given. The checks that need the configuration (client certificates, a Secret-managed CA) are made
 * where it is loaded (authorization-command.ts).
 */
import path from 'node:path';
import {
  DEFAULT_AUTHORIZATION_MODES,
  parseAuthorizationModes,
  withWebhook,
  type AuthorizationMode,
} from './authorization-mode.js';
import { parseHttpsOrigin } from './https-origin.js';
import { ManifestsUsageError } from './usage-error.js';

/** The flags as parseArgs returns them. */
export interface AuthorizationFlags {
  readonly 'authorization-kubeconfig'?: string | undefined;
  readonly 'authorization-config'?: string | undefined;
  readonly 'authorization-url'?: string | undefined;
  readonly 'authorization-mode'?: string | undefined;
  readonly 'authorization-webhook-config-file'?: string | undefined;
  readonly 'authorization-client-certificate'?: string | undefined;
  readonly 'authorization-client-key'?: string | undefined;
  readonly 'no-ca-bundle'?: boolean | undefined;
}

export interface AuthorizationOptions {
  /** Where the kubeconfig is written, relative to the working directory. */
  readonly kubeconfigFile: string;
  /** `https://HOST[:PORT]` the apiserver calls; undefined: --url, else the Service (with a warning). */
  readonly url: string | undefined;
  /** The `--authorization-mode` to print: the current one with Webhook in its place. */
  readonly modes: readonly AuthorizationMode[];
  /** Whether the current `--authorization-mode` already named Webhook (another authorization webhook, or a former render). */
  readonly hadWebhook: boolean;
  /** Where the kubeconfig will be on the control plane: the printed `--authorization-webhook-config-file`. */
  readonly controlPlaneFile: string;
  /** Paths on the control plane of the certificate and key the apiserver presents (mutual TLS). */
  readonly clientCertificate: { readonly certificate: string; readonly key: string } | undefined;
  /** Where the AuthorizationConfiguration is written, relative to the working directory; undefined: not asked. */
  readonly configFile: string | undefined;
  /** Where it will be on the control plane: beside the kubeconfig, for the printed `--authorization-config`. */
  readonly configControlPlaneFile: string;
}

/** A folder of its own: a kubeadm static Pod mounts it read-only without exposing anything else. */
export const DEFAULT_CONTROL_PLANE_FILE = '/etc/kubernetes/admission-gateway/authorization-webhook.kubeconfig';

/** The AuthorizationConfiguration's name in the kubeconfig's folder on the control plane. */
export const CONTROL_PLANE_CONFIG_NAME = 'authorization-config.yaml';

const DEPENDENT_FLAGS = [
  'authorization-config',
  'authorization-url',
  'authorization-mode',
  'authorization-webhook-config-file',
  'authorization-client-certificate',
  'authorization-client-key',
] as const;

/**
 * A path the kube-apiserver reads: absolute, since it would resolve a relative one against its own working
 * directory (the webhook config file) or the kubeconfig's folder (client certificate) — neither is where the
 * command runs, so a relative path here would silently point elsewhere.
 */
function controlPlanePath(value: string, flag: string, what: string): string {
  if (!path.posix.isAbsolute(value)) {
    throw new ManifestsUsageError(
      `--${flag}: expected the absolute path of ${what} on the control plane, got "${value}"`,
    );
  }
  return value;
}

function clientCertificate(flags: AuthorizationFlags): AuthorizationOptions['clientCertificate'] {
  const certificate = flags['authorization-client-certificate'];
  const key = flags['authorization-client-key'];
  if (certificate === undefined && key === undefined) return undefined;
  if (certificate === undefined || key === undefined) {
    throw new ManifestsUsageError(
      `--authorization-client-certificate and --authorization-client-key go together: the apiserver presents the ` +
        `certificate with its key, got only --${certificate === undefined ? 'authorization-client-key' : 'authorization-client-certificate'}`,
    );
  }
  return {
    certificate: controlPlanePath(certificate, 'authorization-client-certificate', 'the client certificate (PEM)'),
    key: controlPlanePath(key, 'authorization-client-key', 'its key (PEM)'),
  };
}

/** Undefined when `--authorization-kubeconfig` is not given (and no other authorization flag is). */
export function parseAuthorizationOptions(flags: AuthorizationFlags): AuthorizationOptions | undefined {
  const file = flags['authorization-kubeconfig'];
  if (file === undefined) {
    const stray = DEPENDENT_FLAGS.find((flag) => flags[flag] !== undefined);
    if (stray) {
      throw new ManifestsUsageError(
        `--${stray} needs --authorization-kubeconfig FILE: it only shapes the authorization webhook's kubeconfig` +
          `${stray === 'authorization-config' ? ' (which the AuthorizationConfiguration names)' : ''}`,
      );
    }
    return undefined;
  }
  if (file === '' || file === '-') {
    throw new ManifestsUsageError(
      `--authorization-kubeconfig: expected the path of the file to write (standard output carries the webhook ` +
        `configurations), got "${file}"`,
    );
  }
  if (flags['no-ca-bundle']) {
    throw new ManifestsUsageError(
      '--authorization-kubeconfig and --no-ca-bundle exclude each other: the kubeconfig must carry the CA, since ' +
        'nothing patches one into a file on the control plane (pass --ca FILE for another CA)',
    );
  }
  const configFile = flags['authorization-config'];
  if (configFile === '' || configFile === '-' || (configFile !== undefined && configFile === file)) {
    throw new ManifestsUsageError(
      `--authorization-config: expected the path of a file to write besides the kubeconfig, got "${configFile}"`,
    );
  }
  const urlFlag = flags['authorization-url'];
  const modeFlag = flags['authorization-mode'];
  const current = modeFlag === undefined ? DEFAULT_AUTHORIZATION_MODES : parseAuthorizationModes(modeFlag);
  if (typeof current === 'string') throw new ManifestsUsageError(`--authorization-mode: ${current}`);
  const controlPlaneFile = controlPlanePath(
    flags['authorization-webhook-config-file'] ?? DEFAULT_CONTROL_PLANE_FILE,
    'authorization-webhook-config-file',
    'the kubeconfig',
  );
  return {
    kubeconfigFile: file,
    url:
      urlFlag === undefined
        ? undefined
        : parseHttpsOrigin(urlFlag, '--authorization-url', 'the route /authorize is appended'),
    modes: withWebhook(current),
    hadWebhook: current.includes('Webhook'),
    controlPlaneFile,
    clientCertificate: clientCertificate(flags),
    configFile,
    configControlPlaneFile: path.posix.join(path.posix.dirname(controlPlaneFile), CONTROL_PLANE_CONFIG_NAME),
  };
}
