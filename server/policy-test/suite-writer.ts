/**
 * Writes test files that pin what a config answers (`test --from-recording`): each case its request whole,
 * its route, and an `expect` of the whole answer — allowed, a refusal's code and message, every warning and
 * audit annotation (`whole`), and on a mutate route the patch. The providers answer from the recording, named
 * relative to the files, as the config is. A suite too large for one file (MAX_CASES_WRITTEN cases or
 * MAX_WRITTEN_BYTES) is split into numbered files, each well within what a test file may hold.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import type { CaseAnswer } from './case-answer.js';
import { TEST_API_VERSION, TEST_KIND, type TestCase } from './suite.js';
import { literalPattern } from './text-pattern.js';

/** Cases per written file, and its bytes at most (a case larger than that alone in its file). */
export const MAX_CASES_WRITTEN = 500;
export const MAX_WRITTEN_BYTES = 16 * 1024 * 1024;

const YAML_OPTIONS = { aliasDuplicateObjects: false, lineWidth: 0 } as const;

/** What a case expects when it pins `answer`. */
export function pinnedExpectation(testCase: TestCase, answer: CaseAnswer): Record<string, unknown> {
  const mutates = testCase.route === 'all' || testCase.route.startsWith('mutate');
  return {
    allowed: answer.allowed,
    ...(answer.code !== undefined ? { code: answer.code } : {}),
    ...(answer.message !== undefined ? { message: literalPattern(answer.message) } : {}),
    warnings: answer.warnings.map(literalPattern),
    warningsMatch: 'whole',
    auditAnnotations: Object.fromEntries(
      Object.entries(answer.auditAnnotations).map(([k, v]) => [k, literalPattern(v)]),
    ),
    auditAnnotationsMatch: 'whole',
    ...(mutates && testCase.request.operation !== 'DELETE' && testCase.request.operation !== 'CONNECT'
      ? { patch: answer.patch }
      : {}),
  };
}

/** A case as the list item of a test file's `cases`. */
function caseText(testCase: TestCase, answer: CaseAnswer): string {
  const item = {
    name: testCase.name,
    route: testCase.route,
    request: testCase.request,
    expect: pinnedExpectation(testCase, answer),
  };
  return stringify([item], YAML_OPTIONS);
}

export interface PinnedSuites {
  /** The folder written into. */
  readonly dir: string;
  /** File names start with it: `<base>.test.yaml`, or `<base>-<n>.test.yaml` when split. */
  readonly base: string;
  /** A comment heading each file. */
  readonly comment: string;
  /** Absolute paths, written relative to `dir`. */
  readonly config: string;
  readonly recording: string;
  /** The config's provider entries: each answers from the recording. */
  readonly providers: readonly string[];
  readonly cases: ReadonlyArray<{ readonly testCase: TestCase; readonly answer: CaseAnswer }>;
}

/** Writes the files; returns their paths. */
export async function writePinnedSuites(o: PinnedSuites): Promise<string[]> {
  const relative = (file: string) => path.relative(o.dir, file).split(path.sep).join('/');
  const header = stringify(
    {
      apiVersion: TEST_API_VERSION,
      kind: TEST_KIND,
      config: relative(o.config),
      ...(o.providers.length > 0
        ? { providers: Object.fromEntries(o.providers.map((name) => [name, { from: relative(o.recording) }])) }
        : {}),
    },
    YAML_OPTIONS,
  );
  const chunks: string[][] = [];
  let bytes = 0;
  for (const { testCase, answer } of o.cases) {
    const text = caseText(testCase, answer);
    const size = Buffer.byteLength(text);
    const last = chunks.at(-1);
    if (!last || last.length >= MAX_CASES_WRITTEN || bytes + size > MAX_WRITTEN_BYTES) {
      chunks.push([text]);
      bytes = size;
    } else {
      last.push(text);
      bytes += size;
    }
  }
  await mkdir(o.dir, { recursive: true });
  const width = String(chunks.length).length;
  const written: string[] = [];
  for (const [i, chunk] of chunks.entries()) {
    const name = chunks.length === 1 ? o.base : `${o.base}-${String(i + 1).padStart(width, '0')}`;
    const file = path.join(o.dir, `${name}.test.yaml`);
    const comment = o.comment
      .split('\n')
      .map((line) => `# ${line}`)
      .join('\n');
    await writeFile(file, `${comment}\n${header}cases:\n${chunk.join('')}`);
    written.push(file);
  }
  return written;
}
