/**
 * `admission-gateway provider`: plugin modules served as a remote provider (provider-sdk) until a stop signal.
 * The plugins are the shipped ones named by --plugin (settings from --settings NAME=JSON), or else the config's
 * plugin entries. The certificate is --tls-cert/--tls-key (a mounted Secret), or else the config's server.tls
 * (generated when missing, as serve does). With --register the provider registers itself as an
 * AdmissionProvider (provider-sdk/registration.ts), by --url or by the Service it runs behind.
 */
import { access } from 'node:fs/promises';
import path from 'node:path';
import { unknownPlugin } from '../base/did-you-mean.js';
import { ConfigError, errorMessage } from '../base/errors.js';
import { MAX_TLS_FILE_BYTES } from '../base/limits.js';
import { readRegularFile } from '../base/regular-file.js';
import { connectionFieldsOf } from '../config/connection-bounds.js';
import { locateConfigError } from '../config/field-positions.js';
import { EMBEDDED_CONFIG } from '../config/load.js';
import { isDnsLabel } from '../config/names.js';
import type { GatewayConfig } from '../config/types.js';
import { createLogger, type Logger } from '../base/log.js';
import type { AnyPlugin } from '../chain/plugin-registry.js';
import { findKubeconfig, loadKubeConfig } from '../kube/kube-config.js';
import { RegistrationOptionsError, type RegistrationDefaults } from '../provider-sdk/registration-spec.js';
import type { RegistrationOptions } from '../provider-sdk/registration.js';
import { serveProvider, type ProvidedPlugin } from '../provider-sdk/serve-provider.js';
import { defaultCaFile, ensureConfiguredCertificate, loadTlsMaterial } from '../tls/serving-certificate.js';
import { REGISTRATION_OPTIONS, UsageError, type Values } from './usage.js';

export interface ProviderCommandIO {
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  /** Resolves when the process is asked to stop. */
  readonly stopSignal: () => Promise<string>;
  readonly plugins: readonly AnyPlugin[];
}

/** Which flag sets a registration field, for messages about its value. */
const FLAG_OF_FIELD: Readonly<Record<string, string>> = {
  'metadata.name': '--provider-name',
  'spec.order': '--order',
  'spec.failurePolicy': '--failure-policy',
  'spec.timeoutSeconds': '--timeout-seconds',
  'spec.url': '--url',
  'spec.service': '--service',
  'spec.caBundle': '--ca-file',
};

function knownPlugin(name: string, plugins: readonly AnyPlugin[]): AnyPlugin {
  const plugin = plugins.find((p) => p.name === name);
  if (plugin) return plugin;
  throw new UsageError(
    `provider: ${unknownPlugin(
      name,
      plugins.map((p) => p.name),
    )}`,
  );
}

/** `--settings NAME=JSON` values by plugin name. */
function settingsByPlugin(values: readonly string[], plugins: readonly string[]): Map<string, unknown> {
  const settings = new Map<string, unknown>();
  for (const item of values) {
    const eq = item.indexOf('=');
    const name = eq < 0 ? item : item.slice(0, eq);
    if (eq < 0) throw new UsageError(`--settings: expected PLUGIN=JSON, got "${item}"`);
    if (!plugins.includes(name)) {
      throw new UsageError(`--settings ${name}: no --plugin ${name} to give them to`);
    }
    if (settings.has(name)) throw new UsageError(`--settings ${name}: given twice`);
    try {
      settings.set(name, JSON.parse(item.slice(eq + 1)) as unknown);
    } catch (err) {
      throw new UsageError(`--settings ${name}: expected JSON: ${errorMessage(err)}`);
    }
  }
  return settings;
}

/** What to serve: the --plugin list, or the config's plugin entries (`skipped`: its provider entries). */
export function servedPlugins(
  config: GatewayConfig,
  values: Values,
  plugins: readonly AnyPlugin[],
): { served: ProvidedPlugin[]; skipped: string[] } {
  const named = values.plugin ?? [];
  if (named.length > 0) {
    const twice = named.find((n, i) => named.indexOf(n) !== i);
    if (twice) throw new UsageError(`--plugin ${twice}: given twice (serve one plugin twice with --config)`);
    const settings = settingsByPlugin(values.settings ?? [], named);
    const served = named.map((name) => ({
      plugin: knownPlugin(name, plugins),
      ...(settings.has(name) ? { settings: settings.get(name) } : {}),
    }));
    return { served, skipped: [] };
  }
  if (values.settings?.length) {
    throw new UsageError('--settings goes with --plugin (a config’s plugin entries carry their own settings)');
  }
  const entries = config.chain.filter((e) => e.kind === 'plugin');
  const skipped = config.chain.filter((e) => e.kind === 'provider').map((e) => e.name);
  if (entries.length === 0)
    throw new UsageError('provider: the config has no plugin entries to serve (or name --plugin)');
  const served = entries.map((e) => ({
    plugin: knownPlugin(e.plugin, plugins),
    name: e.name,
    ...(e.settings !== undefined ? { settings: e.settings } : {}),
  }));
  return { served, skipped };
}

/** `[NAMESPACE/]NAME[:PORT]`; the namespace defaults to POD_NAMESPACE (the downward API's metadata.namespace). */
export function parseServiceFlag(
  value: string,
  env: NodeJS.ProcessEnv,
): { namespace: string; name: string; port: number } {
  const expected = 'expected [NAMESPACE/]NAME[:PORT]';
  const m = /^(?:([^/:]+)\/)?([^/:]+)(?::(\d{1,5}))?$/.exec(value);
  if (!m) throw new UsageError(`--service: ${expected}, got "${value}"`);
  const [, givenNamespace, name = '', portText] = m;
  const namespace = givenNamespace ?? env.POD_NAMESPACE ?? '';
  if (!namespace) {
    throw new UsageError(`--service ${value}: no namespace (write NAMESPACE/NAME or set POD_NAMESPACE)`);
  }
  for (const [what, label] of [
    ['namespace', namespace],
    ['name', name],
  ]) {
    if (!isDnsLabel(label!))
      throw new UsageError(`--service: ${what} "${label}" is not a DNS-1123 label (${expected})`);
  }
  const port = portText === undefined ? 443 : Number(portText);
  if (port < 1 || port > 65535) throw new UsageError(`--service: expected a port from 1 to 65535, got ${portText}`);
  return { namespace, name, port };
}

function integerFlag(values: Values, flag: 'order' | 'timeout-seconds'): number | undefined {
  const text = values[flag];
  if (text === undefined) return undefined;
  if (!/^-?\d{1,7}$/.test(text)) throw new UsageError(`--${flag}: expected an integer, got "${text}"`);
  return Number(text);
}

function registrationDefaults(values: Values): RegistrationDefaults {
  const policy = values['failure-policy'];
  if (policy !== undefined && policy !== 'Fail' && policy !== 'Ignore') {
    throw new UsageError(`--failure-policy: expected Fail or Ignore, got "${policy}"`);
  }
  const order = integerFlag(values, 'order');
  const timeoutSeconds = integerFlag(values, 'timeout-seconds');
  return {
    ...(order !== undefined ? { order } : {}),
    ...(policy !== undefined ? { failurePolicy: policy } : {}),
    ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
  };
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

async function readCa(file: string): Promise<string> {
  let pem: string;
  try {
    pem = (await readRegularFile(file, MAX_TLS_FILE_BYTES)).toString('utf8');
  } catch (err) {
    throw new UsageError(`--ca-file: cannot read "${file}": ${errorMessage(err)}`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----'))
    throw new UsageError(`--ca-file: "${file}" holds no PEM certificate`);
  return pem;
}

/** The serving certificate and key, and the CA to register (the flag's, else a ca.crt beside the certificate). */
async function servingMaterial(config: GatewayConfig, values: Values, cwd: string, log: Logger) {
  const tlsCert = values['tls-cert'];
  const tlsKey = values['tls-key'];
  let certFile: string;
  let keyFile: string;
  if (tlsCert !== undefined && tlsKey !== undefined) {
    // A mounted Secret: read as it is, never generated into (the mount is read-only).
    [certFile, keyFile] = [path.resolve(cwd, tlsCert), path.resolve(cwd, tlsKey)];
  } else {
    await ensureConfiguredCertificate(config.server.tls, log);
    ({ certFile, keyFile } = config.server.tls);
  }
  const { cert, key } = await loadTlsMaterial(certFile, keyFile);
  const explicitCa = values['ca-file'];
  const caFile = explicitCa !== undefined ? path.resolve(cwd, explicitCa) : defaultCaFile(certFile);
  const ca = explicitCa !== undefined || (await exists(caFile)) ? await readCa(caFile) : undefined;
  return { tls: { cert, key }, ca };
}

/** What --register asks for, checked before anything is read (undefined without --register). */
function registrationFlags(values: Values, env: NodeJS.ProcessEnv) {
  if (!values.register) {
    const stray = REGISTRATION_OPTIONS.find((flag) => values[flag] !== undefined);
    if (stray) throw new UsageError(`--${stray} goes with --register`);
    return undefined;
  }
  if ((values.url === undefined) === (values.service === undefined)) {
    throw new UsageError('--register needs where the gateway reaches the provider: --service or --url (one of them)');
  }
  const service = values.service !== undefined ? parseServiceFlag(values.service, env) : undefined;
  const name = values['provider-name'] ?? service?.name;
  if (!name)
    throw new UsageError('--register needs --provider-name (the Service’s name is the default with --service)');
  const owner = values['owner-clusterrolebinding'];
  return {
    name,
    ...(service ? { service } : { url: values.url! }),
    ...(owner !== undefined ? { ownerClusterRoleBinding: owner } : {}),
    defaults: registrationDefaults(values),
  };
}

/** The credentials, found as cluster mode finds them (--kubeconfig first). */
async function kubeConfigFor(config: GatewayConfig, values: Values, io: ProviderCommandIO) {
  const section = {
    ...config.kube,
    enabled: true,
    kubeconfig: values.kubeconfig !== undefined ? path.resolve(io.cwd, values.kubeconfig) : config.kube.kubeconfig,
  };
  if (!(await findKubeconfig(section, io.env))) {
    throw new UsageError(
      '--register: no credentials: --kubeconfig, KUBECONFIG, ~/.kube/config or an in-cluster service account',
    );
  }
  return (await loadKubeConfig(section, io.env))!;
}

/**
 * A plugin's settings refused, said where they were given: `--settings NAME` for --plugin, else the config
 * entry (with its line).
 */
function settingsError(err: ConfigError, config: GatewayConfig, values: Values): unknown {
  const m = /^plugins\[(\d+)\](.*)$/.exec(err.path);
  if (!m) return err;
  const index = Number(m[1]);
  const named = values.plugin ?? [];
  if (named.length > 0) {
    const rest = m[2]!.replace(/^\.settings\.?/, '');
    return new UsageError(`--settings ${named[index]}: ${rest ? `${rest}: ` : ''}${err.expected}`);
  }
  const entry = config.chain.filter((e) => e.kind === 'plugin')[index];
  if (!entry) return err;
  return locateConfigError(
    new ConfigError(config.file, `${entry.path}${m[2]}`, err.expected),
    config.file,
    config.locateField,
  );
}

/** A registration the SDK refuses, as a usage error naming the flag that set the field. */
function asUsageError(err: RegistrationOptionsError): UsageError {
  const field = /^register(?:\.\w+)?: ([\w.]+)/.exec(err.message)?.[1] ?? '';
  const known = Object.keys(FLAG_OF_FIELD).find((f) => field === f || field.startsWith(`${f}.`));
  return new UsageError(`provider: ${err.message}${known ? ` (${FLAG_OF_FIELD[known]})` : ''}`);
}

/**
 * The port is taken. Without --port it is the config's, and a gateway running from the same gateway.yaml holds
 * that one: say where the port came from and how to choose another.
 */
export function portInUse(config: GatewayConfig, values: Values): Error {
  const { host, port } = config.server;
  const taken = `provider: port ${port} on ${host} is in use by another process`;
  if (values.port !== undefined) return new Error(`${taken}: --port ${port} chose it; choose another`);
  return new Error(
    `${taken} (a running gateway?): it is ${portOrigin(config)}; --port N serves the provider on another`,
  );
}

function portOrigin({ file, locateField }: GatewayConfig): string {
  if (file === EMBEDDED_CONFIG) return 'server.port of the embedded default config';
  // A field that is not written is placed at its nearest written ancestor (field-positions.ts).
  const at = locateField?.('server.port');
  const server = locateField?.('server');
  if (at && (!server || at.line !== server.line || at.col !== server.col)) {
    return `server.port at ${file}:${at.line}:${at.col}`;
  }
  return `the default server.port (${file} sets none)`;
}

/** Serves until the stop signal; returns the exit code. */
export async function runProvider(config: GatewayConfig, values: Values, io: ProviderCommandIO): Promise<number> {
  // Every flag is checked before the logger (and its flush timer) exists and before any file is read.
  const { served, skipped } = servedPlugins(config, values, io.plugins);
  const flags = registrationFlags(values, io.env);
  if ((values['tls-cert'] === undefined) !== (values['tls-key'] === undefined)) {
    throw new UsageError('--tls-cert and --tls-key go together');
  }
  const log = createLogger(config.log.level);
  if (skipped.length > 0) log.warn({ skipped }, 'provider: the provider entries of the config are not served');
  const { tls, ca } = await servingMaterial(config, values, io.cwd, log);
  const register: RegistrationOptions | undefined = flags && {
    ...flags,
    kubeConfig: await kubeConfigFor(config, values, io),
    ...(ca !== undefined ? { ca } : {}),
  };
  let server;
  try {
    server = await serveProvider({
      plugins: served,
      tls,
      host: config.server.host,
      port: config.server.port,
      log,
      maxRequestBytes: config.server.maxRequestBytes,
      // The provider's server is bounded as the gateway's would be.
      ...connectionFieldsOf(config.server),
      ...(register ? { register } : {}),
    });
  } catch (err) {
    if (err instanceof RegistrationOptionsError) throw asUsageError(err);
    if (err instanceof ConfigError) throw settingsError(err, config, values);
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw portInUse(config, values);
    throw err;
  }
  const signal = await io.stopSignal();
  log.info({ signal }, 'stopping');
  await server.close();
  log.flush();
  return 0;
}
