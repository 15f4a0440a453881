/**
 * `admission-gateway test --from-recording RECORDING --write DIR`: from traffic to tests. Every review of the
 * recording becomes a case (policy-test/recorded-cases.ts), run through the config's chain as `test` runs a
 * case, its providers answering what the recording says they answered; the answers are pinned as the cases'
 * expectations in test files written into DIR (policy-test/suite-writer.ts). A later config is then tested
 * against real traffic by `admission-gateway test DIR`. The recording is read a batch of cases at a time.
 */
import path from 'node:path';
import { escapeControl } from '../base/limits.js';
import { EMBEDDED_CONFIG } from '../config/load.js';
import type { GatewayConfig, ProviderEntry } from '../config/types.js';
import { RecordedAnswers } from '../policy-test/recorded-answers.js';
import { recordedCaseBatches } from '../policy-test/recorded-cases.js';
import type { ProviderDouble, TestSuite } from '../policy-test/suite.js';
import { ExistingSuiteError, MAX_CASES_WRITTEN, PinnedSuiteWriter } from '../policy-test/suite-writer.js';
import { RecordingFileError } from '../recording/recording-file.js';
import type { CommandIO } from './offline-reviewer.js';
import { configName, runTestFile, type RecordingToTests } from './test.js';
import { UsageError } from './usage.js';

/** The provider entries of `config`, each answering from `recording`; refused when one is discovered. */
function recordedProviders(config: GatewayConfig, recording: string): Map<string, ProviderDouble> {
  const entries = config.chain.filter((e): e is ProviderEntry => e.kind === 'provider');
  const discovered = entries.filter((e) => e.discovery).map((e) => e.name);
  if (discovered.length > 0) {
    throw new UsageError(
      `providers ${discovered.join(', ')} are discovered: a recording does not hold their discovery document, ` +
        'so their steps cannot be known; write their test file by hand (providers.<name>.discovery)',
      'test',
    );
  }
  return new Map(
    entries.map((e) => [e.name, { name: e.name, field: `providers.${e.name}`, answers: new Map(), from: recording }]),
  );
}

/** Writes the test files; returns the exit code. */
export async function writeRecordedTests(o: RecordingToTests, config: GatewayConfig, io: CommandIO): Promise<number> {
  if (config.file === EMBEDDED_CONFIG) {
    throw new UsageError('--from-recording pins the answers of a config file: give it with --config FILE', 'test');
  }
  const recording = path.resolve(io.cwd, o.recording);
  const providers = recordedProviders(config, recording);
  const configFile = path.resolve(io.cwd, config.file);
  let writer: PinnedSuiteWriter;
  try {
    writer = await PinnedSuiteWriter.open({
      dir: path.resolve(io.cwd, o.dir),
      base: path.basename(o.recording).replace(/\.[^.]*$/, '') || 'recording',
      comment:
        `Written by admission-gateway test --from-recording: the reviews of ${path.basename(o.recording)}, each ` +
        `expecting\nwhat ${path.basename(config.file)} answered it. Run: admission-gateway test ${o.dir}`,
      config: configFile,
      recording,
      providers: [...providers.keys()],
    });
  } catch (err) {
    if (err instanceof ExistingSuiteError) throw new UsageError(`--write: ${err.message}`, 'test');
    throw err;
  }
  let pinned = 0;
  const notes: string[] = [];
  try {
    for await (const { cases, lines } of recordedCaseBatches(recording, MAX_CASES_WRITTEN)) {
      const suite: TestSuite = {
        file: o.recording,
        config: configFile,
        policies: [],
        exceptions: [],
        providers,
        cases,
        locate: () => undefined,
      };
      const result = await runTestFile(suite, config, RecordedAnswers.of(recording, lines), io);
      for (const [i, r] of result.cases.entries()) {
        if (r.answer && r.error === undefined) {
          await writer.add(cases[i]!, r.answer);
          pinned++;
        } else notes.push(`not written: ${r.name}: the review failed: ${r.error ?? 'no answer'}`);
        for (const f of r.failures)
          if (f.note) notes.push(`${r.name}: ${f.note}; its case fails until the file answers`);
      }
    }
  } catch (err) {
    if (err instanceof RecordingFileError) throw new UsageError(escapeControl(err.message), 'test');
    throw err;
  }
  if (pinned === 0) throw new UsageError(`"${o.recording}" holds no recorded review`, 'test');
  const written = (await writer.finish()).map((file) => path.relative(io.cwd, file) || file);
  io.stdout(
    `wrote ${pinned} case${pinned === 1 ? '' : 's'} pinning the answers of ${configName(config, io.cwd)} ` +
      `into ${written.join(', ')}\n`,
  );
  for (const note of notes) io.stderr(`${escapeControl(note)}\n`);
  return 0;
}
