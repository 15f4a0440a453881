/**
 * `admission-gateway audit` through the CLI's entry, before any cluster call: its help, its usage errors, and
 * the refusal to run without credentials. Against the real apiserver: test/e2e/audit.e2e.ts.
 */
import assert from 'node:assert/strict';
import { configFolderPerTest, runCliCaptured } from '../helpers/cli.js';

describe('CLI audit', function () {
  const folder = configFolderPerTest('gateway-cli-audit-');

  it('prints its help, naming every option', async function () {
    const { code, stdout } = await runCliCaptured(['audit', '--help']);
    assert.equal(code, 0);
    assert.match(
      stdout,
      /^usage: admission-gateway audit \[--config FILE\] \[--step NAME\] \[--dry-run\] \[--output text\|json\] \[--exit-code\]/,
    );
    for (const option of ['--step NAME', '--dry-run', '--output, -o FORMAT', '--exit-code', '--kubeconfig FILE']) {
      assert.ok(stdout.includes(option), option);
    }
  });

  it('refuses a bad --output, an argument, and another command’s option, with exit code 2', async function () {
    assert.deepEqual(await runCliCaptured(['audit', '-o', 'yaml']), {
      code: 2,
      stdout: '',
      stderr: 'admission-gateway: --output: expected text or json, got "yaml"\n',
    });
    assert.deepEqual(await runCliCaptured(['audit', 'pods']), {
      code: 2,
      stdout: '',
      stderr: 'admission-gateway: audit: unexpected argument "pods"\n',
    });
    const other = await runCliCaptured(['audit', '--route', 'validate']);
    assert.equal(other.code, 2);
    assert.equal(other.stderr.split('\n')[0], 'admission-gateway audit: unknown option --route (an option of review)');
  });

  it('refuses to run without credentials, saying where it looked', async function () {
    const config = await folder.config('kube: { kubeconfig: ./missing-kubeconfig }\nchain: []\n');
    const { code, stderr } = await runCliCaptured(['audit', '--config', config], { cwd: folder.dir });
    assert.equal(code, 1);
    assert.match(stderr, /missing-kubeconfig/);
  });
});
