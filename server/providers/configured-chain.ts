/**
 * The chain of a configuration: its plugin entries' steps (unknown plugins or bad settings throw ConfigError,
 * exit 2) and a runtime per provider entry, owned by a chain manager. What `serve`, `review` and `manifests`
 * all run on.
 */
import type { Dispatcher } from 'undici';
import type { Logger } from '../base/log.js';
import { buildPluginEntries, type Chain, type PluginEntrySteps } from '../chain/chain.js';
import { createChainManager, type ChainManager } from '../chain/chain-manager.js';
import { createPluginRegistry, type AnyPlugin } from '../chain/plugin-registry.js';
import { unknownPlugin } from '../base/did-you-mean.js';
import { ConfigError } from '../base/errors.js';
import { locateConfigError } from '../config/field-positions.js';
import type { ChainEntry, GatewayConfig, NativePoliciesEntry, ProviderEntry } from '../config/types.js';
import { buildNativeSteps } from '../native-policy/native-steps.js';
import type { Step } from '../steps/step.js';
import type { Metrics } from '../metrics/metrics.js';
import {
  createProviderRuntime,
  type ProviderParts,
  type ProviderRuntime,
  type ProviderRuntimeDeps,
} from './provider-runtime.js';

/** The chain manager of a configuration, its dynamic steps those of remote providers. */
export type ProviderChains = ChainManager<ProviderRuntime>;

export interface ConfiguredChainDeps {
  readonly metrics: Metrics;
  readonly log: Logger;
  /** Sees the first chain and every rebuild. */
  readonly onChain: (chain: Chain) => void;
  /** Discovery backoff and refresh of remote providers (shortened in tests). */
  readonly discovery?: ProviderRuntimeDeps['discovery'];
  /** Called when a provider's status may have changed (for AdmissionProvider status). */
  readonly onProviderChange?: (runtime: ProviderRuntime) => void;
  /**
   * What a provider entry's calls go through instead of a connection pool of its own: `admission-gateway test`
   * answers them from its test file through undici's MockAgent.
   */
  readonly providerDispatcher?: (entry: ProviderEntry) => Dispatcher | undefined;
  /** Each provider's client and breaker in place of its own (a large-review lane worker's). */
  readonly providerParts?: ProviderParts;
}

/** An `admissionPolicies` entry with `fromCluster: true`: its steps change as the cluster's policies do. */
export function isClusterEntry(entry: ChainEntry): entry is NativePoliciesEntry {
  return entry.kind === 'admissionPolicies' && entry.fromCluster;
}

/** Without the cluster's policies (no cluster, an offline command), a `fromCluster` entry says so once, at start. */
export function warnFilesOnly(config: GatewayConfig, log: Logger, why: string): void {
  for (const entry of config.chain.filter(isClusterEntry))
    log.warn(
      { admissionPolicies: entry.name },
      `fromCluster: true, but ${why}: the entry runs the policies of its files only`,
    );
}

export async function createChainForConfig(
  config: GatewayConfig,
  plugins: readonly AnyPlugin[],
  deps: ConfiguredChainDeps,
): Promise<ProviderChains> {
  let plugin: PluginEntrySteps;
  const entrySteps = new Map<string, Step[]>();
  try {
    const registry = createPluginRegistry(plugins);
    // Refused here rather than by the chain, so that the message can say where a plugin becomes known.
    const unknown = config.chain.find((e) => e.kind === 'plugin' && !registry.has(e.plugin));
    if (unknown?.kind === 'plugin') {
      throw new ConfigError(config.file, `${unknown.path}.plugin`, unknownPlugin(unknown.plugin, registry.keys()));
    }
    // The steps of an entry reading the cluster's policies change at run time: the manager keeps them apart.
    plugin = buildPluginEntries(
      config.chain.filter((e) => !isClusterEntry(e)),
      registry,
      config.file,
    );
    for (const entry of config.chain) {
      if (isClusterEntry(entry)) entrySteps.set(entry.name, buildNativeSteps(entry, config.file));
    }
  } catch (err) {
    // Unknown plugins and plugin settings are checked here, after validation: give them their line too.
    throw locateConfigError(err, config.file, config.locateField);
  }
  const manager = createChainManager<ProviderRuntime>({
    pluginSteps: plugin.steps,
    pluginAuthorizeSteps: plugin.authorize,
    entrySteps,
    createRuntime: (entry, onChange) =>
      createProviderRuntime(entry, {
        metrics: deps.metrics,
        log: deps.log,
        onChange,
        ...(deps.discovery ? { discovery: deps.discovery } : {}),
        ...(deps.providerDispatcher ? { dispatcher: deps.providerDispatcher(entry) } : {}),
        ...(deps.providerParts ? { parts: deps.providerParts } : {}),
      }),
    onChain: deps.onChain,
    ...(deps.onProviderChange ? { onProviderChange: deps.onProviderChange } : {}),
    log: deps.log,
  });
  try {
    await manager.setProviders(config.chain.filter((e): e is ProviderEntry => e.kind === 'provider'));
  } catch (err) {
    await manager.close();
    // A provider entry's caBundle and client certificate are checked as its runtime is made: name the file and line.
    const inFile = err instanceof ConfigError ? new ConfigError(config.file, err.path, err.expected) : err;
    throw locateConfigError(inFile, config.file, config.locateField);
  }
  // Declarations that cannot be ordered are a config error at start; later (providers registered at run time)
  // the steps concerned run as barriers, and the problem is logged and shown in /chain.
  const [problem] = manager.current().problems;
  if (problem) {
    await manager.close();
    const entry = config.chain.find((e) => e.name === problem.steps[0]);
    throw locateConfigError(
      new ConfigError(config.file, entry ? `${entry.path}.${problem.field}` : 'chain', problem.message),
      config.file,
      config.locateField,
    );
  }
  return manager;
}
