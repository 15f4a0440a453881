/**
 * The three reports of `admission-gateway test` for a case whose review itself failed (a defect of the gateway,
 * not an answer the expectations refuse): the text report says so under the case, JUnit gives it an <error>
 * rather than a <failure>, JSON carries the error, and the counts hold it as failed and as an error.
 */
import assert from 'node:assert/strict';
import { DOMParser } from '@xmldom/xmldom';
import { renderJson } from '../../../server/policy-test/json-report.js';
import { renderJunit } from '../../../server/policy-test/junit-report.js';
import type { SuiteResult } from '../../../server/policy-test/run-suite.js';
import { summariseTests } from '../../../server/policy-test/test-summary.js';
import { renderSuite, renderSummary } from '../../../server/policy-test/text-report.js';

const SUITE: SuiteResult = {
  file: 'a.test.yaml',
  config: 'gateway.yaml',
  cases: [
    { name: 'breaks', field: 'cases[0]', passed: false, ms: 1.5, failures: [], error: 'cannot apply <patch>\n' },
    {
      name: 'passes',
      field: 'cases[1]',
      passed: true,
      ms: 2,
      failures: [],
      answer: { allowed: true, warnings: [], auditAnnotations: {}, patch: [], patched: { kind: 'Pod' } },
    },
  ],
  ms: 12.5,
};

describe('policy test reports of a review that failed', () => {
  const summary = summariseTests([SUITE]);

  it('counts it as failed and as an error', () => {
    assert.deepEqual(summary, { files: 1, cases: 2, passed: 1, failed: 1, errors: 1 });
  });

  it('text: FAIL with the error under it, then the counts', () => {
    assert.equal(
      renderSuite(SUITE) + renderSummary(summary),
      `a.test.yaml (config gateway.yaml)
  FAIL  breaks (1.5 ms)
        review failed: cannot apply <patch>\\u000a
  PASS  passes (2.0 ms)

1 test file, 2 cases
1 passed, 1 failed
`,
    );
  });

  it('JUnit: an <error>, not a <failure>, counted under errors', () => {
    assert.equal(
      renderJunit([SUITE], summary),
      `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="admission-gateway test" tests="2" failures="0" errors="1" time="0.013">
  <testsuite name="a.test.yaml" tests="2" failures="0" errors="1" skipped="0" time="0.013">
    <properties>
      <property name="config" value="gateway.yaml"/>
    </properties>
    <testcase name="breaks" classname="a.test.yaml" time="0.002">
      <error message="cannot apply &lt;patch&gt;&#10;" type="ReviewError"></error>
    </testcase>
    <testcase name="passes" classname="a.test.yaml" time="0.002"/>
  </testsuite>
</testsuites>
`,
    );
    // An XML parser gives the message back whole: a line break in an attribute is kept by its reference.
    const xml = new DOMParser().parseFromString(renderJunit([SUITE], summary), 'text/xml');
    assert.equal(xml.getElementsByTagName('error')[0]?.getAttribute('message'), 'cannot apply <patch>\n');
  });

  it('JSON: the error on its case, and each answer without the patched object', () => {
    assert.deepEqual(JSON.parse(renderJson([SUITE], summary)), {
      summary: { files: 1, cases: 2, passed: 1, failed: 1, errors: 1 },
      files: [
        {
          file: 'a.test.yaml',
          config: 'gateway.yaml',
          ms: 12.5,
          cases: [
            {
              name: 'breaks',
              field: 'cases[0]',
              passed: false,
              ms: 1.5,
              failures: [],
              error: 'cannot apply <patch>\n',
            },
            {
              name: 'passes',
              field: 'cases[1]',
              passed: true,
              ms: 2,
              failures: [],
              answer: { allowed: true, warnings: [], auditAnnotations: {}, patch: [] },
            },
          ],
        },
      ],
    });
  });
});
