/**
 * The PolicyReport (one per namespace) and ClusterPolicyReport (cluster-scoped objects) of an audit, in the
 * wgpolicyk8s.io/v1alpha2 shape report viewers read. Pure.
 *
 * Each report is bounded (etcd keeps objects up to 1.5 MiB): at most `maxResults` results, the refusals first
 * (fail, error, warn, skip, then pass); its `summary` always counts them all, and the annotation
 * `admissiongateway.io/results-omitted` says how many the list left out. A result's message is cut to
 * MAX_RESULT_MESSAGE characters, and the summary annotation to MAX_SUMMARY_CHARS: a result then stays under
 * about 1 KiB, and the largest report (audit.maxResultsPerReport at most 1500) within etcd's limit.
 */
import { clip } from '../base/limits.js';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../base/managed-by.js';
import type { PolicyResult } from './outcomes.js';
import {
  noCounts,
  summarizeSteps,
  summaryLines,
  type AuditedObject,
  type AuditedStep,
  type Counts,
  type ObjectRef,
} from './summary.js';

export const REPORT_GROUP = 'wgpolicyk8s.io';
export const REPORT_VERSION = 'v1alpha2';
export const REPORT_API_VERSION = `${REPORT_GROUP}/${REPORT_VERSION}`;
/** The name of every report the gateway writes, and its field manager. */
export const REPORT_NAME = 'admission-gateway';
/** `source` of every result. */
export const RESULT_SOURCE = 'admission-gateway';
export const SUMMARY_ANNOTATION = 'admissiongateway.io/audit-summary';
export const OMITTED_ANNOTATION = 'admissiongateway.io/results-omitted';

export const MAX_RESULT_MESSAGE = 256;
export const MAX_SUMMARY_CHARS = 16_384;

export interface ReportResult {
  readonly policy: string;
  readonly rule: string;
  readonly result: PolicyResult;
  readonly message?: string;
  readonly source: string;
  readonly scored: boolean;
  readonly resources: readonly ObjectRef[];
  readonly timestamp: { readonly seconds: number; readonly nanos: number };
  readonly properties: Readonly<Record<string, string>>;
}

export interface PolicyReport {
  readonly apiVersion: typeof REPORT_API_VERSION;
  readonly kind: 'PolicyReport' | 'ClusterPolicyReport';
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels: Readonly<Record<string, string>>;
    readonly annotations: Readonly<Record<string, string>>;
  };
  readonly summary: Counts;
  readonly results: readonly ReportResult[];
}

export interface ReportOptions {
  /** When the audit ran: every result's timestamp. */
  readonly timestamp: Date;
  readonly maxResults: number;
  /** Why the audit was cut short, if it was: said in every report's summary annotation. */
  readonly cutShort: readonly string[];
}

const RANK: Readonly<Record<PolicyResult, number>> = { fail: 0, error: 1, warn: 2, skip: 3, pass: 4 };

const refKey = (r: ObjectRef) => `${r.apiVersion}\u0000${r.kind}\u0000${r.name}`;

function resultsOf(
  objects: readonly AuditedObject[],
  steps: ReadonlyMap<string, AuditedStep>,
  seconds: number,
): ReportResult[] {
  const results = objects.flatMap((object) =>
    object.results.map((r): ReportResult => {
      const step = steps.get(r.step);
      return {
        policy: r.step,
        rule: 'validate',
        result: r.result,
        ...(r.message !== undefined ? { message: clip(r.message, MAX_RESULT_MESSAGE) } : {}),
        source: RESULT_SOURCE,
        scored: true,
        resources: [object.ref],
        timestamp: { seconds, nanos: 0 },
        properties: step ? { mode: step.mode, failurePolicy: step.failurePolicy } : {},
      };
    }),
  );
  return results.sort(
    (a, b) =>
      RANK[a.result] - RANK[b.result] ||
      refKey(a.resources[0]!).localeCompare(refKey(b.resources[0]!)) ||
      a.policy.localeCompare(b.policy),
  );
}

function reportOf(
  kind: PolicyReport['kind'],
  namespace: string | undefined,
  objects: readonly AuditedObject[],
  steps: readonly AuditedStep[],
  options: ReportOptions,
): PolicyReport {
  const all = resultsOf(
    objects,
    new Map(steps.map((s) => [s.name, s])),
    Math.floor(options.timestamp.getTime() / 1000),
  );
  const summary = noCounts();
  for (const r of all) summary[r.result]++;
  const omitted = Math.max(0, all.length - options.maxResults);
  const text = summaryLines(
    summarizeSteps(objects, steps).filter((s) => s.checked > 0),
    options.cutShort,
  ).join('\n');
  return {
    apiVersion: REPORT_API_VERSION,
    kind,
    metadata: {
      name: REPORT_NAME,
      ...(namespace !== undefined ? { namespace } : {}),
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
      annotations: {
        [SUMMARY_ANNOTATION]: clip(text, MAX_SUMMARY_CHARS),
        ...(omitted > 0 ? { [OMITTED_ANNOTATION]: `${omitted} of ${all.length} results not listed` } : {}),
      },
    },
    summary,
    results: all.slice(0, options.maxResults),
  };
}

export interface AuditReports {
  /** One per namespace with results, sorted by namespace. */
  readonly namespaced: readonly PolicyReport[];
  /** For the cluster-scoped objects with results; undefined when there are none. */
  readonly cluster: PolicyReport | undefined;
}

/** The reports of an audit: objects without results (no step applied) are in none. */
export function buildReports(
  objects: readonly AuditedObject[],
  steps: readonly AuditedStep[],
  options: ReportOptions,
): AuditReports {
  const byNamespace = new Map<string, AuditedObject[]>();
  const clusterScoped: AuditedObject[] = [];
  for (const object of objects) {
    if (object.results.length === 0) continue;
    const ns = object.ref.namespace;
    if (ns === undefined) clusterScoped.push(object);
    else {
      const list = byNamespace.get(ns);
      if (list) list.push(object);
      else byNamespace.set(ns, [object]);
    }
  }
  return {
    namespaced: [...byNamespace.keys()]
      .sort()
      .map((ns) => reportOf('PolicyReport', ns, byNamespace.get(ns)!, steps, options)),
    cluster:
      clusterScoped.length > 0 ? reportOf('ClusterPolicyReport', undefined, clusterScoped, steps, options) : undefined,
  };
}
