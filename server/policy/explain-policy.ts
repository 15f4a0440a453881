/**
 * A policy step's run in the decision trace's words (README "Explaining a decision"): the expression that
 * decided (its place, text, message and reason, or its failure), the values of the variables it read, the audit
 * annotations the policy made, and what it spent. Everything is bounded here, whatever the request carried: the
 * expression and messages are clipped, at most MAX_EXPLAINED_VARIABLES variables are shown, each value as at
 * most MAX_PREVIEW_CHARS characters written without walking the rest of it.
 */
import { StepFailedError } from '../base/errors.js';
import { MAX_MESSAGE_CHARS, clip } from '../base/limits.js';
import { evaluatedVariables, previewValue, type CelProgram } from '../cel/index.js';
import type { PolicySpec } from './policy-spec.js';
import { programsOf, type ExpressionRef, type PolicyRun } from './run-policy.js';

/** Characters of an expression's text a trace keeps. */
export const MAX_EXPLAINED_EXPRESSION_CHARS = 1024;
/** Variables a trace shows at most for the deciding expression. */
export const MAX_EXPLAINED_VARIABLES = 16;

/** The expression that decided a policy step. */
export interface DecidingExpression {
  /** `validations[2]`, `auditAnnotations[1] (key)`, `mutations[0] (JSONPatch)`. */
  readonly field: string;
  readonly index: number;
  readonly expression: string;
  /** `false`: a validation that did not hold; `error` or `cost_exceeded`: it failed. */
  readonly result: 'false' | 'error' | 'cost_exceeded';
  /** The refusal's message, or the failure's. */
  readonly message?: string;
  /** A validation's reason (Invalid, Forbidden, …), or a failure's code (no_such_key, cost_exceeded, …). */
  readonly reason?: string;
  /** What the failing expression spent. */
  readonly cost?: number;
}

/** A variable the deciding expression read (itself or through other variables). */
export interface ExplainedVariable {
  readonly name: string;
  /** Its value, as bounded text; absent when values are left out (`valuesOmitted`). */
  readonly value?: string;
  /** Why it has no value: it failed. */
  readonly error?: string;
}

/** What the trace says of a policy step (StepTrace.policy). */
export interface PolicyTrace {
  readonly decidedBy?: DecidingExpression;
  readonly variables?: readonly ExplainedVariable[];
  /** Variables the deciding expression read past MAX_EXPLAINED_VARIABLES. */
  readonly variablesOmitted?: number;
  /** Why values are left out: they are object content (explain.includeObjects), or redacted. */
  readonly valuesOmitted?: string;
  readonly auditAnnotations?: Readonly<Record<string, string>>;
  /** CEL cost units its expressions spent. */
  readonly cost: number;
}

export interface ExplainOptions {
  /** Show the variables' values; else `omitted` says why not. */
  readonly values: boolean;
  readonly omitted?: string;
}

function programOf(spec: PolicySpec, ref: ExpressionRef): { program: CelProgram; field: string } {
  switch (ref.list) {
    case 'validations':
      return { program: spec.validations[ref.index]!.program, field: `validations[${ref.index}]` };
    case 'auditAnnotations': {
      const a = spec.auditAnnotations[ref.index]!;
      return { program: a.program, field: `auditAnnotations[${ref.index}] (${a.key})` };
    }
    case 'mutations': {
      const m = spec.mutations![ref.index]!;
      return { program: m.program, field: `mutations[${ref.index}] (${m.patchType})` };
    }
  }
}

function decidingExpression(run: PolicyRun, ref: ExpressionRef): DecidingExpression {
  const { program, field } = programOf(run.spec, ref);
  const base = { field, index: ref.index, expression: clip(program.expression, MAX_EXPLAINED_EXPRESSION_CHARS) };
  const { failure, outcome } = run;
  if (failure) {
    const at = failure.position ? ` (at column ${failure.position.column})` : '';
    return {
      ...base,
      result: failure.reason,
      message: clip(`${failure.message}${at}`, MAX_MESSAGE_CHARS),
      reason: failure.code,
      cost: failure.cost,
    };
  }
  if (outcome instanceof StepFailedError) return { ...base, result: 'error', message: clip(outcome.message) };
  if (run.failureMessage !== undefined) return { ...base, result: 'error', message: clip(run.failureMessage) };
  if (!outcome.allowed && ref.list === 'validations')
    return {
      ...base,
      result: 'false',
      message: clip(outcome.message, MAX_MESSAGE_CHARS),
      reason: run.spec.validations[ref.index]!.reason,
    };
  return { ...base, result: 'false' };
}

/** The variables `programs` read, and those their variables read, in order of first use. */
function variablesReadBy(spec: PolicySpec, programs: readonly CelProgram[]): string[] {
  const byName = programsOf(spec);
  const found: string[] = [];
  const queue = programs.flatMap((p) => p.variablesRead);
  while (queue.length > 0) {
    const name = queue.shift()!;
    if (found.includes(name)) continue;
    found.push(name);
    queue.push(...(byName.get(name)?.variablesRead ?? []));
  }
  return found;
}

function explainedVariables(run: PolicyRun, ref: ExpressionRef, options: ExplainOptions) {
  if (!run.variables) return undefined;
  const programs = [programOf(run.spec, ref).program];
  const message = ref.list === 'validations' ? run.spec.validations[ref.index]!.messageProgram : undefined;
  if (message) programs.push(message);
  const names = variablesReadBy(run.spec, programs);
  const results = evaluatedVariables(run.variables);
  const shown: ExplainedVariable[] = [];
  for (const name of names.slice(0, MAX_EXPLAINED_VARIABLES)) {
    const result = results.get(name);
    // A variable the expression names but never reached (behind a short circuit) has no value to show.
    if (result === undefined) continue;
    if (!result.ok) shown.push({ name, error: clip(result.message) });
    else shown.push(options.values ? { name, value: previewValue(result.value) } : { name });
  }
  const omitted = Math.max(names.length - MAX_EXPLAINED_VARIABLES, 0);
  return { shown, omitted };
}

/** The trace's account of a policy step's run. */
export function explainPolicyRun(run: PolicyRun, options: ExplainOptions): PolicyTrace {
  const ref = run.decidedBy;
  const variables = ref ? explainedVariables(run, ref, options) : undefined;
  const annotations = run.annotations.map(([key, value]) => [key, clip(value)] as const);
  return {
    ...(ref ? { decidedBy: decidingExpression(run, ref) } : {}),
    ...(variables?.shown.length ? { variables: variables.shown } : {}),
    ...(variables?.omitted ? { variablesOmitted: variables.omitted } : {}),
    ...(variables?.shown.length && !options.values && options.omitted ? { valuesOmitted: options.omitted } : {}),
    ...(annotations.length ? { auditAnnotations: Object.fromEntries(annotations) } : {}),
    cost: run.cost,
  };
}

/** About what the heap holds for an explained run (kept-trace.ts counts it). */
export function explainedBytes(trace: PolicyTrace): number {
  let bytes = 128;
  const d = trace.decidedBy;
  if (d) bytes += d.field.length + d.expression.length + (d.message?.length ?? 0) + 64;
  for (const v of trace.variables ?? []) bytes += v.name.length + (v.value?.length ?? 0) + (v.error?.length ?? 0) + 32;
  for (const key in trace.auditAnnotations ?? {}) bytes += key.length + trace.auditAnnotations![key]!.length + 32;
  return bytes;
}
