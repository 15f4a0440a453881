/**
 * README's `record:` example, as someone trying it on a laptop would: written into gateway.yaml at the
 * repository's root, its path must be one the gateway can open at start, and one git ignores (a recording
 * holds request objects).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Registry } from 'prom-client';
import { createLogger } from '../../../server/base/log.js';
import { parseConfigText } from '../../../server/config/load.js';
import { createMetrics } from '../../../server/metrics/metrics.js';
import { Recorder, openRecording } from '../../../server/recording/recorder.js';
import { REPO_ROOT } from '../../helpers/cli.js';

/** The first yaml block of README's "Recording and replaying reviews". */
function readmeRecordExample(): string {
  const readme = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Recording and replaying reviews'));
  const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, 'README has a yaml block under "Recording and replaying reviews"');
  return block;
}

describe("README's record: example", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'record-example-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('names a file the gateway opens at start from a fresh folder, one git ignores at the root', async () => {
    const config = parseConfigText(readmeRecordExample(), 'gateway.yaml', dir);
    const recorder = new Recorder(config.record, {
      metrics: createMetrics(new Registry(), { defaultMetrics: false }),
      log: createLogger('silent'),
    });

    await openRecording(recorder, config);
    await recorder.close();

    assert.ok((await stat(config.record.path)).isFile());
    const relative = path.relative(dir, config.record.path);
    // Exit code 0: ignored; 1: not.
    execFileSync('git', ['check-ignore', '-q', '--no-index', relative], { cwd: REPO_ROOT, stdio: 'ignore' });
  });
});
