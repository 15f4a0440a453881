/**
 * A webhook's own matchCondition from the steps behind it (README "Match conditions"): when every one of them has
 * `matchConditions`, the apiserver need not call the gateway unless some step's conditions all hold, so the
 * webhook gets one condition, the disjunction of each step's conjunction. Rendered for Kubernetes 1.30 on (GA),
 * and only when it means what the steps mean; otherwise not at all, with the reason for the command to tell.
 */
import { compile, MAX_EXPRESSION_LENGTH, type Declaration } from '../cel/index.js';
import type { FailurePolicy } from '../config/step-options.js';
import { SINCE, atLeast, type KubeVersion } from './kube-version.js';

/** A webhook's CEL match condition: the apiserver calls the webhook only when every one is true. */
export interface WebhookMatchCondition {
  readonly name: string;
  readonly expression: string;
}

/** What this needs of a webhook to render (render.ts's WebhookPlan). */
interface Plan {
  readonly name: string;
  readonly failurePolicy: FailurePolicy;
  readonly steps: readonly {
    readonly name: string;
    readonly failurePolicy: FailurePolicy;
    readonly matchConditions?: readonly WebhookMatchCondition[] | undefined;
  }[];
}

/** The name of the webhook condition that stands for the steps'. */
export const STEPS_CONDITION = 'steps-match';

/** What a webhook's matchConditions may read (`authorizer` aside, which no step condition uses). */
const WEBHOOK_DECLARATIONS: readonly Declaration[] = ['object', 'oldObject', 'request'];

export type StepConditions =
  | { readonly condition: WebhookMatchCondition; readonly why?: undefined }
  | { readonly condition?: undefined; readonly why: string }
  | undefined;

const conjunction = (conditions: readonly WebhookMatchCondition[]): string =>
  conditions.map((c) => `(${c.expression})`).join(' && ');

/** The webhook's condition for `plan`'s steps; the reason when it cannot be rendered; undefined when none is due. */
export function stepConditions(
  plan: Plan,
  options: { readonly kubeVersion: KubeVersion; readonly allResources?: boolean | undefined },
): StepConditions {
  if (!atLeast(options.kubeVersion, SINCE.webhookMatchConditions) || plan.steps.length === 0) return undefined;
  const conditioned = plan.steps.filter((s) => s.matchConditions && s.matchConditions.length > 0);
  if (conditioned.length === 0) return undefined;
  const name = plan.name;
  if (options.allResources) {
    return {
      why: `${name}: --all-resources sends everything, for steps added at run time: the steps' matchConditions are not rendered`,
    };
  }
  const without = plan.steps.find((s) => !s.matchConditions?.length);
  if (without) {
    return {
      why: `${name}: step "${without.name}" has no matchConditions, so the webhook is called for every request its rules select`,
    };
  }
  // An error in one step's condition fails the whole disjunction: the webhook's failurePolicy then decides, which
  // is what each step's own would decide only when they are all the same.
  if (plan.steps.some((s) => s.failurePolicy !== plan.failurePolicy)) {
    return {
      why: `${name}: its steps' failure policies differ, and a condition that fails at the apiserver would be settled by the webhook's (${plan.failurePolicy}): the steps' matchConditions are not rendered`,
    };
  }
  for (const step of plan.steps) {
    for (const c of step.matchConditions!) {
      const checked = compile(c.expression, { declarations: WEBHOOK_DECLARATIONS, resultType: 'bool' });
      if (!checked.ok) {
        return {
          why: `${name}: step "${step.name}" condition "${c.name}" cannot be a webhook's (${checked.error.message}; a webhook's conditions read object, oldObject and request only): the steps' matchConditions are not rendered`,
        };
      }
    }
  }
  const expression = plan.steps.map((s) => `(${conjunction(s.matchConditions!)})`).join(' || ');
  const combined = compile(expression, { declarations: WEBHOOK_DECLARATIONS, resultType: 'bool' });
  if (expression.length > MAX_EXPRESSION_LENGTH || !combined.ok) {
    return {
      why: `${name}: the disjunction of its steps' matchConditions is too large for one expression (${combined.ok ? `${expression.length} characters, over ${MAX_EXPRESSION_LENGTH}` : combined.error.message}): not rendered`,
    };
  }
  return { condition: { name: STEPS_CONDITION, expression } };
}
