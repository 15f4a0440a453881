/**
 * `admission-gateway test [PATH…] [--config FILE] [-o text|junit|json]`: policy tests as data (README "Testing
 * your chain in CI", docs/policy-tests.md). Every test file is read and checked first (a mistake exits 2 before
 * any case runs); then each file's cases run through its config's chain as `serve` builds it, with the
 * providers' calls answered by the file (policy-test/provider-doubles.ts, recorded-answers.ts) and the
 * reviewer `review` uses. Exit 0 when every case passed, 1 when any failed.
 */
import path from 'node:path';
import { ConfigError } from '../base/errors.js';
import { locateConfigError } from '../config/field-positions.js';
import { loadConfig } from '../config/load.js';
import type { GatewayConfig } from '../config/types.js';
import { CaseInPlay } from '../policy-test/case-in-play.js';
import { checkProviders } from '../policy-test/check-providers.js';
import { TestPathError, displayName, findTestFiles } from '../policy-test/find-test-files.js';
import { renderJson } from '../policy-test/json-report.js';
import { renderJunit } from '../policy-test/junit-report.js';
import { withIndependentCases } from '../policy-test/independent-cases.js';
import { loadExceptions } from '../exceptions/watched-exceptions.js';
import { createProviderDoubles } from '../policy-test/provider-doubles.js';
import { readTestFile } from '../policy-test/read-test-file.js';
import { RecordedAnswers, chainForCases } from '../policy-test/recorded-answers.js';
import { runSuite, type SuiteResult } from '../policy-test/run-suite.js';
import { suiteConfig } from '../policy-test/suite-config.js';
import type { TestSuite } from '../policy-test/suite.js';
import { renderSuite, renderSummary } from '../policy-test/text-report.js';
import { summariseTests } from '../policy-test/test-summary.js';
import { commandChain, offlineReviewer, type CommandIO } from './offline-reviewer.js';
import { UsageError } from './usage.js';

export const TEST_OUTPUTS = ['text', 'junit', 'json'] as const;
export type TestOutput = (typeof TEST_OUTPUTS)[number];

/** `test --from-recording RECORDING --write DIR`. */
export interface RecordingToTests {
  readonly recording: string;
  readonly dir: string;
}

export interface TestCommand {
  /** Test files and folders; none: the current folder. */
  readonly paths: readonly string[];
  readonly output: TestOutput;
  /** --config: the config every file runs against instead of its own. */
  readonly config?: string;
  readonly fromRecording?: RecordingToTests;
}

/** Checks test's arguments before anything is read. */
export function testCommand(
  args: readonly string[],
  options: {
    output?: string | undefined;
    config?: string | undefined;
    fromRecording?: string | undefined;
    write?: string | undefined;
  },
): TestCommand {
  const output = options.output ?? 'text';
  if (!(TEST_OUTPUTS as readonly string[]).includes(output)) {
    throw new UsageError(`--output: expected ${TEST_OUTPUTS.join(', ')}, got "${output}"`, 'test');
  }
  const { fromRecording: recording, write: dir } = options;
  if (recording === undefined && dir === undefined) {
    return { paths: args, output: output as TestOutput, ...(options.config ? { config: options.config } : {}) };
  }
  if (recording === undefined) throw new UsageError('--write goes with --from-recording RECORDING', 'test');
  if (dir === undefined) throw new UsageError('--from-recording needs --write DIR: the folder to write into', 'test');
  if (args.length > 0) {
    throw new UsageError(`unexpected argument "${args[0]}": --from-recording writes tests, it runs none`, 'test');
  }
  if (options.output !== undefined)
    throw new UsageError('--output goes with running tests, not --from-recording', 'test');
  return { paths: [], output: 'text', fromRecording: { recording, dir } };
}

/** The config's file as a report names it: relative to where the command runs. */
export const configName = (config: GatewayConfig, cwd: string): string =>
  displayName(path.resolve(cwd, config.file), cwd);

/**
 * Runs one test file's cases through `config`'s chain, its providers answered from the file or `recorded`.
 * The chain and the providers' stand-ins live as long as the run of the file.
 */
export async function runTestFile(
  suite: TestSuite,
  config: GatewayConfig,
  recorded: RecordedAnswers,
  io: CommandIO,
): Promise<SuiteResult> {
  checkProviders(suite, config);
  const exceptions = await loadExceptions(config.exceptions, { files: suite.exceptions });
  const play = new CaseInPlay(suite);
  const doubles = createProviderDoubles(suite, play);
  try {
    const { log, metrics, chains } = await commandChain(withIndependentCases(suiteConfig(config, suite)), io, {
      providerDispatcher: (entry) => doubles.dispatcherFor(entry),
    });
    try {
      // Discovered providers answer their discovery document from the file, so their handlers are steps.
      await Promise.all(chains.runtimes().map((r) => r.discover()));
      const providerOf = new Map(chains.runtimes().flatMap((r) => r.steps().map((s) => [s.name, r.entry.name])));
      const chain = chainForCases(chains.current(), providerOf, { suite, play, recorded });
      const reviewer = offlineReviewer(chain, { log, metrics, config, namespaceLabels: play, exceptions });
      return await runSuite(suite, configName(config, io.cwd), { reviewer, play });
    } finally {
      await chains.close();
    }
  } finally {
    await doubles.close();
  }
}

/** The config a test file names; one that cannot be read is the test file's mistake, at its `config`. */
async function configOf(suite: TestSuite): Promise<GatewayConfig> {
  try {
    return await loadConfig(suite.config);
  } catch (err) {
    if (!(err instanceof ConfigError) || err.path !== '(file)') throw err;
    throw locateConfigError(new ConfigError(suite.file, 'config', err.expected), suite.file, suite.locate);
  }
}

/** Runs the tests; returns the exit code. */
export async function runTests(command: TestCommand, io: CommandIO): Promise<number> {
  let files: string[];
  try {
    files = await findTestFiles(command.paths, io.cwd);
  } catch (err) {
    if (err instanceof TestPathError) throw new UsageError(err.message, 'test');
    throw err;
  }
  const suites: TestSuite[] = [];
  for (const file of files) suites.push(await readTestFile(file, io.cwd));
  // Every config is read before any case runs: a mistake in one stops the run before it prints anything.
  const override = command.config !== undefined ? await loadConfig(command.config, { cwd: io.cwd }) : undefined;
  const configs = new Map<string, GatewayConfig>();
  for (const suite of suites) {
    if (!override && !configs.has(suite.config)) configs.set(suite.config, await configOf(suite));
  }
  const recorded = await RecordedAnswers.read(suites);
  const results: SuiteResult[] = [];
  for (const suite of suites) {
    const result = await runTestFile(suite, override ?? configs.get(suite.config)!, recorded, io);
    results.push(result);
    if (command.output === 'text') io.stdout(renderSuite(result));
  }
  const summary = summariseTests(results);
  if (command.output === 'text') io.stdout(renderSummary(summary));
  else io.stdout(command.output === 'junit' ? renderJunit(results, summary) : renderJson(results, summary));
  return summary.failed > 0 ? 1 : 0;
}
