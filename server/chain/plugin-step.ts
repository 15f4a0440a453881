/** Adapts an in-process plugin to the chain's Step: one step per phase the plugin implements. */
import type { Phase } from '../admission/types.js';
import type {
  JsonPatchOperation,
  KubeObject,
  MutateContext,
  MutateOutcome,
  Plugin,
  ValidateContext,
  Verdict,
} from '../plugin-api/types.js';
import type { Step, StepDecision, StepInvocation, StepPlacement } from './step.js';

/** The chain entry's resolved settings for one plugin (config defaults and the plugin's own applied). */
export interface PluginStepOptions extends StepPlacement {
  /** Parsed by the plugin's settings function at start. */
  readonly settings: unknown;
}

const ALLOWED: StepDecision = Object.freeze({ allowed: true });

function toDecision(outcome: MutateOutcome): StepDecision {
  if (outcome === undefined || outcome === null) return ALLOWED;
  if (Array.isArray(outcome)) return { allowed: true, patch: outcome as readonly JsonPatchOperation[] };
  return outcome as Verdict;
}

function isThenable<T>(value: unknown): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/**
 * One context object per call, with lazy getters: a plugin that never reads `signal`, `log` or
 * `oldObject` costs no AbortController, child logger or view (object spread would evaluate them).
 */
function pluginContext(settings: unknown, inv: StepInvocation): MutateContext<unknown> & ValidateContext<unknown> {
  return {
    request: inv.request,
    operation: inv.request.operation,
    settings,
    dryRun: inv.request.dryRun === true,
    get object() {
      return inv.object!;
    },
    get oldObject() {
      return inv.oldObject;
    },
    get signal() {
      return inv.signal;
    },
    get log() {
      return inv.log;
    },
    warn: inv.warn,
    annotate: inv.annotate,
  };
}

export function createPluginSteps(plugin: Plugin<unknown, KubeObject>, options: PluginStepOptions): Step[] {
  const steps: Step[] = [];
  const common = (phase: Phase) => ({
    name: options.name,
    source: 'plugin' as const,
    phase,
    match: options.match,
    failurePolicy: options.failurePolicy,
    timeoutMs: options.timeoutMs,
    mode: options.mode,
    sideEffects: options.sideEffects,
    reinvocationPolicy: phase === 'mutate' ? options.reinvocationPolicy : ('Never' as const),
    order: options.order,
    describe: () => ({
      name: options.name,
      source: 'plugin',
      plugin: plugin.name,
      phase,
      order: options.order,
      description: plugin.description,
      mode: options.mode,
      failurePolicy: options.failurePolicy,
      timeoutSeconds: options.timeoutMs / 1000,
      sideEffects: options.sideEffects,
      reinvocationPolicy: phase === 'mutate' ? options.reinvocationPolicy : 'Never',
      match: options.matchSpec,
    }),
  });

  const mutate = plugin.mutate?.bind(plugin);
  if (mutate) {
    steps.push({
      ...common('mutate'),
      // In-process mutators edit the object; without one (DELETE, CONNECT) there is nothing for them to do.
      needsObject: true,
      invoke(inv) {
        const outcome = mutate(pluginContext(options.settings, inv));
        return isThenable<MutateOutcome>(outcome) ? Promise.resolve(outcome).then(toDecision) : toDecision(outcome);
      },
    });
  }
  const validate = plugin.validate?.bind(plugin);
  if (validate) {
    steps.push({
      ...common('validate'),
      needsObject: false,
      invoke(inv) {
        return validate(pluginContext(options.settings, inv));
      },
    });
  }
  return steps;
}
