/** The counts a run of test files comes to, and the exit code they make. */
import type { SuiteResult } from './run-suite.js';

export interface TestSummary {
  readonly files: number;
  readonly cases: number;
  readonly passed: number;
  /** Cases whose answer did not meet their expectations. */
  readonly failed: number;
  /** Cases whose review itself failed (counted in `failed` too). */
  readonly errors: number;
}

export function summariseTests(suites: readonly SuiteResult[]): TestSummary {
  const cases = suites.flatMap((s) => s.cases);
  const passed = cases.filter((c) => c.passed).length;
  return {
    files: suites.length,
    cases: cases.length,
    passed,
    failed: cases.length - passed,
    errors: cases.filter((c) => c.error !== undefined).length,
  };
}

/** The plain closing line CI tools read: `N passed, N failed`. */
export const closingLine = (summary: TestSummary): string => `${summary.passed} passed, ${summary.failed} failed`;
