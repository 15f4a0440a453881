/**
 * Writes an audit's reports: each applied (server-side apply, field manager admission-gateway, so a second run
 * replaces what the first wrote), then, when the audit was complete, the reports it wrote before for namespaces
 * (or cluster-scoped objects) that now have no results are deleted. An audit cut short keeps them: what it did
 * not reach is not known to be gone.
 */
import { apiErrorMessage, type AuditCluster, type ReportPlace } from './cluster.js';
import type { AuditReports, PolicyReport } from './reports.js';

export interface WriteOutcome {
  /** `<namespace>/admission-gateway` or `cluster`, for each report applied. */
  readonly written: readonly string[];
  readonly deleted: readonly string[];
  readonly errors: readonly string[];
}

const placeName = (place: ReportPlace) => place.namespace ?? 'cluster';

export function reportsOf(reports: AuditReports): PolicyReport[] {
  return reports.cluster ? [...reports.namespaced, reports.cluster] : [...reports.namespaced];
}

export async function writeReports(
  cluster: AuditCluster,
  reports: AuditReports,
  complete: boolean,
  signal: AbortSignal,
): Promise<WriteOutcome> {
  const written: string[] = [];
  const deleted: string[] = [];
  const errors: string[] = [];
  const keep = new Set<string>();
  for (const report of reportsOf(reports)) {
    const place = placeName({ namespace: report.metadata.namespace });
    keep.add(place);
    try {
      await cluster.applyReport(report, signal);
      written.push(place);
    } catch (err) {
      errors.push(`cannot write the report of ${place}: ${apiErrorMessage(err)}`);
    }
  }
  if (!complete) return { written, deleted, errors };
  try {
    for (const place of await cluster.writtenReports(signal)) {
      if (keep.has(placeName(place))) continue;
      try {
        await cluster.deleteReport(place, signal);
        deleted.push(placeName(place));
      } catch (err) {
        errors.push(`cannot delete the report of ${placeName(place)}: ${apiErrorMessage(err)}`);
      }
    }
  } catch (err) {
    errors.push(`cannot list the reports written before: ${apiErrorMessage(err)}`);
  }
  return { written, deleted, errors };
}
