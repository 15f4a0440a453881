/**
 * The resolved chain: an immutable snapshot of ordered steps with each phase's lists precomputed (all its
 * steps, and those of each effective failure policy), so a review reads one array. A new chain (a provider
 * added, changed, removed or discovered) is built off the request path and swapped in whole; in-flight
 * reviews finish on the chain they started with.
 */
import type { Phase } from '../admission/types.js';
import { didYouMeanOrKnown } from '../base/did-you-mean.js';
import { ConfigError, errorMessage } from '../base/errors.js';
import type { FailurePolicy } from '../config/step-options.js';
import type { ChainEntry, PluginEntry } from '../config/types.js';
import { SettingsError } from '../plugin-api/settings.js';
import type { PluginHandlers } from '../plugin-api/types.js';
import { indexExtensions, type ChainExtensions } from '../extensions/chain-extensions.js';
import { createPluginSteps } from './plugin-step.js';
import { createPolicySteps } from './policy-entry-step.js';
import { buildNativeSteps } from '../native-policy/native-steps.js';
import { createPluginAuthorizeStep } from './plugin-authorize-step.js';
import type { AuthorizeStep } from '../authorization/authorize-step.js';
import type { PluginRegistry } from './plugin-registry.js';
import { effectiveFailurePolicy } from '../steps/policy.js';
import { placeEntry } from '../steps/placement.js';
import { planSteps, type PlanProblem, type StepPlan } from '../steps/step-graph.js';
import { readsNamespaceObject, type Step } from '../steps/step.js';

/** Which of the chain's steps a review runs: a phase's, or only those of one effective failure policy. */
export interface StepSelection {
  /** What the review's log line calls it (the webhook route). */
  readonly name: string;
  readonly phase: Phase;
  readonly failurePolicy?: FailurePolicy;
}

export interface Chain {
  /** Every live step, both phases, in chain order (shadow steps are apart: `shadowOf`). */
  readonly steps: readonly Step[];
  /** A phase's shadow steps (`shadow: true`), in chain order: run after the answer, never changing it. */
  shadowOf(phase: Phase): readonly Step[];
  /**
   * A phase's steps in order; with `failurePolicy`, only those whose effective failure policy it is (a step
   * that never blocks counts as Ignore: policy.ts).
   */
  stepsOf(phase: Phase, failurePolicy?: FailurePolicy): readonly Step[];
  /** Whether any of those steps has a namespaceSelector (so the namespace's labels are needed). */
  needsNamespaceLabels(phase: Phase, failurePolicy?: FailurePolicy): boolean;
  /** Whether any of those steps, or the phase's shadow steps, read `namespaceObject` (so the namespace is read). */
  needsNamespaceObject(phase: Phase, failurePolicy?: FailurePolicy): boolean;
  /** The mutate phase's steps (all, or one effective failure policy's) in levels (step-graph.ts). */
  planOf(failurePolicy?: FailurePolicy): StepPlan;
  /** What is wrong with the steps' declarations; the steps concerned run as barriers meanwhile. */
  readonly problems: readonly PlanProblem[];
  /** The authorize chain (POST /authorize), in order. */
  readonly authorize: readonly AuthorizeStep[];
  /** The entries as `admissiongateway.io/extensions` names them (README "Opt-in providers"). */
  readonly extensions: ChainExtensions;
  /** `/chain`: the resolved order, matches, policies, levels and live state. */
  describe(): { mutate: object[]; validate: object[]; authorize: object[]; problems?: string[] };
  /** `mutate=[a,b] validate=[c]`, for the log line at start and on every change. */
  summary(): string;
}

/** Orders by (order, name), the same rule for config entries and dynamic providers. */
export function byOrder(a: { order: number; name: string }, b: { order: number; name: string }): number {
  return a.order - b.order || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/** Some of a phase's steps, and whether any of them needs the namespace's labels, or the namespace itself. */
interface Selection {
  readonly steps: readonly Step[];
  readonly needsNamespaceLabels: boolean;
  readonly needsNamespaceObject: boolean;
}

/** A phase's selections: all its steps, and those of each effective failure policy. */
type PhaseSelections = Readonly<Record<FailurePolicy | 'all', Selection>>;

/** What the phase's shadow steps read of the namespace: they run after any selection of it, with its lookups. */
interface ShadowReads {
  readonly labels: boolean;
  readonly object: boolean;
}

function select(steps: readonly Step[], shadowReads: ShadowReads): Selection {
  return {
    steps: Object.freeze(steps),
    needsNamespaceLabels: shadowReads.labels || steps.some((s) => s.match.needsNamespaceLabels),
    needsNamespaceObject: shadowReads.object || steps.some(readsNamespaceObject),
  };
}

function phaseSelections(ordered: readonly Step[], shadow: readonly Step[], phase: Phase): PhaseSelections {
  const all = ordered.filter((s) => s.phase === phase);
  const shadowReads: ShadowReads = {
    labels: shadow.some((s) => s.match.needsNamespaceLabels),
    object: shadow.some(readsNamespaceObject),
  };
  const byPolicy = (policy: FailurePolicy) =>
    select(
      all.filter((s) => effectiveFailurePolicy(s) === policy),
      shadowReads,
    );
  return { all: select(all, shadowReads), Fail: byPolicy('Fail'), Ignore: byPolicy('Ignore') };
}

export function createChain(steps: readonly Step[], authorizeSteps: readonly AuthorizeStep[] = []): Chain {
  const sorted = [...steps].sort(byOrder);
  const ordered = sorted.filter((s) => !s.shadow);
  const shadow: Readonly<Record<Phase, readonly Step[]>> = {
    mutate: Object.freeze(sorted.filter((s) => s.shadow && s.phase === 'mutate')),
    validate: Object.freeze(sorted.filter((s) => s.shadow && s.phase === 'validate')),
  };
  const authorize = Object.freeze([...authorizeSteps].sort(byOrder));
  const phases: Readonly<Record<Phase, PhaseSelections>> = {
    mutate: phaseSelections(ordered, shadow.mutate, 'mutate'),
    validate: phaseSelections(ordered, shadow.validate, 'validate'),
  };
  // A declaration found wrong in the whole phase is set aside in every selection of it.
  const { demoted, ...all } = planSteps(phases.mutate.all.steps);
  const plans: Readonly<Record<FailurePolicy | 'all', StepPlan>> = {
    all,
    Fail: planSteps(phases.mutate.Fail.steps, demoted),
    Ignore: planSteps(phases.mutate.Ignore.steps, demoted),
  };
  const levelOf = new Map(all.levels.flatMap((level, i) => level.map((step) => [step, i] as const)));
  return {
    steps: ordered,
    shadowOf: (phase) => shadow[phase],
    stepsOf: (phase, failurePolicy) => phases[phase][failurePolicy ?? 'all'].steps,
    needsNamespaceLabels: (phase, failurePolicy) => phases[phase][failurePolicy ?? 'all'].needsNamespaceLabels,
    needsNamespaceObject: (phase, failurePolicy) => phases[phase][failurePolicy ?? 'all'].needsNamespaceObject,
    planOf: (failurePolicy) => plans[failurePolicy ?? 'all'],
    problems: all.problems,
    authorize,
    extensions: indexExtensions(ordered, authorize),
    describe: () => ({
      mutate: [
        ...phases.mutate.all.steps.map((s) => ({ ...s.describe(), level: levelOf.get(s) })),
        ...shadow.mutate.map((s) => s.describe()),
      ],
      validate: [...phases.validate.all.steps, ...shadow.validate].map((s) => s.describe()),
      authorize: authorize.map((s) => s.describe()),
      ...(all.problems.length > 0 ? { problems: all.problems.map((p) => p.message) } : {}),
    }),
    summary: () =>
      `mutate=[${levelsSummary(all)}] validate=[${phases.validate.all.steps.map((s) => s.name).join(',')}]` +
      (authorize.length > 0 ? ` authorize=[${authorize.map((s) => s.name).join(',')}]` : '') +
      (shadow.mutate.length + shadow.validate.length > 0
        ? ` shadow=[${[...shadow.mutate, ...shadow.validate].map((s) => s.name).join(',')}]`
        : ''),
  };
}

/** The mutate steps in order, the steps of a level that runs several at once in braces: `a,{b,c},d`. */
function levelsSummary(plan: StepPlan): string {
  return plan.levels
    .map((level) => (level.length > 1 ? `{${level.map((s) => s.name).join(',')}}` : level[0]!.name))
    .join(',');
}

/** The steps of a plugin entry: one per admission phase it has work in, and its authorize step. */
export interface PluginEntrySteps {
  readonly steps: Step[];
  readonly authorize: AuthorizeStep[];
}

/** Builds the steps of one plugin entry, reporting settings problems with the entry's field path. */
export function pluginEntrySteps(entry: PluginEntry, registry: PluginRegistry, file: string): PluginEntrySteps {
  const plugin = registry.get(entry.plugin);
  if (!plugin) {
    throw new ConfigError(
      file,
      `${entry.path}.plugin`,
      `unknown plugin "${entry.plugin}"${didYouMeanOrKnown(entry.plugin, [...registry.keys()].sort())}`,
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
  let handlers: PluginHandlers;
  try {
    handlers = plugin.setup(settings);
  } catch (err) {
    throw new ConfigError(file, entry.path, `plugin "${plugin.name}" could not be set up: ${errorMessage(err)}`);
  }
  const authorizeHook = typeof handlers?.authorize === 'function' ? handlers.authorize.bind(handlers) : undefined;
  if (typeof handlers?.mutate !== 'function' && typeof handlers?.validate !== 'function' && !authorizeHook) {
    throw new ConfigError(
      file,
      entry.path,
      `plugin "${plugin.name}" has nothing to do with these settings (its setup returned neither mutate, validate nor authorize)`,
    );
  }
  if (authorizeHook && !plugin.authorizeMatch) {
    throw new ConfigError(file, entry.path, `plugin "${plugin.name}" returned authorize but has no authorizeMatch`);
  }
  const placement = placeEntry(entry, { match: entry.match ?? plugin.match, defaults: plugin.defaults });
  const steps = createPluginSteps(plugin, { ...placement, handlers });
  // The authorize chain has no shadow: a shadow entry's authorize hook is not run.
  const authorize =
    authorizeHook && !entry.shadow
      ? [
          createPluginAuthorizeStep({
            name: entry.name,
            plugin: plugin.name,
            description: plugin.description,
            order: entry.order,
            // A step that may not block (warn, audit) fails open here too.
            failurePolicy: effectiveFailurePolicy(placement),
            timeoutMs: placement.timeoutMs,
            matchSpec: plugin.authorizeMatch!,
            authorize: authorizeHook,
          }),
        ]
      : [];
  return { steps, authorize };
}

/** Builds the steps of the config's plugin and policy entries (provider entries are runtimes: chain-manager.ts). */
export function buildPluginEntries(
  entries: readonly ChainEntry[],
  registry: PluginRegistry,
  file: string,
): PluginEntrySteps {
  const built = entries.flatMap((entry) =>
    entry.kind === 'plugin'
      ? [pluginEntrySteps(entry, registry, file)]
      : entry.kind === 'policy'
        ? [{ steps: createPolicySteps(entry), authorize: [] }]
        : entry.kind === 'admissionPolicies'
          ? [{ steps: buildNativeSteps(entry, file), authorize: [] }]
          : [],
  );
  return { steps: built.flatMap((b) => b.steps), authorize: built.flatMap((b) => b.authorize) };
}

/** The admission steps of the config's plugin entries. */
export function buildPluginSteps(entries: readonly ChainEntry[], registry: PluginRegistry, file: string): Step[] {
  return buildPluginEntries(entries, registry, file).steps;
}
