/**
 * `admission-gateway test -o junit`: JUnit XML as CI systems read it — one <testsuite> per test file, one
 * <testcase> per case, a <failure> for a case whose answer did not meet its expectations (the message the
 * first of them, the body the whole diff) and an <error> for one whose review failed. Text from the answers
 * is escaped, and characters XML 1.0 cannot carry at all (controls, lone surrogates) are written as \uXXXX.
 */
import type { CaseResult, SuiteResult } from './run-suite.js';
import { failureLines } from './text-report.js';
import type { TestSummary } from './test-summary.js';

const NOT_XML = /[^\t\n\r\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;
const ENTITIES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
};

export function xmlText(text: string): string {
  return text
    .replace(NOT_XML, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** Whitespace a parser would make a space in an attribute's value (XML 1.0, 3.3.3), kept as it is by references. */
const ATTRIBUTE_WHITESPACE: Readonly<Record<string, string>> = { '\n': '&#10;', '\r': '&#13;', '\t': '&#9;' };

/** `text` as an attribute's value: escaped as xmlText, its line breaks and tabs kept. */
export function xmlAttribute(text: string): string {
  return xmlText(text).replace(/[\n\r\t]/g, (c) => ATTRIBUTE_WHITESPACE[c]!);
}

const seconds = (ms: number): string => (ms / 1000).toFixed(3);

function testcase(suite: SuiteResult, result: CaseResult): string {
  const open = `    <testcase name="${xmlAttribute(result.name)}" classname="${xmlAttribute(suite.file)}" time="${seconds(result.ms)}"`;
  if (result.passed) return `${open}/>`;
  const details = result.failures.flatMap((f) => failureLines(f)).join('\n');
  const inner =
    result.error !== undefined
      ? `<error message="${xmlAttribute(result.error)}" type="ReviewError">${xmlText(details)}</error>`
      : `<failure message="${xmlAttribute(summaryOf(result))}" type="ExpectationFailed">${xmlText(details)}</failure>`;
  return `${open}>\n      ${inner}\n    </testcase>`;
}

/** The first failure in one line: `allowed: expected false, got true`. */
function summaryOf(result: CaseResult): string {
  const [first] = result.failures;
  if (!first) return 'failed';
  const more = result.failures.length > 1 ? ` (and ${result.failures.length - 1} more)` : '';
  const what =
    first.note ?? `expected ${first.expected.join(', ') || '(nothing)'}, got ${first.actual.join(', ') || '(nothing)'}`;
  return `${first.field}: ${what}${more}`;
}

export function renderJunit(suites: readonly SuiteResult[], summary: TestSummary): string {
  const ms = suites.reduce((total, s) => total + s.ms, 0);
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="admission-gateway test" tests="${summary.cases}" failures="${summary.failed - summary.errors}" errors="${summary.errors}" time="${seconds(ms)}">`,
  ];
  for (const suite of suites) {
    const failed = suite.cases.filter((c) => !c.passed);
    const errors = failed.filter((c) => c.error !== undefined).length;
    lines.push(
      `  <testsuite name="${xmlAttribute(suite.file)}" tests="${suite.cases.length}" failures="${failed.length - errors}" errors="${errors}" skipped="0" time="${seconds(suite.ms)}">`,
      '    <properties>',
      `      <property name="config" value="${xmlAttribute(suite.config)}"/>`,
      '    </properties>',
      ...suite.cases.map((c) => testcase(suite, c)),
      '  </testsuite>',
    );
  }
  lines.push('</testsuites>');
  return `${lines.join('\n')}\n`;
}
