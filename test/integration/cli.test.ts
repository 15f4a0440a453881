import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent } from 'undici';
import { caBundle } from '../../certs/generate.js';
import { runCliCaptured, type CliRun } from '../helpers/cli.js';
import { podCreate, requestOf } from '../fixtures/reviews/index.js';
import { reviewOf, sendRequest } from '../helpers/gateway-harness.js';
import { decodePatch } from '../helpers/patch.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAIN = join(ROOT, 'server', 'main.ts');
const UID = '0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21';
const KNOWN_PLUGINS = 'default-labels, image-policy, pod-security, require-labels, resource-defaults';

type Run = CliRun;

function spawnCli(args: readonly string[]): ChildProcess {
  const env = { ...process.env };
  delete env.GATEWAY_CONFIG;
  return spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    cwd: ROOT,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** Runs `admission-gateway <args>` as a real process; kills it if it outlives `timeoutMs`. */
function runProcess(args: readonly string[], options: { stdin?: string; timeoutMs?: number } = {}): Promise<Run> {
  const child = spawnCli(args);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin!.end(options.stdin ?? '');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`admission-gateway ${args.join(' ')} did not exit within ${options.timeoutMs ?? 20000} ms`));
    }, options.timeoutMs ?? 20000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The CLI in this process; what main.ts adds (signals, process.exitCode) is covered by the runProcess tests. */
const runCli = (args: readonly string[], options: { stdin?: string } = {}): Promise<Run> =>
  runCliCaptured(args, options);

describe('admission-gateway command line', function () {
  this.timeout(30000);
  let dir: string;

  beforeEach(async function () {
    dir = await mkdtemp(join(tmpdir(), 'gateway-cli-'));
  });

  afterEach(async function () {
    await rm(dir, { recursive: true, force: true });
  });

  async function config(text: string): Promise<string> {
    const file = join(dir, 'gateway.yaml');
    await writeFile(file, text);
    return file;
  }

  describe('--help', function () {
    it('prints the commands and exits 0', async function () {
      const run = await runProcess(['--help']);

      assert.equal(run.code, 0);
      assert.equal(run.stderr, '');
      assert.ok(run.stdout.startsWith('admission-gateway — an admission webhook gateway for Kubernetes\n'), run.stdout);
      for (const command of ['serve', 'certs', 'review']) assert.match(run.stdout, new RegExp(`^  ${command} `, 'm'));
    });

    it('prints the usage of one command with `review --help`', async function () {
      const run = await runCli(['review', '--help']);

      assert.equal(run.code, 0);
      assert.ok(
        run.stdout.startsWith('usage: admission-gateway review <file|-> [--config FILE] [--route ROUTE]\n'),
        run.stdout,
      );
    });

    it('refuses an unknown command with exit code 2', async function () {
      const run = await runProcess(['frobnicate']);

      assert.equal(run.code, 2);
      assert.ok(run.stderr.startsWith('admission-gateway: unknown command "frobnicate"\n'), run.stderr);
    });
  });

  describe('review', function () {
    const CHAIN = `
chain:
  - plugin: default-labels
    settings: { labels: { owner: platform } }
  - plugin: require-labels
    settings: { labels: [owner, cost-center] }
`;
    const mutateReview = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: {
        uid: UID,
        allowed: true,
        patchType: 'JSONPatch',
        patch: Buffer.from(JSON.stringify([{ op: 'add', path: '/metadata/labels/owner', value: 'platform' }])).toString(
          'base64',
        ),
      },
    };
    const expectedOutput = {
      mutate: {
        review: mutateReview,
        patch: [{ op: 'add', path: '/metadata/labels/owner', value: 'platform' }],
        steps: [{ step: 'default-labels', outcome: 'patched' }],
      },
      validate: {
        review: {
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: {
            uid: UID,
            allowed: false,
            status: {
              code: 403,
              reason: 'Forbidden',
              message: 'require-labels: missing required label: cost-center',
            },
          },
        },
        patch: null,
        steps: [{ step: 'require-labels', outcome: 'denied' }],
      },
      allowed: false,
    };

    /** The printed output without the step durations (wall-clock). */
    function withoutDurations(stdout: string): unknown {
      const output = JSON.parse(stdout) as Record<string, { steps?: Array<Record<string, unknown>> } | boolean>;
      for (const phase of Object.values(output)) {
        if (typeof phase === 'object') {
          phase.steps = phase.steps?.map(({ ms, ...rest }) => {
            assert.equal(typeof ms, 'number');
            return rest;
          });
        }
      }
      return output;
    }

    it('runs a review file through mutate, then validate on the mutated object, and prints responses and the decoded patch', async function () {
      const file = join(dir, 'pod.json');
      await writeFile(file, JSON.stringify(podCreate()));

      const run = await runCli(['review', file, '--config', await config(CHAIN)]);

      assert.equal(run.stderr, '');
      assert.equal(run.code, 0);
      assert.deepEqual(withoutDurations(run.stdout), expectedOutput);
    });

    it('reads the review from standard input with `-`', async function () {
      const run = await runCli(['review', '-', '--config', await config(CHAIN)], {
        stdin: JSON.stringify(podCreate()),
      });

      assert.equal(run.code, 0);
      assert.deepEqual(withoutDurations(run.stdout), expectedOutput);
    });

    it('runs one route with --route, e.g. the mutate phase alone', async function () {
      const run = await runCli(['review', '-', '--route', 'mutate', '--config', await config(CHAIN)], {
        stdin: JSON.stringify(podCreate()),
      });

      assert.equal(run.code, 0);
      const output = JSON.parse(run.stdout) as { review: unknown; patch: unknown };
      assert.deepEqual(output.review, mutateReview);
      assert.deepEqual(output.patch, [{ op: 'add', path: '/metadata/labels/owner', value: 'platform' }]);
    });

    it('refuses an input that is not an AdmissionReview with exit code 2 and says what is wrong', async function () {
      const review = podCreate();
      delete (requestOf(review) as { uid?: string }).uid;

      const run = await runCli(['review', '-', '--config', await config(CHAIN)], { stdin: JSON.stringify(review) });

      assert.equal(run.code, 2);
      assert.equal(run.stdout, '');
      assert.equal(run.stderr, 'admission-gateway: invalid AdmissionReview: request.uid is missing or empty\n');
    });
  });

  describe('given an invalid gateway.yaml', function () {
    const cases = [
      {
        name: 'an unknown plugin name, listing the known ones',
        yaml: 'chain:\n  - plugin: no-such-plugin\n',
        error: `chain[0].plugin: unknown plugin "no-such-plugin" (known: ${KNOWN_PLUGINS})`,
      },
      {
        name: 'chain[0].timeoutSeconds out of range',
        yaml: 'chain:\n  - plugin: default-labels\n    timeoutSeconds: 99\n    settings: { labels: { a: b } }\n',
        error: 'chain[0].timeoutSeconds: expected a number from 0.001 to 30, got 99',
      },
      {
        name: 'a misspelt field, listing the known ones',
        yaml: 'chain:\n  - plugin: default-labels\n    failurePolicyy: Ignore\n',
        error:
          'chain[0].failurePolicyy: unknown field (known: plugin, name, match, failurePolicy, timeoutSeconds, mode, sideEffects, reinvocationPolicy, settings)',
      },
      {
        name: 'invalid plugin settings, with the path below settings',
        yaml: 'chain:\n  - plugin: require-labels\n    settings: { labels: team }\n',
        error: 'chain[0].settings.labels: expected a list of strings, got string "team"',
      },
    ];
    for (const c of cases) {
      it(`serve exits 2 naming the file and the field for ${c.name}`, async function () {
        const file = await config(c.yaml);

        const run = await runCli(['serve', '--config', file, '--port', '0', '--ops-port', '0']);

        assert.equal(run.code, 2);
        assert.equal(run.stderr, `admission-gateway: ${file}: ${c.error}\n`);
      });
    }

    it('review exits 2 with the same message', async function () {
      const file = await config(cases[0]!.yaml);
      const review = join(dir, 'pod.json');
      await writeFile(review, JSON.stringify(podCreate()));

      const run = await runCli(['review', review, '--config', file]);

      assert.equal(run.code, 2);
      assert.equal(run.stderr, `admission-gateway: ${file}: ${cases[0]!.error}\n`);
    });
  });

  describe('certs', function () {
    it('generates a CA and serving certificate and prints a caBundle that decodes to the CA PEM', async function () {
      const file = await config('server:\n  tls: { certFile: certs/tls.crt, keyFile: certs/tls.key }\n');

      const first = await runCli(['certs', '--config', file]);
      const second = await runCli(['certs', '--config', file]);

      assert.equal(first.code, 0, first.stderr);
      const caPem = await readFile(join(dir, 'certs', 'ca.crt'), 'utf8');
      assert.equal(first.stdout, `${caBundle(caPem)}\n`);
      assert.equal(Buffer.from(first.stdout.trim(), 'base64').toString('utf8'), caPem);
      const ca = new X509Certificate(caPem);
      const serving = new X509Certificate(await readFile(join(dir, 'certs', 'tls.crt')));
      assert.equal(ca.ca, true);
      assert.ok(serving.checkIssued(ca) && serving.verify(ca.publicKey), 'the serving certificate is signed by the CA');
      assert.match(serving.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
      assert.equal((await stat(join(dir, 'certs', 'tls.key'))).mode & 0o777, 0o600);
      assert.equal(second.stdout, first.stdout, 'a second run reuses the certificates');
    });
  });

  describe('serve', function () {
    it('serves reviews over HTTPS with the generated certificate, and exits 0 after draining on SIGTERM', async function () {
      const file = await config(`
server:
  host: 127.0.0.1
  opsHost: 127.0.0.1
  tls: { certFile: tls.crt, keyFile: tls.key }
kube: { enabled: false }
chain:
  - plugin: default-labels
    settings: { labels: { owner: platform } }
`);
      const child = spawnCli(['serve', '--config', file, '--port', '0', '--ops-port', '0']);
      const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
      let stdout = '';
      const serving = new Promise<{ webhook: string; ops: string }>((resolve, reject) => {
        child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
          stdout += chunk;
          for (const line of stdout.split('\n')) {
            if (!line.includes('"admission-gateway serving"')) continue;
            resolve(JSON.parse(line) as { webhook: string; ops: string });
          }
        });
        void exited.then((code) => reject(new Error(`serve exited with ${code} before serving: ${stdout}`)));
      });
      try {
        const { webhook, ops } = await serving;
        const trusted = new Agent({ connect: { ca: await readFile(join(dir, 'ca.crt')) } });
        try {
          const ready = await sendRequest(trusted, `${ops}/readyz`, 'GET');
          const review = reviewOf(await sendRequest(trusted, `${webhook}/mutate`, 'POST', podCreate()));
          assert.deepEqual({ status: ready.status, text: ready.text }, { status: 200, text: 'ok' });
          assert.deepEqual(decodePatch(review.response), [
            { op: 'add', path: '/metadata/labels/owner', value: 'platform' },
          ]);
        } finally {
          await trusted.close();
        }

        child.kill('SIGTERM');
        assert.equal(await exited, 0);
        assert.match(stdout, /"msg":"stopped"/);
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    });
  });
});
