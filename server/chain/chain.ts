/**
 * The resolved chain: an immutable snapshot of ordered steps with the per-route lists precomputed, so a
 * review reads one array. A new chain (a provider added, changed, removed or discovered) is built off the
 * request path and swapped in whole; in-flight reviews finish on the chain they started with.
 */
import type { Phase } from '../admission/types.js';
import { ConfigError, errorMessage } from '../base/errors.js';
import { STEP_DEFAULTS } from '../config/step-options.js';
import type { ChainEntry, PluginEntry } from '../config/types.js';
import { SettingsError } from '../plugin-api/settings.js';
import { compileMatch } from './match.js';
import { createPluginSteps } from './plugin-step.js';
import type { PluginRegistry } from './plugin-registry.js';
import { effectiveFailurePolicy, type Step } from './step.js';

/** The webhook routes (README "Routes"): a phase, optionally only the steps with one failure policy. */
export const ROUTES = [
  'mutate',
  'mutate/fail',
  'mutate/ignore',
  'validate',
  'validate/fail',
  'validate/ignore',
] as const;
export type Route = (typeof ROUTES)[number];

export function phaseOf(route: Route): Phase {
  return route.startsWith('mutate') ? 'mutate' : 'validate';
}

export interface Chain {
  readonly steps: readonly Step[];
  /** The steps a route runs, in order. */
  route(route: Route): readonly Step[];
  /** Whether any step of the route has a namespaceSelector (so the namespace's labels are needed). */
  needsNamespaceLabels(route: Route): boolean;
  /** `/chain`: the resolved order, matches, policies and live state. */
  describe(): { mutate: object[]; validate: object[] };
  /** `mutate=[a,b] validate=[c]`, for the log line at start and on every change. */
  summary(): string;
}

/** Orders by (order, name), the same rule for config entries and dynamic providers. */
export function byOrder(a: { order: number; name: string }, b: { order: number; name: string }): number {
  return a.order - b.order || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

export function createChain(steps: readonly Step[]): Chain {
  const ordered = [...steps].sort(byOrder);
  const routes = new Map<Route, readonly Step[]>();
  const needsNs = new Map<Route, boolean>();
  for (const route of ROUTES) {
    const [phase, policy] = route.split('/') as [Phase, 'fail' | 'ignore' | undefined];
    const list = ordered.filter(
      (s) => s.phase === phase && (!policy || effectiveFailurePolicy(s).toLowerCase() === policy),
    );
    routes.set(route, Object.freeze(list));
    needsNs.set(
      route,
      list.some((s) => s.match.needsNamespaceLabels),
    );
  }
  const names = (phase: Phase) => routes.get(phase)!.map((s) => s.name);
  return {
    steps: ordered,
    route: (route) => routes.get(route)!,
    needsNamespaceLabels: (route) => needsNs.get(route)!,
    describe: () => ({
      mutate: routes.get('mutate')!.map((s) => s.describe()),
      validate: routes.get('validate')!.map((s) => s.describe()),
    }),
    summary: () => `mutate=[${names('mutate').join(',')}] validate=[${names('validate').join(',')}]`,
  };
}

/** Builds the steps of one plugin entry, reporting settings problems with the entry's field path. */
export function pluginEntrySteps(entry: PluginEntry, registry: PluginRegistry, file: string): Step[] {
  const plugin = registry.get(entry.plugin);
  if (!plugin) {
    throw new ConfigError(
      file,
      `${entry.path}.plugin`,
      `unknown plugin "${entry.plugin}" (known: ${[...registry.keys()].sort().join(', ')})`,
    );
  }
  let settings: unknown;
  try {
    if (plugin.settings) settings = plugin.settings(entry.settings);
    else if (entry.settings !== undefined) throw new SettingsError('', 'this plugin takes no settings');
  } catch (err) {
    const sub = err instanceof SettingsError && err.path ? `.${err.path}` : '';
    const detail =
      err instanceof SettingsError ? err.message.slice(err.path ? err.path.length + 2 : 0) : errorMessage(err);
    throw new ConfigError(file, `${entry.path}.settings${sub}`, detail);
  }
  const defaults = plugin.defaults ?? {};
  const matchSpec = entry.match ?? plugin.match;
  return createPluginSteps(plugin, {
    name: entry.name,
    match: compileMatch(matchSpec),
    matchSpec,
    failurePolicy: entry.failurePolicy ?? defaults.failurePolicy ?? STEP_DEFAULTS.failurePolicy,
    timeoutMs: (entry.timeoutSeconds ?? defaults.timeoutSeconds ?? STEP_DEFAULTS.timeoutSeconds) * 1000,
    mode: entry.mode ?? defaults.mode ?? STEP_DEFAULTS.mode,
    sideEffects: entry.sideEffects ?? STEP_DEFAULTS.sideEffects,
    reinvocationPolicy: entry.reinvocationPolicy ?? defaults.reinvocationPolicy ?? STEP_DEFAULTS.reinvocationPolicy,
    order: entry.order,
    settings,
  });
}

/** Builds the steps of the config's plugin entries (provider entries are runtimes: see chain-manager.ts). */
export function buildPluginSteps(entries: readonly ChainEntry[], registry: PluginRegistry, file: string): Step[] {
  return entries.flatMap((entry) => (entry.kind === 'plugin' ? pluginEntrySteps(entry, registry, file) : []));
}
