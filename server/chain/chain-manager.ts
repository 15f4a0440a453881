/**
 * Owns the current chain: the static plugin steps, the steps of entries that change at run time (native policies
 * read from the cluster, set whole by their watcher), plus the steps of every remote provider's runtime (a
 * StepSource, made by the `createRuntime` it is given). Provider changes (discovery results, a new set of
 * dynamic providers) rebuild the chain off the request path — coalesced, then swapped in whole. Runtimes whose
 * entry did not change are kept, so their breakers and connection pools survive a rebuild.
 */
import type { Logger } from '../base/log.js';
import type { ProviderEntry } from '../config/types.js';
import { createChain, type Chain } from './chain.js';
import type { StepSource } from '../steps/step-source.js';
import type { Step } from '../steps/step.js';
import type { AuthorizeStep } from '../authorization/authorize-step.js';

export interface ChainManagerDeps<R extends StepSource> {
  readonly pluginSteps: readonly Step[];
  /**
   * The steps of entries whose steps change at run time (an `admissionPolicies` entry with `fromCluster: true`),
   * by entry name: at first those of its files, then as `setEntrySteps` sets them.
   */
  readonly entrySteps?: ReadonlyMap<string, readonly Step[]>;
  /** The plugins' authorize steps. */
  readonly pluginAuthorizeSteps?: readonly AuthorizeStep[];
  readonly createRuntime: (entry: ProviderEntry, onChange: (runtime: R) => void) => Promise<R>;
  /** Called with every new chain (after the first build too). */
  readonly onChain: (chain: Chain) => void;
  /** Called when a provider's status may have changed (discovery, breaker state). */
  readonly onProviderChange?: (runtime: R) => void;
  readonly log: Logger;
}

export interface ChainManager<R extends StepSource = StepSource> {
  current(): Chain;
  /** Replaces the set of providers; unchanged entries keep their runtime. Resolves once the chain is rebuilt. */
  setProviders(entries: readonly ProviderEntry[]): Promise<void>;
  /** Replaces the steps of entry `name` (one of `entrySteps`'s; any other is ignored) and swaps the chain whole. */
  setEntrySteps(name: string, steps: readonly Step[]): void;
  /** Whether `setEntrySteps` has set some entry's steps: the chain is no longer the one its files make. */
  entryStepsSet(): boolean;
  runtimes(): readonly R[];
  close(): Promise<void>;
}

export function createChainManager<R extends StepSource>(deps: ChainManagerDeps<R>): ChainManager<R> {
  const runtimes = new Map<string, { key: string; runtime: R }>();
  const authorize = deps.pluginAuthorizeSteps ?? [];
  const entrySteps = new Map(deps.entrySteps);
  const staticSteps = () => [...deps.pluginSteps, ...[...entrySteps.values()].flat()];
  let chain = createChain(staticSteps(), authorize);
  let pending = false;
  let closed = false;
  let entryStepsSet = false;

  const rebuild = () => {
    pending = false;
    if (closed) return;
    const sources = [...runtimes.values()].map(({ runtime }) => runtime);
    chain = createChain(
      [...staticSteps(), ...sources.flatMap((runtime) => runtime.steps())],
      [...authorize, ...sources.flatMap((runtime) => runtime.authorizeSteps?.() ?? [])],
    );
    deps.onChain(chain);
  };
  const invalidate = (runtime: R) => {
    deps.onProviderChange?.(runtime);
    if (pending) return;
    pending = true;
    queueMicrotask(rebuild);
  };

  return {
    current: () => chain,
    runtimes: () => [...runtimes.values()].map((r) => r.runtime),
    async setProviders(entries) {
      const wanted = new Map(entries.map((e) => [e.name, e]));
      const retired: R[] = [];
      for (const [name, { key, runtime }] of runtimes) {
        const next = wanted.get(name);
        if (!next || JSON.stringify(next) !== key) {
          runtimes.delete(name);
          retired.push(runtime);
        }
      }
      for (const entry of entries) {
        if (runtimes.has(entry.name)) continue;
        const runtime = await deps.createRuntime(entry, invalidate);
        runtimes.set(entry.name, { key: JSON.stringify(entry), runtime });
        void runtime.discover();
      }
      rebuild();
      // In-flight reviews may still hold the old steps; their pools close gracefully (pending requests finish).
      await Promise.all(
        retired.map((r) =>
          r
            .close()
            .catch((err: unknown) => deps.log.warn({ provider: r.name, err: String(err) }, 'closing provider failed')),
        ),
      );
    },
    setEntrySteps(name, steps) {
      if (!entrySteps.has(name)) return;
      entrySteps.set(name, steps);
      entryStepsSet = true;
      rebuild();
    },
    entryStepsSet: () => entryStepsSet,
    async close() {
      closed = true;
      await Promise.all([...runtimes.values()].map(({ runtime }) => runtime.close()));
      runtimes.clear();
    },
  };
}
