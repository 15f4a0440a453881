/**
 * `admission-gateway test --from-recording RECORDING --write DIR`: from traffic to tests. Every review of the
 * recording becomes a case (policy-test/recorded-cases.ts), run through the config's chain as `test` runs a
 * case, its providers answering what the recording says they answered; the answers are pinned as the cases'
 * expectations in test files written into DIR (policy-test/suite-writer.ts). A later config is then tested
 * against real traffic by `admission-gateway test DIR`.
 */
import path from 'node:path';
import { EMBEDDED_CONFIG } from '../config/load.js';
import type { GatewayConfig, ProviderEntry } from '../config/types.js';
import { escapeControl } from '../base/limits.js';
import { recordedCases } from '../policy-test/recorded-cases.js';
import { RecordedAnswers } from '../policy-test/recorded-answers.js';
import type { ProviderDouble, TestSuite } from '../policy-test/suite.js';
import { writePinnedSuites } from '../policy-test/suite-writer.js';
import { RecordingFileError } from '../recording/recording-file.js';
import { configName, runTestFile, type RecordingToTests, type TestIO } from './test.js';
import { UsageError } from './usage.js';

async function readCases(recording: string, given: string) {
  try {
    const read = await recordedCases(recording);
    if (read.cases.length === 0) throw new UsageError(`"${given}" holds no recorded review`, 'test');
    return read;
  } catch (err) {
    if (err instanceof RecordingFileError) throw new UsageError(escapeControl(err.message), 'test');
    throw err;
  }
}

/** Writes the test files; returns the exit code. */
export async function writeRecordedTests(o: RecordingToTests, config: GatewayConfig, io: TestIO): Promise<number> {
  if (config.file === EMBEDDED_CONFIG) {
    throw new UsageError('--from-recording pins the answers of a config file: give it with --config FILE', 'test');
  }
  const entries = config.chain.filter((e): e is ProviderEntry => e.kind === 'provider');
  const discovered = entries.filter((e) => e.discovery).map((e) => e.name);
  if (discovered.length > 0) {
    throw new UsageError(
      `providers ${discovered.join(', ')} are discovered: a recording does not hold their discovery document, ` +
        'so their steps cannot be known; write their test file by hand (providers.<name>.discovery)',
      'test',
    );
  }
  const recording = path.resolve(io.cwd, o.recording);
  const { cases, lines } = await readCases(recording, o.recording);
  const providers = new Map<string, ProviderDouble>(
    entries.map((e) => [e.name, { name: e.name, field: `providers.${e.name}`, answers: new Map(), from: recording }]),
  );
  const suite: TestSuite = {
    file: o.recording,
    config: path.resolve(io.cwd, config.file),
    providers,
    cases,
    locate: () => undefined,
  };
  const result = await runTestFile(suite, config, RecordedAnswers.of(recording, lines), io);
  const pinned = result.cases.flatMap((r, i) =>
    r.answer && r.error === undefined ? [{ testCase: cases[i]!, answer: r.answer }] : [],
  );
  const written = await writePinnedSuites({
    dir: path.resolve(io.cwd, o.dir),
    base: path.basename(o.recording).replace(/\.[^.]*$/, '') || 'recording',
    comment:
      `Written by admission-gateway test --from-recording: the reviews of ${path.basename(o.recording)}, each expecting\n` +
      `what ${path.basename(config.file)} answered it. Run: admission-gateway test ${o.dir}`,
    config: suite.config,
    recording,
    providers: entries.map((e) => e.name),
    cases: pinned,
  });
  const shown = written.map((file) => path.relative(io.cwd, file) || file);
  io.stdout(
    `wrote ${pinned.length} case${pinned.length === 1 ? '' : 's'} pinning the answers of ${configName(config, io.cwd)} ` +
      `into ${shown.join(', ')}\n`,
  );
  for (const r of result.cases) {
    if (r.error !== undefined)
      io.stderr(`not written: ${escapeControl(r.name)}: the review failed: ${escapeControl(r.error)}\n`);
    for (const f of r.failures) {
      if (f.note)
        io.stderr(`${escapeControl(r.name)}: ${escapeControl(f.note)}; its case fails until the file answers\n`);
    }
  }
  return 0;
}
