/**
 * An audit from start to end: run it (run-audit.ts), build its reports (reports.ts) and summary (summary.ts),
 * and write the reports unless it is a dry run (write-reports.ts). What `admission-gateway audit` and the
 * periodic audit of cluster mode both do.
 */
import type { BindableLogger, Logger } from '../base/log.js';
import { buildReports, type AuditReports } from './reports.js';
import { runAudit, type AuditDeps, type AuditRun } from './run-audit.js';
import { summarizeSteps, summaryLines, type StepSummary } from './summary.js';
import { writeReports, type WriteOutcome } from './write-reports.js';

/** The time the reports' writes get in all, after the audit's own deadline. */
export const WRITE_TIMEOUT_MS = 60_000;

export interface AuditOutcome {
  readonly run: AuditRun;
  readonly reports: AuditReports;
  readonly summaries: readonly StepSummary[];
  /** The operator's summary, a line per step (then why the audit was cut short). */
  readonly lines: readonly string[];
  /** Undefined on a dry run. */
  readonly write: WriteOutcome | undefined;
}

export async function audit(deps: AuditDeps, options: { readonly dryRun: boolean }): Promise<AuditOutcome> {
  const run = await runAudit(deps);
  const reports = buildReports(run.objects, run.steps, {
    timestamp: run.startedAt,
    maxResults: deps.limits.maxResultsPerReport,
    cutShort: run.cutShort,
  });
  const summaries = summarizeSteps(run.objects, run.steps);
  const lines = summaryLines(summaries, run.cutShort);
  if (options.dryRun) return { run, reports, summaries, lines, write: undefined };
  const timeout = AbortSignal.timeout(WRITE_TIMEOUT_MS);
  const signal = deps.signal ? AbortSignal.any([timeout, deps.signal]) : timeout;
  const complete = run.cutShort.length === 0 && run.problems.length === 0;
  const write = await writeReports(deps.cluster, reports, complete, signal);
  return { run, reports, summaries, lines, write };
}

/**
 * The reviews' logger: a line per reviewed object at info would drown the log, so only warnings and errors (a
 * step that failed) are passed on, marked `audit: true`.
 */
export function auditReviewLog(log: Logger, bound: object = { audit: true }): BindableLogger {
  return {
    debug: () => undefined,
    info: () => undefined,
    warn: (obj, msg) => log.warn({ ...bound, ...obj }, msg),
    error: (obj, msg) => log.error({ ...bound, ...obj }, msg),
    child: (bindings) => auditReviewLog(log, { ...bound, ...bindings }),
  };
}
