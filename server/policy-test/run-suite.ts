/**
 * Runs a suite's cases one after another through a reviewer of its config's chain (the chain `serve` runs,
 * its providers answered by the test file): each case reviewed as the apiserver would call the webhooks
 * (apiserver-review.ts), and held against what it expects.
 */
import { performance } from 'node:perf_hooks';
import { errorMessage } from '../base/errors.js';
import type { Reviewer } from '../dispatch/reviewer.js';
import { reviewAsApiserver } from './apiserver-review.js';
import { caseAnswerOf, type CaseAnswer } from './case-answer.js';
import type { CaseInPlay } from './case-in-play.js';
import { unmetExpectations, type Failure } from './expectations.js';
import type { TestSuite } from './suite.js';

export interface CaseResult {
  readonly name: string;
  /** Where the case is in its file (`cases[3]`). */
  readonly field: string;
  readonly passed: boolean;
  readonly ms: number;
  readonly failures: readonly Failure[];
  /** The review itself failed (a defect of the gateway, not of the chain's answer). */
  readonly error?: string;
  readonly answer?: CaseAnswer;
}

export interface SuiteResult {
  readonly file: string;
  /** The config it ran, as the file names it. */
  readonly config: string;
  readonly cases: readonly CaseResult[];
  readonly ms: number;
}

const round = (ms: number): number => Math.round(ms * 1000) / 1000;

export async function runSuite(
  suite: TestSuite,
  config: string,
  deps: { readonly reviewer: Reviewer; readonly play: CaseInPlay },
): Promise<SuiteResult> {
  const started = performance.now();
  const cases: CaseResult[] = [];
  for (const testCase of suite.cases) {
    const begun = performance.now();
    deps.play.begin(testCase);
    let answer: CaseAnswer | undefined;
    let error: string | undefined;
    try {
      answer = caseAnswerOf(await reviewAsApiserver(deps.reviewer, testCase.request, testCase.route));
    } catch (err) {
      error = errorMessage(err);
    }
    const missing: Failure[] = deps.play
      .end()
      .map((note) => ({ field: 'provider answers', expected: [], actual: [], note }));
    const failures = [...missing, ...(answer ? unmetExpectations(testCase.expect, answer) : [])];
    cases.push({
      name: testCase.name,
      field: testCase.field,
      passed: failures.length === 0 && error === undefined,
      ms: round(performance.now() - begun),
      failures,
      ...(error !== undefined ? { error } : {}),
      ...(answer ? { answer } : {}),
    });
  }
  return { file: suite.file, config, cases, ms: round(performance.now() - started) };
}
