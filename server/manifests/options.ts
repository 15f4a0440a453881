/**
 * The `manifests` command's flags, checked before anything is read or generated; every problem is a
 * ManifestsUsageError (exit 2) that names the flag, what was expected and what was given.
 */
import { isDnsLabel, isDnsSubdomain, isLabelKey, isLabelValue } from '../config/names.js';
import {
  parseAuthorizationOptions,
  type AuthorizationFlags,
  type AuthorizationOptions,
} from './authorization-options.js';
import { parseAdmissionOptions, type AdmissionFlags, type AdmissionOptions } from './admission-options.js';
import { parseHttpsOrigin } from './https-origin.js';
import {
  NEWEST_TESTED,
  SINCE,
  atLeast,
  formatKubeVersion,
  parseKubeVersion,
  type KubeVersion,
} from './kube-version.js';
import type { WebhookTarget } from './render.js';
import { ManifestsUsageError } from './usage-error.js';

export { ManifestsUsageError };

/** The flags as parseArgs returns them (strings and booleans; repeatable flags as lists). */
export interface ManifestsFlags extends AuthorizationFlags, AdmissionFlags {
  readonly service?: string | undefined;
  readonly url?: string | undefined;
  readonly ca?: string | undefined;
  readonly 'no-ca-bundle'?: boolean | undefined;
  readonly name?: string | undefined;
  readonly output?: string | undefined;
  readonly 'all-resources'?: boolean | undefined;
  readonly 'namespace-label'?: readonly string[] | undefined;
  readonly 'exclude-namespace'?: readonly string[] | undefined;
  readonly 'kube-version'?: string | undefined;
}

export interface ManifestsOptions {
  /** Undefined: the config's server.service on port 443. */
  readonly target: WebhookTarget | undefined;
  readonly caBundle:
    { readonly kind: 'empty' } | { readonly kind: 'file'; readonly file: string } | { readonly kind: 'serving' };
  readonly name: string;
  readonly output: 'yaml' | 'json';
  readonly allResources: boolean;
  readonly namespaceLabels: Readonly<Record<string, string>>;
  readonly excludeNamespaces: readonly string[];
  /** `--authorization-kubeconfig` and its companions; undefined when not asked for. */
  readonly authorization: AuthorizationOptions | undefined;
  /** The Kubernetes version rendered for (default: the newest tested). */
  readonly kubeVersion: KubeVersion;
  /** `--admission-config` and its companions (client certificates for the webhooks); undefined when not asked for. */
  readonly admission: AdmissionOptions | undefined;
}

export const DEFAULT_NAME = 'admission-gateway';
export const DEFAULT_SERVICE_PORT = 443;

/** `NAMESPACE/NAME[:PORT]`. */
export function parseService(value: string): WebhookTarget {
  const m = /^([^/:]+)\/([^/:]+)(?::(.*))?$/.exec(value);
  const expected = 'expected NAMESPACE/NAME[:PORT]';
  if (!m) throw new ManifestsUsageError(`--service: ${expected}, got "${value}"`);
  const [, namespace = '', name = '', portText] = m;
  if (!isDnsLabel(namespace)) {
    throw new ManifestsUsageError(
      `--service: namespace "${namespace}" is not a lower-case DNS-1123 label (${expected})`,
    );
  }
  if (!isDnsLabel(name)) {
    throw new ManifestsUsageError(`--service: name "${name}" is not a lower-case DNS-1123 label (${expected})`);
  }
  const port = portText === undefined ? DEFAULT_SERVICE_PORT : Number(portText);
  if (!/^\d+$/.test(portText ?? '443') || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new ManifestsUsageError(`--service: expected a port from 1 to 65535 after ":", got "${portText}"`);
  }
  return { kind: 'service', namespace, name, port };
}

/** `--url https://HOST[:PORT]`: the webhooks' routes are appended. */
export function parseUrl(value: string): WebhookTarget {
  const routes = 'the routes /mutate, /validate/fail and /validate/ignore are appended';
  return { kind: 'url', url: parseHttpsOrigin(value, '--url', routes) };
}

function parseNamespaceLabels(values: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const item of values) {
    const eq = item.indexOf('=');
    const key = eq < 0 ? item : item.slice(0, eq);
    const value = eq < 0 ? '' : item.slice(eq + 1);
    if (eq < 0 || !isLabelKey(key) || !isLabelValue(value)) {
      throw new ManifestsUsageError(
        `--namespace-label: expected KEY=VALUE with a valid label key and value, got "${item}"`,
      );
    }
    if (key in labels && labels[key] !== value) {
      throw new ManifestsUsageError(`--namespace-label: "${key}" is given twice with different values`);
    }
    labels[key] = value;
  }
  return labels;
}

export function parseManifestsOptions(flags: ManifestsFlags): ManifestsOptions {
  if (flags.service !== undefined && flags.url !== undefined) {
    throw new ManifestsUsageError(
      '--service and --url exclude each other: the webhooks call either a Service or a URL',
    );
  }
  if (flags.ca !== undefined && flags['no-ca-bundle']) {
    throw new ManifestsUsageError('--ca and --no-ca-bundle exclude each other');
  }
  const name = flags.name ?? DEFAULT_NAME;
  if (!isDnsSubdomain(name)) {
    throw new ManifestsUsageError(`--name: expected a lower-case DNS-1123 subdomain, got "${name}"`);
  }
  const output = flags.output ?? 'yaml';
  if (output !== 'yaml' && output !== 'json') {
    throw new ManifestsUsageError(`--output: expected yaml or json, got "${output}"`);
  }
  const excludeNamespaces = flags['exclude-namespace'] ?? [];
  for (const ns of excludeNamespaces) {
    if (!isDnsLabel(ns)) throw new ManifestsUsageError(`--exclude-namespace: expected a namespace name, got "${ns}"`);
  }
  let target: WebhookTarget | undefined;
  if (flags.service !== undefined) target = parseService(flags.service);
  if (flags.url !== undefined) target = parseUrl(flags.url);
  const kubeVersion = flags['kube-version'] === undefined ? NEWEST_TESTED : parseKubeVersion(flags['kube-version']);
  const authorization = parseAuthorizationOptions(flags);
  if (authorization?.configFile !== undefined && !atLeast(kubeVersion, SINCE.structuredAuthorization)) {
    throw new ManifestsUsageError(
      `--authorization-config: kube-apiserver reads an AuthorizationConfiguration from Kubernetes ` +
        `1.${SINCE.structuredAuthorization} on, and --kube-version is ${formatKubeVersion(kubeVersion)}; leave ` +
        `--authorization-config out and add the flags printed for --authorization-kubeconfig instead`,
    );
  }
  return {
    target,
    caBundle: flags['no-ca-bundle']
      ? { kind: 'empty' }
      : flags.ca !== undefined
        ? { kind: 'file', file: flags.ca }
        : { kind: 'serving' },
    name,
    output,
    allResources: flags['all-resources'] === true,
    namespaceLabels: parseNamespaceLabels(flags['namespace-label'] ?? []),
    excludeNamespaces,
    authorization,
    kubeVersion,
    admission: parseAdmissionOptions(flags),
  };
}
