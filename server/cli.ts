/**
 * The `admission-gateway` command line: serve, certs, review, replay, manifests, provider, openapi, audit, test,
 * version. Exit codes: 0 ok, 1 runtime failure or a failed test case, 2 bad usage or invalid config or test file
 * (with a message naming the file and field), 3 a refused
 * review or a newly denied replay with --exit-code, 4 a replay answered differently with --exit-code.
 */
import path from 'node:path';
import { availablePlugins } from '../plugins/index.js';
import type { AnyPlugin } from './chain/plugin-registry.js';
import { locateConfigError } from './config/field-positions.js';
import { configFilePaths } from './config/file-paths.js';
import { EMBEDDED_CONFIG, loadConfig } from './config/load.js';
import type { GatewayConfig } from './config/types.js';
import { ReviewDecodeError } from './admission/review-decode-error.js';
import { ConfigError, PluginRegistrationError, errorMessage } from './base/errors.js';
import { startGateway } from './gateway.js';
import { warnFilesOnly } from './providers/configured-chain.js';
import { createLogger } from './base/log.js';
import { packageVersion } from './base/version.js';
import { auditCommand, runAuditCommand } from './commands/audit.js';
import { runProvider } from './commands/provider.js';
import { replayCommand, runReplay } from './commands/replay.js';
import { reviewCommand, runReviewCommand } from './commands/review.js';
import { runTests, testCommand } from './commands/test.js';
import { writeRecordedTests } from './commands/test-from-recording.js';
import { HELP, UsageError, parseCommandLine, type Values } from './commands/usage.js';
import { loadKubeConfig } from './kube/kube-config.js';
import { runManifests } from './manifests/command.js';
import { loadManifestsConfig } from './manifests/config-source.js';
import { ManifestsUsageError, parseManifestsOptions } from './manifests/options.js';
import { defaultCaFile, ensureConfiguredCertificate, servingCaBundle } from './tls/serving-certificate.js';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** Where the CLI writes; injected so tests can capture it. */
export interface CliIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly stdin: () => Promise<string>;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  /** Resolves when the process is asked to stop (SIGTERM/SIGINT). */
  readonly stopSignal: () => Promise<string>;
  readonly plugins?: readonly AnyPlugin[];
}

function portOption(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new UsageError(`--${flag}: expected a port number, got "${value}"`);
  return n;
}

async function configFrom(values: Values, io: CliIO): Promise<GatewayConfig> {
  const explicit = values.config ?? io.env.GATEWAY_CONFIG;
  return loadConfig(explicit ?? 'gateway.yaml', { isDefaultLocation: explicit === undefined, cwd: io.cwd });
}

function withOverrides(config: GatewayConfig, values: Values): GatewayConfig {
  const port = portOption(values.port, 'port');
  const opsPort = portOption(values['ops-port'], 'ops-port');
  const healthPort = portOption(values['health-port'], 'health-port');
  const level = values['log-level'];
  if (level !== undefined && !['debug', 'info', 'warn', 'error', 'silent'].includes(level)) {
    throw new UsageError(`--log-level: expected debug, info, warn, error or silent, got "${level}"`);
  }
  return {
    ...config,
    server: {
      ...config.server,
      ...(port !== undefined ? { port } : {}),
      ...(opsPort !== undefined ? { opsPort } : {}),
      ...(healthPort !== undefined ? { healthPort } : {}),
    },
    log: level ? { level: level as GatewayConfig['log']['level'] } : config.log,
  };
}

async function serve(values: Values, io: CliIO): Promise<number> {
  const config = withOverrides(await configFrom(values, io), values);
  const log = createLogger(config.log.level);
  log.info(
    {
      config: config.file === EMBEDDED_CONFIG ? EMBEDDED_CONFIG : path.resolve(io.cwd, config.file),
      files: configFilePaths(config),
    },
    'configuration loaded',
  );
  const kc = await loadKubeConfig(config.kube, io.env);
  const needsCluster = config.kube.certificate.secretName
    ? 'kube.certificate.secretName'
    : config.server.opsAuth === 'kube'
      ? 'server.opsAuth'
      : undefined;
  if (!kc && needsCluster) {
    const err = new ConfigError(
      config.file,
      needsCluster,
      'needs cluster mode, but no kubeconfig or in-cluster service account was found',
    );
    throw locateConfigError(err, config.file, config.locateField);
  }
  const cluster = kc ? (await import('./kube/cluster-mode.js')).createClusterMode(kc, config, log) : undefined;
  log.info({ cluster: kc?.getCurrentCluster()?.server ?? null }, kc ? 'cluster mode' : 'standalone mode (no cluster)');
  if (!kc) warnFilesOnly(config, log, 'there is no cluster (standalone mode)');
  // The managed certificate Secret must be read (or created) before the webhook server can listen.
  const clusterOptions = await cluster?.prepare();
  const gateway = await startGateway({
    config,
    plugins: io.plugins ?? availablePlugins,
    log,
    inCluster: cluster !== undefined,
    ...clusterOptions,
  });
  cluster?.attach(gateway);
  const signal = await io.stopSignal();
  log.info({ signal }, 'stopping: draining in-flight reviews');
  await cluster?.stop();
  await gateway.close();
  log.info({}, 'stopped');
  log.flush();
  return EXIT_OK;
}

async function certs(args: readonly string[], values: Values, io: CliIO): Promise<number> {
  if (args.length > 0) throw new UsageError(`certs: unexpected argument "${args[0]}"`);
  const config = await configFrom(values, io);
  const { tls } = config.server;
  // Its own line below says what was generated; the logger only carries warnings.
  const log = createLogger('warn', { write: io.stderr });
  const ensured = await ensureConfiguredCertificate(tls, log);
  const caFile = values.ca ? path.resolve(io.cwd, values.ca) : defaultCaFile(tls.certFile);
  const bundle = await servingCaBundle(tls.certFile, caFile).catch((err: unknown) => {
    throw new UsageError(errorMessage(err));
  });
  if (ensured.generated) {
    const { caCertFile, caKeyFile, certFile, keyFile } = ensured.files;
    io.stderr(
      `admission-gateway certs: generated a CA (${caCertFile}, key ${caKeyFile}) and a serving certificate ` +
        `(${certFile}, key ${keyFile}); keys are mode 0600\n`,
    );
  } else {
    io.stderr(`admission-gateway certs: using the existing serving certificate ${tls.certFile} (key ${tls.keyFile})\n`);
  }
  io.stderr(`admission-gateway certs: standard output is the caBundle: ${caFile} in base64\n`);
  io.stdout(`${bundle}\n`);
  return EXIT_OK;
}

async function manifests(argv: readonly string[], positionals: string[], values: Values, io: CliIO): Promise<number> {
  if (positionals.length > 0) throw new UsageError(`manifests: unexpected argument "${positionals[0]}"`);
  try {
    const options = parseManifestsOptions(values);
    const explicit = values.config ?? io.env.GATEWAY_CONFIG;
    const config = await loadManifestsConfig(explicit ?? 'gateway.yaml', {
      isDefaultLocation: explicit === undefined,
      cwd: io.cwd,
    });
    // The command line minus the command word, for the "Rendered by" header.
    const args = argv.filter((_, i) => i !== argv.indexOf('manifests'));
    await runManifests(options, {
      config,
      plugins: io.plugins ?? availablePlugins,
      cwd: io.cwd,
      stdout: io.stdout,
      stderr: io.stderr,
      args,
    });
    return EXIT_OK;
  } catch (err) {
    if (err instanceof ManifestsUsageError) throw new UsageError(err.message);
    throw err;
  }
}

/** Runs the CLI; returns the exit code. */
export async function runCli(argv: readonly string[], io: CliIO): Promise<number> {
  try {
    const { command, args, values } = parseCommandLine(argv);
    if (values.version || command === 'version') {
      io.stdout(`admission-gateway ${packageVersion()}\n`);
      return EXIT_OK;
    }
    if (values.help) {
      io.stdout(`${HELP[command ?? 'main']}\n`);
      return EXIT_OK;
    }
    switch (command ?? 'serve') {
      case 'serve':
        if (args.length > 0) throw new UsageError(`serve: unexpected argument "${args[0]}"`);
        return await serve(values, io);
      case 'certs':
        return await certs(args, values, io);
      case 'manifests':
        return await manifests(argv, [...args], values, io);
      case 'provider':
        if (args.length > 0) throw new UsageError(`provider: unexpected argument "${args[0]}"`);
        return await runProvider(withOverrides(await configFrom(values, io), values), values, {
          ...io,
          plugins: io.plugins ?? availablePlugins,
        });
      case 'audit':
        return await runAuditCommand(auditCommand(args, values), await configFrom(values, io), io);
      case 'replay': {
        const replay = replayCommand(args, {
          offline: values.offline,
          output: values.output,
          exitCode: values['exit-code'],
          exceptions: values.exceptions,
        });
        return await runReplay(replay, await configFrom(values, io), io);
      }
      case 'test': {
        const command = testCommand(args, {
          output: values.output,
          config: values.config,
          fromRecording: values['from-recording'],
          write: values.write,
        });
        return command.fromRecording
          ? await writeRecordedTests(command.fromRecording, await configFrom(values, io), io)
          : await runTests(command, io);
      }
      case 'openapi':
        if (args.length > 0) throw new UsageError(`openapi: unexpected argument "${args[0]}"`);
        // Imported here: only this command needs the schema library, and loading it costs every start.
        (await import('./commands/openapi.js')).printOpenApi(io.stdout);
        return EXIT_OK;
      default: {
        const review = reviewCommand(args, values.route, values['exit-code'] === true, {
          explain: values.explain === true,
          output: values.output,
          exceptions: values.exceptions,
        });
        return await runReviewCommand(review, await configFrom(values, io), io);
      }
    }
  } catch (err) {
    return reportError(err, io);
  }
}

/** The message for a failed command on stderr; returns the exit code. */
function reportError(err: unknown, io: CliIO): number {
  if (err instanceof UsageError) {
    io.stderr(`admission-gateway${err.command ? ` ${err.command}` : ''}: ${err.message}\n`);
    if (err.hint) io.stderr(`${err.hint}\n`);
    return EXIT_USAGE;
  }
  if (err instanceof ConfigError || err instanceof PluginRegistrationError) {
    io.stderr(`admission-gateway: ${err.message}\n`);
    return EXIT_USAGE;
  }
  if (err instanceof ReviewDecodeError) {
    io.stderr(`admission-gateway: invalid AdmissionReview: ${err.message}\n`);
    return EXIT_USAGE;
  }
  if (err instanceof TypeError && (err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
    io.stderr(
      `admission-gateway: ${err.message}\nRun "admission-gateway --help" for the commands and their options.\n`,
    );
    return EXIT_USAGE;
  }
  io.stderr(`admission-gateway: ${errorMessage(err)}\n`);
  return EXIT_FAILURE;
}
