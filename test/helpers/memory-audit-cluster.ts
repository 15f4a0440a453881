/**
 * The apiserver as an audit sees it (server/audit/cluster.ts AuditCluster), in memory: discovery of the core
 * group, and lists paged by limit and continue (an offset here); the reports it is given are kept.
 */
import type { KubeObject } from '../../server/admission/types.js';
import type { AuditCluster, ReportPlace } from '../../server/audit/cluster.js';
import type { PolicyReport } from '../../server/audit/reports.js';
import type { AuditTarget, DiscoveredGroup, DiscoveredResource } from '../../server/audit/targets.js';

export const GROUPS: DiscoveredGroup[] = [{ name: '', preferredVersion: 'v1', versions: ['v1'] }];
export const CORE: DiscoveredResource[] = [
  { name: 'configmaps', kind: 'ConfigMap', namespaced: true, verbs: ['get', 'list', 'create'] },
  { name: 'secrets', kind: 'Secret', namespaced: true, verbs: ['get', 'list'] },
  { name: 'pods', kind: 'Pod', namespaced: true, verbs: ['get', 'list'] },
  { name: 'pods/status', kind: 'Pod', namespaced: true, verbs: ['get', 'patch'] },
  { name: 'namespaces', kind: 'Namespace', namespaced: false, verbs: ['get', 'list'] },
];

/** The apiserver as the audit sees it: discovery, and lists paged by limit and continue (an offset here). */
export class MemoryCluster implements AuditCluster {
  readonly applied: PolicyReport[] = [];
  readonly deleted: ReportPlace[] = [];
  readonly limits: number[] = [];
  /** Called before each list, e.g. to stop the run. */
  onList: (target: AuditTarget) => void = () => undefined;

  constructor(
    private readonly items: Readonly<Record<string, readonly KubeObject[]>>,
    private readonly written: ReportPlace[] = [],
  ) {}

  groups() {
    return Promise.resolve(GROUPS);
  }
  resources() {
    return Promise.resolve(CORE);
  }
  listPage(target: AuditTarget, limit: number, token: string | undefined, signal: AbortSignal) {
    this.onList(target);
    if (signal.aborted) return Promise.reject(new Error('aborted'));
    this.limits.push(limit);
    const all = this.items[target.resource] ?? [];
    const from = token ? Number(token) : 0;
    const items = all.slice(from, from + limit);
    const next = from + limit < all.length ? String(from + limit) : undefined;
    return Promise.resolve({ items, ...(next ? { continue: next } : {}) });
  }
  applyReport(report: PolicyReport) {
    this.applied.push(report);
    return Promise.resolve();
  }
  writtenReports() {
    return Promise.resolve(this.written);
  }
  deleteReport(place: ReportPlace) {
    this.deleted.push(place);
    return Promise.resolve();
  }
}
