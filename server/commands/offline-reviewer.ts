/**
 * What the offline commands (`review`, `replay`, `audit`, `test`) run a config's chain with: its logger, metrics
 * and chain, and (`review`, `replay`, `test`) the reviewer they run it with: no cluster (namespace selectors see
 * only the name label, as without one, unless `test` says a namespace's labels), the config's deadline
 * settings; a decision trace for `onReviewed` when given (`review --explain`).
 */
import { Registry } from 'prom-client';
import { availablePlugins } from '../../plugins/index.js';
import { createLogger, type BindableLogger, type LogLevel } from '../base/log.js';
import type { AnyPlugin } from '../chain/plugin-registry.js';
import type { Chain } from '../chain/chain.js';
import {
  createReviewer,
  standaloneNamespaceLabels,
  type NamespaceLabelSource,
  type ReviewedRequest,
  type Reviewer,
} from '../dispatch/reviewer.js';
import type { GatewayConfig } from '../config/types.js';
import type { ExceptionSource } from '../exceptions/exception-source.js';
import { createMetrics, type Metrics } from '../metrics/metrics.js';
import {
  createChainForConfig,
  warnFilesOnly,
  type ConfiguredChainDeps,
  type ProviderChains,
} from '../providers/configured-chain.js';

/** Warnings and errors only, unless the config asks for debug (or for less): the command's output is the result. */
const commandLogLevel = (level: LogLevel): LogLevel => (level === 'info' ? 'warn' : level);

/**
 * The chain of `config` for a command: logs on standard error in serve's format, metrics of its own; its
 * providers' calls go through `providerDispatcher` when given (`test`).
 */
/** What an offline command is given of the process: its output, its folder, the plugins compiled in. */
export interface CommandIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly cwd: string;
  readonly plugins?: readonly AnyPlugin[] | undefined;
}

export async function commandChain(
  config: GatewayConfig,
  io: { readonly stderr: (text: string) => void; readonly plugins?: readonly AnyPlugin[] | undefined },
  { providerDispatcher }: Pick<ConfiguredChainDeps, 'providerDispatcher'> = {},
): Promise<{ log: BindableLogger; metrics: Metrics; chains: ProviderChains }> {
  const log = createLogger(commandLogLevel(config.log.level), { write: io.stderr });
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
  warnFilesOnly(config, log, 'this command reads nothing from the cluster');
  const chains = await createChainForConfig(config, io.plugins ?? availablePlugins, {
    metrics,
    log,
    onChain: () => undefined,
    ...(providerDispatcher ? { providerDispatcher } : {}),
  });
  return { log, metrics, chains };
}

export function offlineReviewer(
  chain: Chain,
  deps: {
    readonly log: BindableLogger;
    readonly metrics: Metrics;
    readonly config: GatewayConfig;
    readonly onReviewed?: ((reviewed: ReviewedRequest) => void) | undefined;
    /** Where namespace labels come from; without a cluster, only the name label. */
    readonly namespaceLabels?: NamespaceLabelSource | undefined;
    /** The exceptions applied (README "Exceptions"); none without. */
    readonly exceptions?: ExceptionSource | undefined;
  },
): Reviewer {
  return createReviewer({
    chain: () => chain,
    metrics: deps.metrics,
    log: deps.log,
    namespaceLabels: deps.namespaceLabels ?? standaloneNamespaceLabels,
    deadlineMarginMs: deps.config.server.deadlineMarginMs,
    defaultTimeoutMs: deps.config.server.defaultTimeoutSeconds * 1000,
    ...(deps.onReviewed ? { onReviewed: deps.onReviewed } : {}),
    ...(deps.exceptions ? { exceptions: deps.exceptions } : {}),
  });
}
