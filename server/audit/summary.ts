/**
 * The operator's summary of an audit: per step, its mode and what enforcing it would do to the objects that
 * exist. Printed by `admission-gateway audit` and written into each report (annotation). Pure.
 */
import type { Mode } from '../config/step-options.js';
import type { PolicyResult, StepPolicyResult } from './outcomes.js';

/** What the audit knows of a step. */
export interface AuditedStep {
  readonly name: string;
  readonly mode: Mode;
  readonly failurePolicy: 'Fail' | 'Ignore';
}

/** An object as a PolicyReport names it. */
export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
  readonly uid?: string;
}

export interface AuditedObject {
  readonly ref: ObjectRef;
  readonly results: readonly StepPolicyResult[];
}

export type Counts = Record<PolicyResult, number>;

export interface StepSummary extends Counts {
  readonly step: string;
  readonly mode: Mode;
  /** Objects the step applied to (had a result for). */
  readonly checked: number;
}

export const noCounts = (): Counts => ({ pass: 0, fail: 0, warn: 0, error: 0, skip: 0 });

/** Per step, in the steps' order: the counts of its results over `objects`. */
export function summarizeSteps(objects: readonly AuditedObject[], steps: readonly AuditedStep[]): StepSummary[] {
  const counts = new Map(steps.map((s) => [s.name, noCounts()]));
  for (const object of objects) {
    for (const r of object.results) {
      const c = counts.get(r.step);
      if (c) c[r.result]++;
    }
  }
  return steps.map((s) => {
    const c = counts.get(s.name)!;
    return { step: s.name, mode: s.mode, checked: c.pass + c.fail + c.warn + c.error + c.skip, ...c };
  });
}

const objects = (n: number) => `${n} object${n === 1 ? '' : 's'}`;

/** What enforcing the step would mean, in words. */
function verdict(s: StepSummary): string {
  const errors = s.error > 0 ? `; ${objects(s.error)} could not be checked (error)` : '';
  if (s.mode === 'enforce') {
    return s.fail === 0
      ? `enforced; every existing object passes${errors}`
      : `enforced; ${s.fail} existing object${s.fail === 1 ? '' : 's'} would be refused if written again${errors}`;
  }
  return s.fail === 0
    ? `switching it to enforce would refuse none of them${errors}`
    : `switching it to enforce would refuse ${objects(s.fail)}${errors}`;
}

/** One line per step, then why the audit was cut short, if it was. */
export function summaryLines(summaries: readonly StepSummary[], cutShort: readonly string[]): string[] {
  const lines = summaries.map(
    (s) =>
      `${s.step} (mode ${s.mode}): ${objects(s.checked)} checked, ${s.pass} pass, ${s.fail} fail, ${s.error} error` +
      `${s.skip ? `, ${s.skip} skip` : ''}: ${verdict(s)}`,
  );
  return cutShort.length > 0 ? [...lines, ...cutShort.map((reason) => `audit cut short: ${reason}`)] : lines;
}
