/**
 * A step's `matchConditions` (README "Match conditions"), evaluated as the apiserver evaluates a webhook's: a false
 * one skips the step, even when another fails; else one that fails, or gives no bool, is the step's failure,
 * settled by its failurePolicy; all true, the step runs. They share the review's CEL values and cost budget with
 * its policies (policy/review-cel.ts), so that together they spend no more than one review may.
 */
import type { AdmissionRequest, KubeObject } from '../admission/types.js';
import { StepFailedError } from '../base/errors.js';
import { evaluate, type Activation } from '../cel/index.js';
import type { MatchCondition } from '../config/match-conditions.js';
import { reviewCel } from '../policy/review-cel.js';
import { failed, notBool } from '../policy/run-policy.js';

/** Why a step was skipped: its `index`th condition, `name`, is false. */
export const conditionIsFalse = (index: number, name: string): string => `matchConditions[${index}] "${name}" is false`;

/**
 * Undefined when every condition holds, the skip reason when one is false, the failure when none is false and one
 * could not be evaluated. `object` is the object as the step would see it; `version` changes when it was edited
 * in place since the last call (review-cel.ts).
 */
export function checkConditions(
  conditions: readonly MatchCondition[],
  request: AdmissionRequest,
  object: KubeObject | undefined,
  version = 0,
): string | StepFailedError | undefined {
  const cel = reviewCel(request);
  let values: Activation;
  try {
    values = cel.valuesFor(object, version);
  } catch (err) {
    return new StepFailedError(
      'error',
      `matchConditions: the object cannot be handed to CEL: ${(err as Error).message}`,
    );
  }
  let failure: StepFailedError | undefined;
  for (let i = 0; i < conditions.length; i++) {
    const condition = conditions[i]!;
    const result = evaluate(condition.program, values, cel.budget);
    const field = `matchConditions[${i}] (${condition.name})`;
    if (!result.ok) failure ??= failed(field, result);
    else if (result.value === false) return conditionIsFalse(i, condition.name);
    else if (result.value !== true) failure ??= notBool(field, result.value);
  }
  return failure;
}
