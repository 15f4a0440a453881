/**
 * The `manifests` flags that make kube-apiserver present a client certificate when it calls the gateway's
 * admission webhooks (`--admission-*`), checked before anything is read: each problem is a ManifestsUsageError
 * naming the flag. The check that needs the configuration (the gateway asks for client certificates, or not)
 * is made where it is loaded (admission-command.ts).
 */
import path from 'node:path';
import { ManifestsUsageError } from './usage-error.js';

/** The flags as parseArgs returns them. */
export interface AdmissionFlags {
  readonly 'admission-config'?: string | undefined;
  readonly 'admission-client-certificate'?: string | undefined;
  readonly 'admission-client-key'?: string | undefined;
  readonly 'admission-control-plane-dir'?: string | undefined;
}

export interface AdmissionOptions {
  /** Where the AdmissionConfiguration is written, relative to the working directory. */
  readonly configFile: string;
  /** Where its kubeconfig is written: beside it, under KUBECONFIG_NAME. */
  readonly kubeconfigFile: string;
  /** The folder on the control plane both files go to. */
  readonly controlPlaneDir: string;
  /** Paths on the control plane of the certificate and key kube-apiserver presents. */
  readonly certificate: string;
  readonly key: string;
}

/** A folder of its own, the one the authorization webhook's files use too: one hostPath to mount. */
export const DEFAULT_CONTROL_PLANE_DIR = '/etc/kubernetes/admission-gateway';
export const CONFIG_NAME = 'admission-config.yaml';
export const KUBECONFIG_NAME = 'admission-webhooks.kubeconfig';

const COMPANIONS = ['admission-client-certificate', 'admission-client-key', 'admission-control-plane-dir'] as const;

/** kube-apiserver resolves a relative path against its own working directory, which is not where this runs. */
function absolute(value: string, flag: string, what: string): string {
  if (!path.posix.isAbsolute(value)) {
    throw new ManifestsUsageError(
      `--${flag}: expected the absolute path of ${what} on the control plane, got "${value}"`,
    );
  }
  return value;
}

/** Undefined when `--admission-config` is not given (and no companion flag is). */
export function parseAdmissionOptions(flags: AdmissionFlags): AdmissionOptions | undefined {
  const file = flags['admission-config'];
  if (file === undefined) {
    const stray = COMPANIONS.find((flag) => flags[flag] !== undefined);
    if (stray) {
      throw new ManifestsUsageError(
        `--${stray} needs --admission-config FILE: it only shapes kube-apiserver's admission configuration`,
      );
    }
    return undefined;
  }
  if (file === '' || file === '-') {
    throw new ManifestsUsageError(
      `--admission-config: expected the path of the file to write (standard output carries the webhook ` +
        `configurations), got "${file}"`,
    );
  }
  const certificate = flags['admission-client-certificate'];
  const key = flags['admission-client-key'];
  if (certificate === undefined || key === undefined) {
    throw new ManifestsUsageError(
      '--admission-config needs --admission-client-certificate and --admission-client-key: the certificate ' +
        'kube-apiserver presents to the gateway, and its key',
    );
  }
  return {
    configFile: file,
    kubeconfigFile: path.join(path.dirname(file), KUBECONFIG_NAME),
    controlPlaneDir: absolute(
      flags['admission-control-plane-dir'] ?? DEFAULT_CONTROL_PLANE_DIR,
      'admission-control-plane-dir',
      'the folder for these files',
    ),
    certificate: absolute(certificate, 'admission-client-certificate', 'the client certificate (PEM)'),
    key: absolute(key, 'admission-client-key', 'its key (PEM)'),
  };
}
