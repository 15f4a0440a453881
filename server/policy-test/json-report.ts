/**
 * `admission-gateway test -o json`: the counts, and per file each case with what failed and the answer it
 * was held against (without the patched object, which may be large: its patch is there).
 */
import { escapeControl } from '../base/limits.js';
import type { SuiteResult } from './run-suite.js';
import type { TestSummary } from './test-summary.js';

export function renderJson(suites: readonly SuiteResult[], summary: TestSummary): string {
  const files = suites.map((suite) => ({
    ...suite,
    cases: suite.cases.map(({ answer, ...rest }) => {
      if (!answer) return rest;
      const { patched: _patched, ...shown } = answer;
      return { ...rest, answer: shown };
    }),
  }));
  // JSON escapes the C0 controls; the lines of its text escape the rest.
  return `${JSON.stringify({ summary, files }, null, 2).split('\n').map(escapeControl).join('\n')}\n`;
}
