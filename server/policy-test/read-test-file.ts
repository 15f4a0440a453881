/**
 * Reads a test file (docs/policy-tests.md) without trusting it: every field is checked, and a mistake is a
 * ConfigError naming the file, its line and column, the field and what was expected (exit code 2), as
 * gateway.yaml's are.
 */
import path from 'node:path';
import { didYouMean } from '../base/did-you-mean.js';
import { ConfigError, errorMessage } from '../base/errors.js';
import { readRegularFile } from '../base/regular-file.js';
import { locateConfigError, type LocateField } from '../config/field-positions.js';
import { parseYamlText } from '../config/load.js';
import { MAX_POLICY_PATHS } from '../config/native-policies-entry.js';
import { Reader, childPath } from '../config/reader.js';
import { readCase } from './read-case.js';
import { readProviderDouble } from './read-provider-double.js';
import { TEST_API_VERSION, TEST_KIND, type ProviderDouble, type TestCase, type TestSuite } from './suite.js';

/** Largest test file read: a suite written from a recording keeps to it (suite-writer.ts). */
export const MAX_TEST_FILE_BYTES = 32 * 1024 * 1024;
/** Cases one test file may hold. */
export const MAX_CASES_PER_FILE = 10_000;

const FIELDS = ['apiVersion', 'kind', 'config', 'policies', 'exceptions', 'providers', 'cases'] as const;

/** Files or folders `policies` or `exceptions` may name (as an admissionPolicies entry's `files`). */
export const MAX_TEST_FILE_PATHS = MAX_POLICY_PATHS;

/** A list of files or folders at `field`, resolved against the test file's folder. */
function readPaths(reader: Reader, value: unknown, field: string, dir: string): string[] {
  const list = reader.stringList(value, field) ?? [];
  if (list.length > MAX_TEST_FILE_PATHS)
    reader.fail(field, `expected at most ${MAX_TEST_FILE_PATHS} files or folders, got ${list.length}`);
  list.forEach((item, i) => {
    if (item === '') reader.fail(childPath(field, i), 'expected a file or folder');
  });
  return list.map((item) => path.resolve(dir, item));
}

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function readText(file: string, absolute: string): Promise<string> {
  try {
    return (await readRegularFile(absolute, MAX_TEST_FILE_BYTES)).toString('utf8');
  } catch (err) {
    throw new ConfigError(file, '(file)', `cannot read the test file: ${errorMessage(err)}`);
  }
}

function readCases(reader: Reader, value: unknown): unknown[] {
  const list = reader.list(value, 'cases');
  if (!list || list.length === 0) reader.fail('cases', 'is required (a list of at least one case)');
  if (list.length > MAX_CASES_PER_FILE) {
    reader.fail('cases', `holds ${list.length} cases, more than ${MAX_CASES_PER_FILE}: split it into several files`);
  }
  return list;
}

/** Every case's name is its own: answers and reports find a case by it. */
function checkNames(reader: Reader, cases: readonly TestCase[]): void {
  const seen = new Map<string, string>();
  for (const c of cases) {
    const first = seen.get(c.name);
    if (first) reader.fail(`${c.field}.name`, `"${c.name}" is already the name of ${first}`);
    seen.set(c.name, c.field);
  }
}

/** Each answer is for a case the file has. */
function checkAnswered(reader: Reader, providers: Iterable<ProviderDouble>, cases: readonly TestCase[]): void {
  const names = new Set(cases.map((c) => c.name));
  for (const provider of providers) {
    for (const name of provider.answers.keys()) {
      if (names.has(name)) continue;
      reader.fail(childPath(`${provider.field}.answers`, name), `no case is named "${name}"${didYouMean(name, names)}`);
    }
  }
}

async function readSuite(value: unknown, file: string, dir: string, locate: LocateField): Promise<TestSuite> {
  const reader = new Reader(file);
  const top = reader.map(value, '', FIELDS, false);
  if (top.apiVersion !== TEST_API_VERSION) reader.fail('apiVersion', `expected ${TEST_API_VERSION}`, top.apiVersion);
  if (top.kind !== TEST_KIND) reader.fail('kind', `expected ${TEST_KIND}`, top.kind);
  const config = path.resolve(dir, reader.requiredString(top.config, 'config'));
  const policies = readPaths(reader, top.policies, 'policies', dir);
  const exceptions = readPaths(reader, top.exceptions, 'exceptions', dir);
  const cases: TestCase[] = [];
  for (const [i, item] of readCases(reader, top.cases).entries()) {
    cases.push(await readCase(reader, item, `cases[${i}]`, dir));
  }
  checkNames(reader, cases);
  const providers = new Map<string, ProviderDouble>();
  if (top.providers !== undefined && !isMap(top.providers)) reader.fail('providers', 'expected a map', top.providers);
  for (const [name, item] of Object.entries(top.providers ?? {})) {
    providers.set(name, readProviderDouble(reader, name, item, dir));
  }
  checkAnswered(reader, providers.values(), cases);
  return { file, config, policies, exceptions, providers, cases, locate };
}

/** The test file `file` (as named; read relative to `cwd`), checked. */
export async function readTestFile(file: string, cwd: string): Promise<TestSuite> {
  const absolute = path.resolve(cwd, file);
  const { value, locateField } = parseYamlText(await readText(file, absolute), file);
  try {
    return await readSuite(value, file, path.dirname(absolute), locateField);
  } catch (err) {
    throw locateConfigError(err, file, locateField);
  }
}
