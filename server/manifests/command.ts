/**
 * `admission-gateway manifests`: resolves the configured chain (plugin defaults and settings checked as at
 * start, providers discovered once), finds the caBundle the way `certs` does, renders the webhook
 * configurations and prints them; with --authorization-kubeconfig it also writes the authorization webhook's
 * kubeconfig. Notes go to stderr so stdout can be piped into kubectl.
 */
import path from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { AnyPlugin } from '../chain/plugin-registry.js';
import type { GatewayConfig } from '../config/types.js';
import { errorMessage } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { createMetrics } from '../metrics/metrics.js';
import { createChainForConfig } from '../providers/configured-chain.js';
import { ensureConfiguredCertificate, servingCaBundle } from '../tls/serving-certificate.js';
import { exclusionsFor } from '../authorization/exclusions.js';
import { checkAdmissionConfig, writeAdmissionConfig } from './admission-command.js';
import {
  checkAuthorizationConfig,
  writeAuthorizationKubeconfig,
  type AuthorizeSteps,
} from './authorization-command.js';
import { catchAllFailWarnings } from './catch-all-warning.js';
import { DEFAULT_SERVICE_PORT, ManifestsUsageError, type ManifestsOptions } from './options.js';
import { toJsonList, toYaml } from './output.js';
import { SINCE, atLeast, formatKubeVersion, type KubeVersion } from './kube-version.js';
import {
  EXCLUDE_LABEL,
  excludedNamespaces,
  renderWebhookConfigurations,
  stepConditionNotes,
  webhookTimeoutSeconds,
  type RenderStep,
  type WebhookTarget,
} from './render.js';
import { renderStepsOf } from './steps.js';

export interface ManifestsDeps {
  readonly config: GatewayConfig;
  readonly plugins: readonly AnyPlugin[];
  readonly cwd: string;
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** The command line after `manifests`, repeated in the YAML header so the file says how to regenerate it. */
  readonly args: readonly string[];
}

function note(deps: ManifestsDeps, text: string): void {
  deps.stderr(`admission-gateway: ${text}\n`);
}

/** The chain's admission steps, and what the authorization configuration needs of its authorize steps. */
interface ResolvedSteps {
  readonly admission: RenderStep[];
  readonly authorize: AuthorizeSteps;
}

/** The chain's steps; providers with discovery get one attempt, as `review` does. */
async function resolveSteps(deps: ManifestsDeps): Promise<ResolvedSteps> {
  const chains = await createChainForConfig(deps.config, deps.plugins, {
    metrics: createMetrics(new Registry(), { defaultMetrics: false }),
    // Discovery problems are reported below in one line each, not as JSON log lines.
    log: pino({ level: 'silent' }),
    onChain: () => undefined,
  });
  try {
    await Promise.all(chains.runtimes().map((r) => r.discover()));
    for (const runtime of chains.runtimes()) {
      const status = runtime.status();
      if (!status.ready) {
        note(
          deps,
          `provider "${runtime.name}" could not be discovered (${status.lastError ?? 'no answer'}): ` +
            `its configured phases are rendered with its configured match`,
        );
      }
    }
    const chain = chains.current();
    return {
      admission: renderStepsOf(chain),
      authorize: chain.authorize.map((step) => ({ matchSpec: step.matchSpec, timeoutMs: step.timeoutMs })),
    };
  } finally {
    await chains.close();
  }
}

/** The TLS module's logger, as plain lines on stderr (it only speaks when it generates a certificate). */
function tlsLogger(deps: ManifestsDeps): Logger {
  const line = (_obj: object, msg?: string) => note(deps, msg ?? '');
  return { debug: () => undefined, info: line, warn: line, error: line };
}

async function readCaBundle(options: ManifestsOptions, deps: ManifestsDeps): Promise<string> {
  const how = options.caBundle;
  if (how.kind === 'empty') return '';
  const { tls } = deps.config.server;
  if (how.kind !== 'file') {
    try {
      await ensureConfiguredCertificate(tls, tlsLogger(deps));
    } catch (err) {
      throw new ManifestsUsageError(
        `${errorMessage(err)}; pass --ca FILE, or --no-ca-bundle when the gateway patches the caBundle in`,
      );
    }
  }
  const caFile = how.kind === 'file' ? path.resolve(deps.cwd, how.file) : undefined;
  return servingCaBundle(tls.certFile, caFile).catch((err: unknown) => {
    throw new ManifestsUsageError(errorMessage(err));
  });
}

function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

function commandLine(deps: ManifestsDeps): string {
  return ['admission-gateway', 'manifests', ...deps.args].map(shellWord).join(' ');
}

/** How the header says the namespaces are excluded, which depends on the version rendered for. */
function exclusionLines(version: KubeVersion, excluded: readonly string[]): string[] {
  if (atLeast(version, SINCE.webhookMatchConditions)) {
    return [
      'Excluded, so the gateway can never lock the cluster (or itself) out:',
      `- by matchConditions: namespaces ${excluded.join(', ')}, and Leases anywhere;`,
      `- by namespaceSelector: namespaces labelled ${EXCLUDE_LABEL}.`,
    ];
  }
  if (atLeast(version, SINCE.namespaceNameLabel)) {
    return [
      `Namespaces ${excluded.join(', ')} and any labelled ${EXCLUDE_LABEL} are excluded,`,
      'so the gateway can never lock the cluster (or itself) out.',
    ];
  }
  return [
    `Namespaces labelled ${EXCLUDE_LABEL} are excluded. Kubernetes ${formatKubeVersion(version)} has no namespace name`,
    `label: label ${excluded.join(', ')} with ${EXCLUDE_LABEL}=true before applying this file.`,
  ];
}

function header(options: ManifestsOptions, deps: ManifestsDeps, excluded: readonly string[], ca: string): string[] {
  return [
    `Rendered by \`${commandLine(deps)}\` for Kubernetes ${formatKubeVersion(options.kubeVersion)}:`,
    'regenerate it from the configured chain, do not edit it by hand.',
    ...(ca === ''
      ? [
          'No caBundle: the gateway in cluster mode patches it in, and re-applying this file keeps it (or render with --ca).',
        ]
      : []),
    ...exclusionLines(options.kubeVersion, excluded),
    ...(options.allResources
      ? ['--all-resources: every request goes to the gateway, for AdmissionProviders added at run time.']
      : []),
  ];
}

/** Whether AdmissionProviders may join the chain at run time: steps this render cannot know of. */
const runTimeProviders = (config: GatewayConfig): boolean =>
  config.kube.enabled !== false && config.kube.watchProviders;

export async function runManifests(options: ManifestsOptions, deps: ManifestsDeps): Promise<void> {
  const { config } = deps;
  const service = config.server.service;
  const target: WebhookTarget = options.target ?? { kind: 'service', ...service, port: DEFAULT_SERVICE_PORT };
  const gatewayNamespace = target.kind === 'service' ? target.namespace : service.namespace;
  const { authorization } = options;
  if (authorization) checkAuthorizationConfig(authorization, options.caBundle, config);
  const admissionNotes = checkAdmissionConfig(options.admission, config);
  const { admission: steps, authorize } = await resolveSteps(deps);
  const caBundle = await readCaBundle(options, deps);
  const renderOptions = {
    name: options.name,
    target,
    caBundle,
    gatewayNamespace,
    excludeNamespaces: options.excludeNamespaces,
    namespaceLabels: options.namespaceLabels,
    allResources: options.allResources,
    deadlineMarginMs: config.server.deadlineMarginMs,
    defaultTimeoutSeconds: config.server.defaultTimeoutSeconds,
    kubeVersion: options.kubeVersion,
  };
  const objects = renderWebhookConfigurations(steps, renderOptions);
  for (const text of stepConditionNotes(steps, renderOptions)) note(deps, text);
  for (const warning of catchAllFailWarnings(steps, options.allResources)) note(deps, warning);
  for (const text of admissionNotes) note(deps, text);
  if (runTimeProviders(config) && !options.allResources) {
    note(
      deps,
      'kube.watchProviders is on: AdmissionProviders added at run time only see the requests these rules match ' +
        '(and only on the routes rendered here); render with --all-resources to send every request to the gateway',
    );
  }
  if (objects.length === 0) note(deps, `the chain of ${config.file} has no steps: no webhook configuration rendered`);
  const excluded = excludedNamespaces(gatewayNamespace, options.excludeNamespaces);
  if (!atLeast(options.kubeVersion, SINCE.namespaceNameLabel) && objects.length > 0) {
    note(
      deps,
      `Kubernetes ${formatKubeVersion(options.kubeVersion)} does not label namespaces with their name: before applying, ` +
        `kubectl label namespace ${excluded.join(' ')} ${EXCLUDE_LABEL}=true`,
    );
  }
  if (options.admission) {
    await writeAdmissionConfig(options.admission, {
      target,
      cwd: deps.cwd,
      command: commandLine(deps),
      note: (text) => note(deps, text),
    });
  }
  if (authorization) {
    await writeAuthorizationKubeconfig(authorization, {
      name: options.name,
      target,
      caBundle,
      cwd: deps.cwd,
      command: commandLine(deps),
      note: (text) => note(deps, text),
      authorize,
      exclusions: exclusionsFor(gatewayNamespace),
      allRequests: options.allResources || runTimeProviders(config),
      timeoutSeconds: webhookTimeoutSeconds(authorize, {
        allResources: options.allResources,
        defaultTimeoutSeconds: config.server.defaultTimeoutSeconds,
        deadlineMarginMs: config.server.deadlineMarginMs,
      }),
    });
  }
  deps.stdout(
    options.output === 'json' ? toJsonList(objects) : toYaml(objects, header(options, deps, excluded, caBundle)),
  );
}
