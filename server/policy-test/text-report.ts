/**
 * The readable report of `admission-gateway test`: a line per case (PASS or FAIL), and under a failed one
 * each expectation not met as a small diff, `-` what was expected and `+` what came; then the counts. Every
 * line is one line of text: what the answer carried (an object's fields, a provider's message) has its
 * control characters escaped, so that it cannot drive the terminal or forge lines.
 */
import { escapeControl } from '../base/limits.js';
import type { Failure } from './expectations.js';
import type { CaseResult, SuiteResult } from './run-suite.js';
import { closingLine, type TestSummary } from './test-summary.js';

const ms = (value: number): string => `${value < 10 ? value.toFixed(1) : Math.round(value)} ms`;

/** A failure's lines, each indented by `indent`. */
export function failureLines(failure: Failure, indent = ''): string[] {
  return [
    `${indent}${failure.field}`,
    ...(failure.note !== undefined ? [`${indent}  ${failure.note}`] : []),
    ...failure.expected.map((line) => `${indent}  - ${line}`),
    ...failure.actual.map((line) => `${indent}  + ${line}`),
  ].map(escapeControl);
}

function caseLines(result: CaseResult): string[] {
  const head = `  ${result.passed ? 'PASS' : 'FAIL'}  ${escapeControl(result.name)} (${ms(result.ms)})`;
  if (result.passed) return [head];
  const error = result.error !== undefined ? [`        review failed: ${escapeControl(result.error)}`] : [];
  return [head, ...error, ...result.failures.flatMap((f) => failureLines(f, '        '))];
}

/** One file's section. */
export function renderSuite(suite: SuiteResult): string {
  const lines = [
    `${escapeControl(suite.file)} (config ${escapeControl(suite.config)})`,
    ...suite.cases.flatMap(caseLines),
  ];
  return `${lines.join('\n')}\n`;
}

export function renderSummary(summary: TestSummary): string {
  const files = `${summary.files} test file${summary.files === 1 ? '' : 's'}, ${summary.cases} case${summary.cases === 1 ? '' : 's'}`;
  return `\n${files}\n${closingLine(summary)}\n`;
}
