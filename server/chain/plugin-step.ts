/** Adapts an in-process plugin to the chain's Step: one step per phase the plugin implements. */
import { APPROVED, type Decision } from '../admission/decision.js';
import type { JsonPatchOperation, KubeObject, Phase } from '../admission/types.js';
import type { Logger } from '../base/log.js';
import { isThenable } from '../base/thenable.js';
import type {
  MutateContext,
  MutateResult,
  Plugin,
  PluginHandlers,
  ValidateContext,
  Verdict,
} from '../plugin-api/types.js';
import { describePlacement, placedFields, type StepPlacement } from '../steps/placement.js';
import type { Step, StepInvocation } from '../steps/step.js';

/** The chain entry's resolved settings for one plugin (config defaults and the plugin's own applied). */
export interface PluginStepOptions extends StepPlacement {
  /** What the plugin's `setup` returned for the entry's settings. */
  readonly handlers: PluginHandlers;
}

function toDecision(outcome: MutateResult): Decision {
  if (outcome === undefined || outcome === null) return APPROVED;
  if (Array.isArray(outcome)) return { allowed: true, patch: outcome as readonly JsonPatchOperation[] };
  return outcome as Verdict;
}

/**
 * The context a plugin callback receives. Prototype getters, not an object literal: a plugin that never
 * reads `signal`, `log`, `oldObject` or `warn` costs no AbortController, child logger, view or closure.
 */
class PluginContext implements MutateContext, ValidateContext {
  readonly request: StepInvocation['request'];
  readonly operation: StepInvocation['request']['operation'];
  readonly dryRun: boolean;

  constructor(private readonly inv: StepInvocation) {
    this.request = inv.request;
    this.operation = inv.request.operation;
    this.dryRun = inv.request.dryRun === true;
  }

  get object(): KubeObject {
    return this.inv.object!;
  }
  get oldObject(): KubeObject | undefined {
    return this.inv.oldObject;
  }
  get signal(): AbortSignal {
    return this.inv.signal;
  }
  get log(): Logger {
    return this.inv.log;
  }
  get warn(): (message: string) => void {
    return this.inv.warn;
  }
  get annotate(): (key: string, value: string) => void {
    return this.inv.annotate;
  }
}

export function createPluginSteps(plugin: Plugin<unknown, object>, options: PluginStepOptions): Step[] {
  const steps: Step[] = [];
  const common = (phase: Phase) => ({
    ...placedFields(options, phase),
    source: 'plugin' as const,
    phase,
    describe: () => ({
      name: options.name,
      source: 'plugin',
      plugin: plugin.name,
      phase,
      order: options.order,
      description: plugin.description,
      ...describePlacement(options, phase),
    }),
  });

  const { handlers } = options;
  const mutate = handlers.mutate?.bind(handlers);
  if (mutate) {
    steps.push({
      ...common('mutate'),
      // In-process mutators edit the object; without one (DELETE, CONNECT) there is nothing for them to do.
      needsObject: true,
      invoke(inv) {
        const outcome = mutate(new PluginContext(inv));
        return isThenable<MutateResult>(outcome) ? Promise.resolve(outcome).then(toDecision) : toDecision(outcome);
      },
    });
  }
  const validate = handlers.validate?.bind(handlers);
  if (validate) {
    steps.push({
      ...common('validate'),
      needsObject: false,
      invoke(inv) {
        return validate(new PluginContext(inv));
      },
    });
  }
  return steps;
}
