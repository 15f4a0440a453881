/**
 * The validate step of one binding of a native policy: the policy's and the binding's matching, the policy
 * evaluated for each of the binding's params (validate-policy.ts), and its decisions acted on as the binding's
 * validationActions say, in the apiserver's words (native-words.ts): Deny refuses with the first, Warn warns
 * and Audit annotates for each. The step's mode is what its actions come to (Deny: enforce, else Warn: warn,
 * else audit), its failurePolicy the policy's: they settle only the step's own failures (a timeout).
 */
import { APPROVED, type Decision } from '../admission/decision.js';
import type { AdmissionRequest, KubeObject } from '../admission/types.js';
import { StepFailedError } from '../base/errors.js';
import type { Activation } from '../cel/index.js';
import type { Mode } from '../config/step-options.js';
import { REASON_CODES, specReadsNamespaceObject } from '../policy/policy-spec.js';
import { keepPolicyRun } from '../policy/policy-runs.js';
import { reviewCel } from '../policy/review-cel.js';
import { placedFields } from '../steps/placement.js';
import type { Step } from '../steps/step.js';
import { celParams, paramsOfBinding } from './binding-params.js';
import { bindingPlacement, describeBinding, type NativeStepPlacement } from './binding-step.js';
import type { NativeBinding, NativePolicy, ValidationAction } from './native-objects.js';
import {
  auditAnnotationKey,
  bindingConfigurationError,
  deniedRequest,
  validationFailedWarning,
  VALIDATION_FAILURE_KEY,
  validationFailureValue,
} from './native-words.js';
import { errorDecisions, validatePolicy, type NativePolicyResult, type PolicyDecision } from './validate-policy.js';

/** The mode a binding's actions come to (a step in warn or audit mode never blocks). */
export function modeOf(actions: readonly ValidationAction[]): Mode {
  return actions.includes('Deny') ? 'enforce' : actions.includes('Warn') ? 'warn' : 'audit';
}

/** The binding's decisions for the request: for each of its params, the policy's. */
function decide(
  policy: NativePolicy,
  params: ReturnType<typeof paramsOfBinding>,
  request: AdmissionRequest,
  object: KubeObject | undefined,
): NativePolicyResult {
  const cel = reviewCel(request);
  let base: Activation;
  try {
    base = cel.valuesFor(object);
  } catch (err) {
    throw new StepFailedError('error', `the request cannot be handed to CEL: ${(err as Error).message}`);
  }
  const found = params(request.namespace ?? '');
  if ('error' in found)
    return { decisions: errorDecisions(policy.failurePolicy, bindingConfigurationError(found.error)), annotations: [] };
  const decisions: PolicyDecision[] = [];
  const annotations: { key: string; value: string }[] = [];
  // The trace explains the first params' run that decided something, else the last.
  let explained: NativePolicyResult | undefined;
  for (const param of found.params) {
    const values = param === null ? base : { ...base, params: celParams(param) };
    const result = validatePolicy(policy.spec, policy.failurePolicy, values, cel.budget);
    decisions.push(...result.decisions);
    annotations.push(...result.annotations);
    if (explained?.decidedBy === undefined) explained = result;
  }
  return { ...explained, decisions, annotations };
}

/** What the decision trace says of the binding's run (README "Explaining a decision"), kept by the request. */
function keepRun(
  request: AdmissionRequest,
  step: string,
  spec: NativePolicy['spec'],
  result: NativePolicyResult,
  outcome: Decision,
  cost: number,
): void {
  keepPolicyRun(request, step, {
    spec,
    outcome,
    ...(result.decidedBy ? { decidedBy: result.decidedBy } : {}),
    ...(result.failure ? { failure: result.failure } : {}),
    ...(result.variables ? { variables: result.variables } : {}),
    annotations: result.annotations.map(({ key, value }) => [key, value] as const),
    cost,
  });
}

/** The step of `binding` of `policy`, with the params the entry's files hold. */
export function createNativeStep(
  policy: NativePolicy,
  binding: NativeBinding,
  objects: readonly KubeObject[],
  placement: NativeStepPlacement,
): Step {
  const placed = bindingPlacement(policy, binding, placement, {
    mode: modeOf(binding.validationActions),
    reinvocationPolicy: 'Never',
  });
  // A rehearsal asks what the binding would refuse once bound with Deny.
  const actions: readonly ValidationAction[] = placement.shadow ? ['Deny'] : binding.validationActions;
  const params = paramsOfBinding(policy, binding, objects);
  return {
    ...placedFields(placed, 'validate'),
    source: 'policy',
    phase: 'validate',
    needsObject: false,
    ownWords: true,
    readsNamespaceObject: specReadsNamespaceObject(policy.spec, policy.spec.matchConditions),
    invoke(inv): Decision {
      const budget = reviewCel(inv.request).budget;
      const before = budget.remaining;
      const result = decide(policy, params, inv.request, inv.plainObject);
      const { decisions, annotations } = result;
      let denial: Decision = APPROVED;
      let audited = false;
      for (const decision of decisions) {
        for (const action of actions) {
          if (action === 'Deny' && denial.allowed) {
            const message = deniedRequest(policy.name, binding.name, decision.message);
            denial = { allowed: false, message, code: REASON_CODES[decision.reason] };
          } else if (action === 'Warn') {
            inv.warn(validationFailedWarning(policy.name, binding.name, decision.message));
          } else if (action === 'Audit' && !audited) {
            // The apiserver keeps the first value of its one key.
            audited = true;
            inv.annotate(
              VALIDATION_FAILURE_KEY,
              validationFailureValue({
                message: decision.message,
                policy: policy.name,
                binding: binding.name,
                expressionIndex: decision.index,
                validationActions: binding.validationActions,
              }),
            );
          }
        }
      }
      for (const { key, value } of annotations) inv.annotate(auditAnnotationKey(policy.name, key), value);
      keepRun(inv.request, placed.name, policy.spec, result, denial, before - budget.remaining);
      return denial;
    },
    describe: () => ({
      ...describeBinding(placed, placement.entry, policy, binding, 'validate', {
        validationActions: binding.validationActions,
      }),
      validations: policy.spec.validations.length,
      ...(policy.spec.auditAnnotations.length > 0
        ? { auditAnnotations: policy.spec.auditAnnotations.map((a) => a.key) }
        : {}),
    }),
  };
}
