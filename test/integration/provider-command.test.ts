/**
 * `admission-gateway provider` as a real process: it serves the config's plugin entries as a remote provider
 * with a generated certificate, a gateway that registers it with discovery gets the patch the compiled-in
 * plugin gives, and SIGTERM stops it with exit code 0.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { caBundle } from '../../certs/generate.js';
import { podCreate } from '../fixtures/reviews/index.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { startHarness, type AnswerReview, type Harness } from '../helpers/gateway-harness.js';

const LABELS = { labels: { 'cost-center': 'shared' } };

describe('admission-gateway provider (a process)', function () {
  this.timeout(60_000);
  let dir: string;
  const harnesses: Harness[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'provider-command-'));
  });
  after(async () => {
    for (const h of harnesses) await h.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves the plugin entries, answers as the compiled-in plugin, and exits 0 on SIGTERM', async () => {
    const config = join(dir, 'gateway.yaml');
    await writeFile(
      config,
      stringify({
        server: {
          host: '127.0.0.1',
          port: 0,
          tls: {
            certFile: join(dir, 'tls.crt'),
            keyFile: join(dir, 'tls.key'),
            dnsNames: ['localhost'],
            ipAddresses: ['127.0.0.1'],
          },
        },
        chain: [{ plugin: 'default-labels', settings: LABELS }],
      }),
    );
    const child = spawn(process.execPath, ['scripts/admission-gateway.mjs', 'provider', '--config', config], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      let output = '';
      const port = await new Promise<number>((resolve, reject) => {
        child.stdout.setEncoding('utf8');
        child.stdout.on('data', (chunk: string) => {
          output += chunk;
          for (const line of output.split('\n')) {
            if (!line.includes('"provider serving"')) continue;
            resolve((JSON.parse(line) as { port: number }).port);
          }
        });
        void exited.then((code) => reject(new Error(`provider exited with ${code}: ${output}`)));
      });

      const remote = await startHarness({
        yaml: `
chain:
  - provider: labels
    url: https://127.0.0.1:${port}
    caBundle: ${caBundle(await readFile(join(dir, 'ca.crt'), 'utf8'))}
    discovery: true
`,
      });
      harnesses.push(remote);
      const local = await startHarness({
        yaml: `chain:\n  - plugin: default-labels\n    settings: ${JSON.stringify(LABELS)}\n`,
      });
      harnesses.push(local);
      const mutate = async (h: Harness) => ((await h.post('/mutate', podCreate())).body as AnswerReview).response;
      const [viaProvider, inProcess] = [await mutate(remote), await mutate(local)];
      assert.ok(inProcess.patch);
      assert.equal(viaProvider.patch, inProcess.patch);
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0);
  });
});
