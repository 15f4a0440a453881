/**
 * Writes test files that pin what a config answers (`test --from-recording`): each case its request whole,
 * its route, and an `expect` of the whole answer — allowed, a refusal's code and message, every warning and
 * audit annotation (`whole`), and on a mutate route the patch. The providers answer from the recording, named
 * relative to the files, as the config is. A suite too large for one file (MAX_CASES_WRITTEN cases or
 * MAX_WRITTEN_BYTES) is split into numbered files, each well within what a test file may hold.
 */
import { mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import type { CaseAnswer } from './case-answer.js';
import { TEST_FILE_SUFFIX } from './find-test-files.js';
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
  /** File names start with it: `<base>.test.yaml`, or `<base>-001.test.yaml`, … when split. */
  readonly base: string;
  /** A comment heading each file. */
  readonly comment: string;
  /** Absolute paths, written relative to `dir`. */
  readonly config: string;
  readonly recording: string;
  /** The config's provider entries: each answers from the recording. */
  readonly providers: readonly string[];
  /** Cases per file; MAX_CASES_WRITTEN unless a test says fewer. */
  readonly maxCases?: number;
}

/** Files would replace others: the message names the first. */
export class ExistingSuiteError extends Error {
  constructor(readonly file: string) {
    super(`${file} already exists: remove it, or write into another folder`);
    this.name = 'ExistingSuiteError';
  }
}

/**
 * Writes pinned cases as they come, a file each time one is full, so that a recording of any length is turned
 * into files holding only one file's cases at a time. Files are numbered as they are written; when there is one
 * only, it is renamed `<base>.test.yaml` at the end. A folder already holding files of those names is refused
 * before anything is written, rather than mixing old files with new ones.
 */
export class PinnedSuiteWriter {
  private readonly header: string;
  private cases: string[] = [];
  private bytes = 0;
  private readonly written: string[] = [];

  private constructor(private readonly o: PinnedSuites) {
    const relative = (file: string) => path.relative(o.dir, file).split(path.sep).join('/');
    const comment = o.comment
      .split('\n')
      .map((line) => `# ${line}`)
      .join('\n');
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
    this.header = `${comment}\n${header}cases:\n`;
  }

  /** A writer into `o.dir` (created when missing), refused when the folder has files of its names. */
  static async open(o: PinnedSuites): Promise<PinnedSuiteWriter> {
    await mkdir(o.dir, { recursive: true });
    const literal = (text: string) => text.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
    const ours = new RegExp(`^${literal(o.base)}(-\\d+)?${literal(TEST_FILE_SUFFIX)}$`);
    const existing = (await readdir(o.dir)).filter((name) => ours.test(name)).sort();
    if (existing[0] !== undefined) throw new ExistingSuiteError(path.join(o.dir, existing[0]));
    return new PinnedSuiteWriter(o);
  }

  async add(testCase: TestCase, answer: CaseAnswer): Promise<void> {
    const text = caseText(testCase, answer);
    const size = Buffer.byteLength(text);
    if (
      this.cases.length >= (this.o.maxCases ?? MAX_CASES_WRITTEN) ||
      (this.cases.length > 0 && this.bytes + size > MAX_WRITTEN_BYTES)
    ) {
      await this.flush();
    }
    this.cases.push(text);
    this.bytes += size;
  }

  /** Writes what is left; returns the files written. */
  async finish(): Promise<string[]> {
    if (this.cases.length > 0) await this.flush();
    if (this.written.length === 1) {
      const single = path.join(this.o.dir, `${this.o.base}${TEST_FILE_SUFFIX}`);
      await rename(this.written[0]!, single);
      this.written[0] = single;
    }
    return this.written;
  }

  private async flush(): Promise<void> {
    const number = String(this.written.length + 1).padStart(3, '0');
    const file = path.join(this.o.dir, `${this.o.base}-${number}${TEST_FILE_SUFFIX}`);
    await writeFile(file, `${this.header}${this.cases.join('')}`);
    this.written.push(file);
    this.cases = [];
    this.bytes = 0;
  }
}
