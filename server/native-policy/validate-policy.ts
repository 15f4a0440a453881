/**
 * One policy evaluated for one request and one params value, with the apiserver's semantics
 * (admission/plugin/policy/validating/validator.go): matchConditions (any false: nothing to say; errors and no
 * false: the failurePolicy decides), then every validation — each false one is a Deny decision with its
 * message, each that fails an error decision the failurePolicy makes a Deny or lets pass — then every
 * auditAnnotation. What the decisions do (Deny, Warn, Audit) is the binding's: native-step.ts.
 */
import {
  evaluate,
  lazyVariables,
  withVariables,
  type Activation,
  type CostBudget,
  type EvalResult,
  type PolicyVariables,
} from '../cel/index.js';
import type { FailurePolicy } from '../config/step-options.js';
import type { PolicyValidation, ValidationReason } from '../policy/policy-spec.js';
import { programsOf, type ExpressionRef } from '../policy/run-policy.js';
import type { NativePolicySpec } from './native-objects.js';

/** The longest message a messageExpression may give (celconfig.MaxEvaluatedMessageExpressionSizeBytes). */
export const MAX_MESSAGE_EXPRESSION_BYTES = 5 * 1024;
/** An audit annotation's value is cut to this many bytes, as the apiserver cuts it. */
export const MAX_AUDIT_ANNOTATION_VALUE_BYTES = 10 * 1024;

export interface PolicyDecision {
  /** Deny: the binding's validationActions apply; an error under failurePolicy Ignore gives no decision. */
  readonly evaluation: 'deny' | 'error';
  readonly message: string;
  /** The status reason of a failed validation; an error's is Invalid. */
  readonly reason: ValidationReason;
  /** The validation's index (the validation_failure annotation names it). */
  readonly index: number;
}

export interface NativePolicyResult {
  readonly decisions: readonly PolicyDecision[];
  readonly annotations: readonly { readonly key: string; readonly value: string }[];
  /** For the decision trace: the first validation that did not hold or failed, and how it failed. */
  readonly decidedBy?: ExpressionRef;
  readonly failure?: Extract<EvalResult, { ok: false }>;
  /** The variables as the validations read them (absent when the matchConditions ended it). */
  readonly variables?: PolicyVariables;
}

/** An error's decisions: under failurePolicy Fail one the binding's actions apply to, under Ignore none. */
export function errorDecisions(failurePolicy: FailurePolicy, message: string, index = 0): PolicyDecision[] {
  return failurePolicy === 'Fail' ? [{ evaluation: 'error', message, reason: 'Invalid', index }] : [];
}

const NOTHING: NativePolicyResult = { decisions: [], annotations: [] };

/** The engine's words for a failure, as cel-go writes the ones it shares ("no such key: x"). */
function celError(result: Extract<EvalResult, { ok: false }>): string {
  // cel-go names neither the function nor the types when no overload takes the values.
  if (/^(found no matching overload|no such overload)\b/.test(result.message)) return 'no such overload';
  return result.message.replace(/^No such key: (?!index out of bounds)/, 'no such key: ');
}

/** What the apiserver says of an expression that failed. */
export function expressionError(expression: string, result: Extract<EvalResult, { ok: false }>): string {
  if (result.reason === 'cost_exceeded')
    return 'validation failed due to running out of cost budget, no further validation rules will be run';
  return `expression '${expression}' resulted in error: ${celError(result)}`;
}

/** What a CEL value's type is called in the apiserver's messages. */
function celTypeName(value: unknown): string {
  if (value === null) return 'null_type';
  if (typeof value === 'bigint') return 'int';
  if (typeof value === 'number') return 'double';
  if (typeof value === 'boolean') return 'bool';
  if (Array.isArray(value)) return 'list';
  if (value instanceof Map) return 'map';
  return typeof value === 'object' ? 'map' : typeof value;
}

function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

function failureMessage(validation: PolicyValidation, values: Activation, budget: CostBudget): string {
  if (validation.messageProgram) {
    const result = evaluate(validation.messageProgram, values, budget);
    if (result.ok && typeof result.value === 'string') {
      const text = result.value.trim();
      if (text !== '' && byteLength(text) <= MAX_MESSAGE_EXPRESSION_BYTES && !text.includes('\n')) return text;
    }
  }
  const message = validation.message?.trim() ?? '';
  return message !== '' ? message : `failed expression: ${validation.program.expression.trim()}`;
}

/** matchConditions: true when the policy applies, false when not, or the error the failurePolicy settles. */
export function conditionsMatch(spec: NativePolicySpec, values: Activation, budget: CostBudget): boolean | string {
  const errors: string[] = [];
  for (const condition of spec.matchConditions) {
    const result = evaluate(condition.program, values, budget);
    if (!result.ok) errors.push(expressionError(condition.program.expression, result));
    else if (result.value === false) return false;
  }
  if (errors.length === 0) return true;
  // utilerrors.NewAggregate's words: one error as it is, several in brackets.
  return errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]`;
}

function cut(text: string, maxBytes: number): string {
  if (byteLength(text) <= maxBytes) return text;
  return Buffer.from(text, 'utf8').subarray(0, maxBytes).toString('utf8');
}

/** Evaluates `spec` on `base` (the request's values with `params` set) under `failurePolicy`. */
export function validatePolicy(
  spec: NativePolicySpec,
  failurePolicy: FailurePolicy,
  base: Activation,
  budget: CostBudget,
): NativePolicyResult {
  const onError = (message: string, index = 0): PolicyDecision[] => errorDecisions(failurePolicy, message, index);
  const matched = conditionsMatch(spec, base, budget);
  if (matched === false) return NOTHING;
  if (typeof matched === 'string') return { decisions: onError(matched), annotations: [] };

  const variables: PolicyVariables = lazyVariables(programsOf(spec), () => values, budget);
  const values = withVariables(base, variables);
  const decisions: PolicyDecision[] = [];
  let decidedBy: ExpressionRef | undefined;
  let failure: Extract<EvalResult, { ok: false }> | undefined;
  for (const [index, validation] of spec.validations.entries()) {
    const result = evaluate(validation.program, values, budget);
    if (result.ok && result.value === true) continue;
    if (decidedBy === undefined) {
      decidedBy = { list: 'validations', index };
      if (!result.ok) failure = result;
    }
    if (!result.ok) {
      // Out of budget, the apiserver runs nothing more of the policy: this is its one decision.
      if (result.reason === 'cost_exceeded')
        return {
          decisions: onError(expressionError(validation.program.expression, result)),
          annotations: [],
          decidedBy,
          ...(failure ? { failure } : {}),
          variables,
        };
      decisions.push(...onError(expressionError(validation.program.expression, result), index));
    } else {
      // As cel-go's `!= types.True`: a result that is not true, of whatever type, fails the validation.
      decisions.push({
        evaluation: 'deny',
        message: failureMessage(validation, values, budget),
        reason: validation.reason,
        index,
      });
    }
  }
  const annotations: { key: string; value: string }[] = [];
  for (const annotation of spec.auditAnnotations) {
    const result = evaluate(annotation.program, values, budget);
    if (!result.ok) {
      decisions.push(...onError(expressionError(annotation.program.expression, result)));
    } else if (typeof result.value === 'string') {
      const value = result.value.trim();
      if (value !== '') annotations.push({ key: annotation.key, value: cut(value, MAX_AUDIT_ANNOTATION_VALUE_BYTES) });
    } else if (result.value !== null) {
      // Whatever the failurePolicy: a wrong type is the policy's mistake, not a failure to evaluate.
      decisions.push({
        evaluation: 'error',
        message: `valueExpression '${annotation.program.expression}' resulted in unsupported return type: ${celTypeName(result.value)}. Return type must be either string or null.`,
        reason: 'Invalid',
        index: 0,
      });
    }
  }
  return {
    decisions,
    annotations,
    ...(decidedBy ? { decidedBy } : {}),
    ...(failure ? { failure } : {}),
    variables,
  };
}
