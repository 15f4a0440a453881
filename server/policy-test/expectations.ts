/**
 * A case's expectations held against the answer: each one not met is a failure with what was expected and
 * what came, as lines of a diff (`-` expected, `+` actual) for the reports.
 */
import { isDeepStrictEqual } from 'node:util';
import { clip } from '../base/limits.js';
import { canonical, minus } from '../recording/review-diff.js';
import type { CaseAnswer } from './case-answer.js';
import { objectDifferences } from './object-differences.js';
import type { Expectation, MatchMode } from './suite.js';
import type { TextPattern } from './text-pattern.js';

/** An expectation not met. */
export interface Failure {
  /** What it is about: `allowed`, `message`, `warnings`, `auditAnnotations.<key>`, `patch`, `patched /<pointer>`. */
  readonly field: string;
  readonly expected: readonly string[];
  readonly actual: readonly string[];
  /** What went wrong in words, when it is not a difference (a provider without an answer). */
  readonly note?: string;
}

/** Differences of `patched`, warnings and patch operations reported by name; the rest are counted. */
export const MAX_REPORTED_DIFFERENCES = 20;
/** Characters of one value shown. */
const MAX_SHOWN_CHARS = 240;

/** A value as one line of a report: JSON, cut short; `(absent)` for a field that is not there. */
export function shownValue(value: unknown): string {
  if (value === undefined) return '(absent)';
  return clip(JSON.stringify(value) ?? '(not JSON)', MAX_SHOWN_CHARS);
}

const expectedText = (pattern: TextPattern): string => `to ${pattern.describe}`;

/** At most MAX_REPORTED_DIFFERENCES lines of a list, and how many more there are. */
function bounded(lines: readonly string[]): string[] {
  const more = lines.length - MAX_REPORTED_DIFFERENCES;
  return more > 0 ? [...lines.slice(0, MAX_REPORTED_DIFFERENCES), `… and ${more} more`] : [...lines];
}

/** The texts matched by `patterns` one to one (each pattern its own text), and what is left of both. */
function matchTexts(patterns: readonly TextPattern[], texts: readonly string[]) {
  const unused = [...texts];
  const unmatched: TextPattern[] = [];
  for (const pattern of patterns) {
    const i = unused.findIndex((text) => pattern.test(text));
    if (i === -1) unmatched.push(pattern);
    else unused.splice(i, 1);
  }
  return { unmatched, unused };
}

function warningFailures(expected: readonly TextPattern[], mode: MatchMode, actual: readonly string[]): Failure[] {
  // An empty list says there are none, whatever the mode.
  const whole = mode === 'whole' || expected.length === 0;
  const { unmatched, unused } = matchTexts(expected, actual);
  if (unmatched.length === 0 && (!whole || unused.length === 0)) return [];
  return [
    {
      field: 'warnings',
      expected: expected.length === 0 ? ['(none)'] : bounded(unmatched.map((p) => `a warning ${expectedText(p)}`)),
      // Wanting a subset, what was there helps; wanting the whole, what is too much.
      actual: bounded((whole ? unused : actual).map(shownValue)),
    },
  ];
}

function annotationFailures(
  expected: Readonly<Record<string, TextPattern>>,
  mode: MatchMode,
  actual: Readonly<Record<string, string>>,
): Failure[] {
  const failures: Failure[] = [];
  for (const [key, pattern] of Object.entries(expected)) {
    const value = actual[key];
    if (value === undefined || !pattern.test(value)) {
      failures.push({
        field: `auditAnnotations.${key}`,
        expected: [expectedText(pattern)],
        actual: [shownValue(value)],
      });
    }
  }
  if (mode === 'whole') {
    for (const [key, value] of Object.entries(actual)) {
      if (!Object.hasOwn(expected, key)) {
        failures.push({ field: `auditAnnotations.${key}`, expected: ['(absent)'], actual: [shownValue(value)] });
      }
    }
  }
  return failures;
}

function patchedFailures(expectation: Expectation, patched: unknown): Failure[] {
  const differences = objectDifferences(expectation.patched, patched, expectation.patchedMatch);
  const failures: Failure[] = differences.slice(0, MAX_REPORTED_DIFFERENCES).map((d) => ({
    field: `patched ${d.path}`,
    expected: [shownValue(d.expected)],
    actual: [shownValue(d.actual)],
  }));
  const more = differences.length - MAX_REPORTED_DIFFERENCES;
  if (more > 0) failures.push({ field: 'patched', expected: [`… and ${more} more fields`], actual: [] });
  return failures;
}

/** The operations of each list the other lacks; both whole when they differ only in order. */
function patchFailure(expected: readonly unknown[], actual: readonly unknown[]): Failure {
  // Compared as JSON values, as replay compares patches: a test file may write an operation's keys in any order.
  const missing = minus(expected, actual, canonical);
  const extra = minus(actual, expected, canonical);
  const inOrder = missing.length === 0 && extra.length === 0;
  return {
    field: inOrder ? 'patch (the same operations in another order)' : 'patch',
    expected: bounded((inOrder ? expected : missing).map(shownValue)),
    actual: bounded((inOrder ? actual : extra).map(shownValue)),
  };
}

/** Every expectation of `expect` that `answer` does not meet. */
export function unmetExpectations(expect: Expectation, answer: CaseAnswer): Failure[] {
  const failures: Failure[] = [];
  const refusal = answer.allowed ? '(none: allowed)' : undefined;
  if (expect.allowed !== undefined && expect.allowed !== answer.allowed) {
    failures.push({ field: 'allowed', expected: [String(expect.allowed)], actual: [String(answer.allowed)] });
  }
  if (expect.code !== undefined && expect.code !== answer.code) {
    failures.push({ field: 'code', expected: [String(expect.code)], actual: [refusal ?? shownValue(answer.code)] });
  }
  if (expect.message && (answer.message === undefined || !expect.message.test(answer.message))) {
    failures.push({
      field: 'message',
      expected: [expectedText(expect.message)],
      actual: [refusal ?? shownValue(answer.message)],
    });
  }
  if (expect.warnings) failures.push(...warningFailures(expect.warnings, expect.warningsMatch, answer.warnings));
  if (expect.auditAnnotations) {
    failures.push(
      ...annotationFailures(expect.auditAnnotations, expect.auditAnnotationsMatch, answer.auditAnnotations),
    );
  }
  if (expect.patch && !isDeepStrictEqual(expect.patch, answer.patch))
    failures.push(patchFailure(expect.patch, answer.patch));
  if (expect.patched !== undefined) failures.push(...patchedFailures(expect, answer.patched));
  return failures;
}
