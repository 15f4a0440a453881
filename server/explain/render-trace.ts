/**
 * A decision trace in words, for a person at a terminal: `admission-gateway review --explain` and
 * `GET /explain/<uid>?format=text`. One block per review, one line per step (and indented lines for what it
 * said and wrote), so that the step that decided is found at a glance.
 */
import type { JsonPatchOperation } from '../admission/types.js';
import { escapeControl } from '../base/limits.js';
import type { KeptTrace } from './trace-buffer.js';
import type { PolicyTrace } from '../policy/explain-policy.js';

const OUTCOME_WORD: Readonly<Record<string, string>> = {
  allowed: 'allowed',
  patched: 'patched',
  denied: 'DENIED',
  skipped: 'skipped',
  error: 'FAILED',
  timeout: 'TIMED OUT',
  circuit_open: 'CIRCUIT OPEN',
  no_opinion: 'no opinion',
};

function operation(op: JsonPatchOperation): string {
  const from = 'from' in op ? ` from ${op.from}` : '';
  const value = 'value' in op && op.value !== undefined ? ` ${JSON.stringify(op.value)}` : '';
  return `${op.op} ${op.path}${from}${value}`;
}

/** What a policy step's trace adds: the expression that decided, the variables it read, annotations, cost. */
function policyLines(policy: PolicyTrace): string[] {
  const lines: string[] = [];
  const d = policy.decidedBy;
  if (d) {
    const how =
      d.result === 'false'
        ? `is false${d.reason ? ` (reason ${d.reason})` : ''}`
        : `failed (${d.reason ?? d.result}${d.cost !== undefined ? `, ${d.cost} cost units` : ''})`;
    lines.push(`       decided by: ${d.field} ${how}: ${d.expression}`);
    if (d.result !== 'false' && d.message) lines.push(`       failure: ${d.message}`);
  }
  for (const v of policy.variables ?? []) {
    if (v.error !== undefined) lines.push(`       variable ${v.name} failed: ${v.error}`);
    else if (v.value !== undefined) lines.push(`       variable ${v.name} = ${v.value}`);
    else lines.push(`       variable ${v.name} (value left out: ${policy.valuesOmitted ?? 'not kept'})`);
  }
  if (policy.variablesOmitted) lines.push(`       variables: … ${policy.variablesOmitted} more`);
  for (const [key, value] of Object.entries(policy.auditAnnotations ?? {}))
    lines.push(`       audit annotation: ${key} = ${JSON.stringify(value)}`);
  lines.push(`       cost: ${policy.cost} units`);
  return lines;
}

/** The review's trace as lines of text (no trailing newline). */
export function renderTrace(trace: KeptTrace): string {
  const r = trace.request;
  const where = [r.namespace, r.name].filter(Boolean).join('/');
  const lines: string[] = [
    `${trace.route}: ${r.operation} ${r.kind}${where ? ` ${where}` : ''}${r.dryRun ? ' (dry run)' : ''}${
      r.user ? ` by ${r.user}` : ''
    }`,
    `  uid ${trace.uid}  trace ${trace.traceId}  at ${trace.startedAt}  ${trace.ms} ms`,
    `  ${trace.allowed ? 'ALLOWED' : `DENIED (${trace.code ?? 403})`}${
      trace.decidedBy?.length ? ` by ${trace.decidedBy.join(', ')}` : ''
    }${trace.message ? `: ${trace.message}` : ''}`,
  ];
  if (trace.steps.length === 0) lines.push('  no steps in this phase');
  trace.steps.forEach((step, i) => {
    const wouldDeny = step.outcome === 'denied' && !step.decided && step.mode !== 'enforce';
    const flags = [
      step.mode !== 'enforce' && !wouldDeny ? `mode ${step.mode}` : '',
      step.round ? 'reinvoked' : '',
      step.level !== undefined ? `level ${step.level}` : '',
      step.failedOpen ? 'let through' : '',
      step.decided ? 'DECIDED' : '',
    ].filter(Boolean);
    const word = wouldDeny
      ? `would deny (mode ${step.mode}: not enforced)`
      : (OUTCOME_WORD[step.outcome] ?? step.outcome);
    const time = step.outcome === 'skipped' ? '' : ` ${step.ms} ms`;
    const left = step.deadlineLeftMs !== undefined ? `, ${Math.round(step.deadlineLeftMs)} ms of deadline left` : '';
    lines.push(
      `  ${i + 1}. ${step.step} [${step.source}${step.breaker ? `, breaker ${step.breaker}` : ''}] ${
        word
      }${time}${left}${flags.length ? ` (${flags.join(', ')})` : ''}`,
    );
    if (step.rule) lines.push(`       matched: ${step.rule}`);
    if (step.reason) lines.push(`       why: ${step.reason}`);
    if (step.message) lines.push(`       message: ${step.message}`);
    if (step.policy) lines.push(...policyLines(step.policy));
    for (const warning of step.warnings ?? []) lines.push(`       warning: ${warning}`);
    for (const op of step.patch ?? []) lines.push(`       patch: ${operation(op)}`);
    if (step.patchOpsOmitted) lines.push(`       patch: … ${step.patchOpsOmitted} more operations`);
    if (step.conflicts) {
      const { count, first } = step.conflicts;
      lines.push(
        `       conflict: ${first.path} overwrote ${first.earlierPath} written by ${first.earlier}${
          count > 1 ? ` (and ${count - 1} more)` : ''
        }`,
      );
    }
  });
  if (trace.patch?.length) {
    const count = trace.patch.length + (trace.patchOpsOmitted ?? 0);
    lines.push(`  patch (${count} operation${count === 1 ? '' : 's'}):`);
    for (const op of trace.patch) lines.push(`    ${operation(op)}`);
    if (trace.patchOpsOmitted) lines.push(`    … ${trace.patchOpsOmitted} more`);
  }
  if (trace.redacted && (trace.patch?.length || trace.steps.some((s) => s.patch?.length))) {
    lines.push('  (patch values redacted: explain.includeObjects is off)');
  }
  if (trace.clipped)
    lines.push('  (clipped: what the review carried was cut where it says so, to keep the trace small)');
  // Names, messages and paths come from the review: escaped, so that a terminal shows them and obeys none.
  return lines.map(escapeControl).join('\n');
}
