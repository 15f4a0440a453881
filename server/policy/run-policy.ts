/**
 * A `policy` chain entry's evaluation, with the semantics of the apiserver's ValidatingAdmissionPolicy:
 * matchConditions all true or the policy has nothing to say; validations in order, the first false one refuses
 * with its message and reason; auditAnnotations as the step's annotations; an expression that fails or runs out
 * of cost budget is the step's failure (StepFailedError), which the chain settles by its failurePolicy.
 */
import { APPROVED, type Decision } from '../admission/decision.js';
import { StepFailedError } from '../base/errors.js';
import { evaluate, lazyVariables, type Activation, type CelProgram, type EvalResult } from '../cel/index.js';
import type { AdmissionRequest, KubeObject } from '../admission/types.js';
import { REASON_CODES, type PolicySpec, type PolicyValidation } from './policy-spec.js';
import { reviewCel, type ReviewCel } from './review-cel.js';

/** The longest refusal message a policy gives, as the apiserver bounds a messageExpression's result. */
export const MAX_POLICY_MESSAGE_CHARS = 5 * 1024;

/** An expression that did not give a value: the step fails, naming the field and where in the expression. */
export function failed(field: string, result: Extract<EvalResult, { ok: false }>): StepFailedError {
  const at = result.position ? ` (at column ${result.position.column})` : '';
  return new StepFailedError(
    result.reason === 'cost_exceeded' ? 'cost_exceeded' : 'error',
    `${field}: ${result.message}${at}`,
  );
}

function notBool(field: string, value: unknown): StepFailedError {
  return new StepFailedError('error', `${field}: expected a bool result, got ${typeof value}`);
}

/** A messageExpression's result when the apiserver would show it: a non-blank string on one line. */
function usableMessage(result: EvalResult): string | undefined {
  if (!result.ok || typeof result.value !== 'string') return undefined;
  const text = result.value;
  if (text.trim() === '' || /[\r\n]/.test(text)) return undefined;
  return text.length > MAX_POLICY_MESSAGE_CHARS ? text.slice(0, MAX_POLICY_MESSAGE_CHARS) : text;
}

function refusal(validation: PolicyValidation, values: Activation, cel: ReviewCel): Decision {
  // As the apiserver: a messageExpression that fails or gives nothing usable falls back to `message`.
  const fromExpression = validation.messageProgram
    ? usableMessage(evaluate(validation.messageProgram, values, cel.budget))
    : undefined;
  const message = fromExpression ?? validation.message ?? `failed expression: ${validation.program.expression}`;
  return { allowed: false, message, code: REASON_CODES[validation.reason] };
}

/** What the policy reads of a step's invocation (chain/step.ts's StepInvocation has it). */
export interface PolicyInvocation {
  readonly request: AdmissionRequest;
  /** The object as it stands, without a tracking view. */
  readonly plainObject: KubeObject | undefined;
  readonly annotate: (key: string, value: string) => void;
}

/** Whether every matchCondition is true (the policy has something to say), or the failure of one. */
export function matchConditionsHold(spec: PolicySpec, values: Activation, cel: ReviewCel): boolean | StepFailedError {
  for (const [i, condition] of spec.matchConditions.entries()) {
    const result = evaluate(condition.program, values, cel.budget);
    const field = `matchConditions[${i}] (${condition.name})`;
    if (!result.ok) return failed(field, result);
    if (typeof result.value !== 'boolean') return notBool(field, result.value);
    if (!result.value) return false;
  }
  return true;
}

/** Evaluates the policy for one invocation: its decision, or the failure of one of its expressions. */
export function runPolicy(spec: PolicySpec, inv: PolicyInvocation): Decision | StepFailedError {
  const cel = reviewCel(inv.request);
  let base: Activation;
  try {
    base = cel.valuesFor(inv.plainObject);
  } catch (err) {
    return new StepFailedError('error', `the request cannot be handed to CEL: ${(err as Error).message}`);
  }
  const holds = matchConditionsHold(spec, base, cel);
  if (holds !== true) return holds === false ? APPROVED : holds;
  const programs = new Map<string, CelProgram>(spec.variables.map((v) => [v.name, v.program]));
  const values: Activation = { ...base, variables: lazyVariables(programs, () => values, cel.budget) };
  let decision: Decision = APPROVED;
  for (const [i, validation] of spec.validations.entries()) {
    const result = evaluate(validation.program, values, cel.budget);
    const field = `validations[${i}]`;
    if (!result.ok) return failed(field, result);
    if (typeof result.value !== 'boolean') return notBool(field, result.value);
    if (!result.value) {
      decision = refusal(validation, values, cel);
      break;
    }
  }
  for (const [i, annotation] of spec.auditAnnotations.entries()) {
    const result = evaluate(annotation.program, values, cel.budget);
    const field = `auditAnnotations[${i}] (${annotation.key})`;
    if (!result.ok) return failed(field, result);
    // As the apiserver: null means no annotation; anything else must be a string.
    if (result.value === null) continue;
    if (typeof result.value !== 'string')
      return new StepFailedError('error', `${field}: expected a string or null, got ${typeof result.value}`);
    inv.annotate(annotation.key, result.value);
  }
  return decision;
}
