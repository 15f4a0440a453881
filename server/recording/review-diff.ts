/**
 * What a candidate chain would answer differently from what was answered: a recorded review that would now be
 * denied or allowed, denied with another message or code, whose patch would change (the operations added and
 * removed), or whose warnings would. Pure functions of the two answers, so the whole report is testable without
 * a chain.
 */
import type { AdmissionRequest, JsonPatchOperation } from '../admission/types.js';
import { escapeControl } from '../base/limits.js';
import type { RecordedAnswer } from './recorded-review.js';

export type Change =
  | { readonly kind: 'newly_denied'; readonly code?: number; readonly message: string }
  | { readonly kind: 'newly_allowed'; readonly was: string }
  | {
      readonly kind: 'denial_changed';
      readonly was: string;
      readonly wasCode?: number;
      readonly message: string;
      readonly code?: number;
    }
  | {
      readonly kind: 'patch_changed';
      readonly added: readonly JsonPatchOperation[];
      readonly removed: readonly JsonPatchOperation[];
    }
  | { readonly kind: 'warnings_changed'; readonly added: readonly string[]; readonly removed: readonly string[] };

export type ChangeKind = Change['kind'];

/** A JSON value with its keys in order, so that equal values serialise alike. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record)
      .filter((k) => record[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(record[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** `b` without one occurrence of each of `a`'s, by `key`, in `b`'s order. */
export function minus<T>(b: readonly T[], a: readonly T[], key: (item: T) => string): T[] {
  const left = new Map<string, number>();
  for (const item of a) left.set(key(item), (left.get(key(item)) ?? 0) + 1);
  return b.filter((item) => {
    const n = left.get(key(item)) ?? 0;
    if (n === 0) return true;
    left.set(key(item), n - 1);
    return false;
  });
}

/**
 * The changes from the recorded answer to the candidate's, in a fixed order; none: the same answer. The patch
 * and the warnings are compared when the verdict is the same (an allowed answer's patch only).
 */
export function diffAnswers(recorded: RecordedAnswer, candidate: RecordedAnswer): Change[] {
  const changes: Change[] = [];
  if (recorded.allowed && !candidate.allowed) {
    changes.push({
      kind: 'newly_denied',
      ...(candidate.code !== undefined ? { code: candidate.code } : {}),
      message: candidate.message ?? '',
    });
  } else if (!recorded.allowed && candidate.allowed) {
    changes.push({ kind: 'newly_allowed', was: recorded.message ?? '' });
  } else if (!recorded.allowed) {
    // Denied both times: a denial for more or other reasons is as much a change as a new one.
    if (recorded.message !== candidate.message || recorded.code !== candidate.code) {
      changes.push({
        kind: 'denial_changed',
        was: recorded.message ?? '',
        ...(recorded.code !== undefined ? { wasCode: recorded.code } : {}),
        message: candidate.message ?? '',
        ...(candidate.code !== undefined ? { code: candidate.code } : {}),
      });
    }
  } else {
    // Only an allowed answer carries its patch; a denial's is not applied either way.
    const before = recorded.patch ?? [];
    const after = candidate.patch ?? [];
    const added = minus(after, before, canonical);
    const removed = minus(before, after, canonical);
    if (added.length > 0 || removed.length > 0) changes.push({ kind: 'patch_changed', added, removed });
  }
  // A review whose verdict flips says so; the warnings that came and went with it would only repeat it.
  if (recorded.allowed !== candidate.allowed) return changes;
  const beforeWarnings = recorded.warnings ?? [];
  const afterWarnings = candidate.warnings ?? [];
  const added = minus(afterWarnings, beforeWarnings, String);
  const removed = minus(beforeWarnings, afterWarnings, String);
  if (added.length > 0 || removed.length > 0) changes.push({ kind: 'warnings_changed', added, removed });
  return changes;
}

/** How the report names a request: `CREATE Pod team-a/web`, `UPDATE Deployment.apps team-a/api`. */
export function describeRequest(request: AdmissionRequest): string {
  const kind = request.kind.group ? `${request.kind.kind}.${request.kind.group}` : request.kind.kind;
  const name =
    request.name || (request.object?.metadata?.generateName ? `${request.object.metadata.generateName}*` : '');
  const where = request.namespace ? `${request.namespace}/${name}` : name;
  return `${request.operation} ${kind}${where ? ` ${where}` : ''}${request.subResource ? ` (${request.subResource})` : ''}`;
}

/** One replayed review that would be answered differently. */
export interface ReviewDifference {
  /** The line of the recording. */
  readonly line: number;
  readonly route: string;
  readonly uid: string;
  readonly request: string;
  readonly changes: readonly Change[];
}

export interface NotRecorded {
  /** A provider step of the candidate the recording has no answer of, for `--offline`. */
  readonly step: string;
  readonly lines: readonly number[];
}

export interface ReplayReport {
  readonly recording: string;
  readonly config: string;
  readonly offline: boolean;
  readonly reviews: number;
  readonly summary: Readonly<Record<ChangeKind | 'unchanged', number>>;
  readonly differences: readonly ReviewDifference[];
  readonly notRecorded: readonly NotRecorded[];
}

const HEADINGS: Readonly<Record<ChangeKind, string>> = {
  newly_denied: 'newly denied',
  newly_allowed: 'newly allowed',
  denial_changed: 'with the denial changed',
  patch_changed: 'with the patch changed',
  warnings_changed: 'with the warnings changed',
};

const CHANGE_KINDS = Object.keys(HEADINGS) as ChangeKind[];

/** The counts of a report's differences: a review with several changes counts once under each. */
export function summarise(reviews: number, differences: readonly ReviewDifference[]): ReplayReport['summary'] {
  const count = (kind: ChangeKind) => differences.filter((d) => d.changes.some((c) => c.kind === kind)).length;
  return {
    newly_denied: count('newly_denied'),
    newly_allowed: count('newly_allowed'),
    denial_changed: count('denial_changed'),
    patch_changed: count('patch_changed'),
    warnings_changed: count('warnings_changed'),
    unchanged: reviews - differences.length,
  };
}

const opText = (op: JsonPatchOperation): string =>
  `${op.op} ${op.path}${'from' in op ? ` from ${op.from}` : ''}${'value' in op ? ` ${canonical(op.value)}` : ''}`;

function changeLines(change: Change): string[] {
  switch (change.kind) {
    case 'newly_denied':
      return [`    ${change.message}`];
    case 'newly_allowed':
      return [`    was denied: ${change.was}`];
    case 'denial_changed': {
      // The codes are shown only when they differ: the message is what usually changes.
      const codes = change.wasCode !== change.code;
      const code = (n: number | undefined) => (codes && n !== undefined ? ` (code ${n})` : '');
      return [`    was: ${change.was}${code(change.wasCode)}`, `    now: ${change.message}${code(change.code)}`];
    }
    case 'patch_changed':
      return [...change.added.map((op) => `    + ${opText(op)}`), ...change.removed.map((op) => `    - ${opText(op)}`)];
    case 'warnings_changed':
      return [...change.added.map((w) => `    + ${w}`), ...change.removed.map((w) => `    - ${w}`)];
  }
}

/** The report for a person: the summary, then each kind of change with its reviews. */
export function renderReport(report: ReplayReport): string {
  const { summary } = report;
  const out = [
    `replayed ${report.reviews} review${report.reviews === 1 ? '' : 's'} of ${report.recording} on ${report.config}${
      report.offline ? ' (offline: providers answered from the recording)' : ''
    }`,
    `${CHANGE_KINDS.map((k) => `${summary[k]} ${HEADINGS[k]}`).join(', ')}, ${summary.unchanged} unchanged`,
  ];
  for (const kind of CHANGE_KINDS) {
    const found = report.differences.flatMap((d) => d.changes.filter((c) => c.kind === kind).map((c) => ({ d, c })));
    if (found.length === 0) continue;
    out.push('', `${HEADINGS[kind]}:`);
    for (const { d, c } of found) out.push(`  line ${d.line}: ${d.request} (${d.route})`, ...changeLines(c));
  }
  if (report.notRecorded.length > 0) {
    out.push('', 'not recorded (offline: these provider steps allowed):');
    for (const n of report.notRecorded)
      out.push(`  ${n.step}: line${n.lines.length === 1 ? '' : 's'} ${n.lines.join(', ')}`);
  }
  // Each entry is one line: what a recording says is escaped there, line breaks included.
  return `${out.map(escapeControl).join('\n')}\n`;
}
