import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent } from 'undici';
import { caBundle, generateCertificates } from '../../certs/generate.js';
import { runCliCaptured, type CliRun, configFolderPerTest } from '../helpers/cli.js';
import { podCreate } from '../fixtures/reviews/index.js';
import { reviewOf, sendRequest } from '../helpers/gateway-harness.js';
import { makeNamedPipe, releaseNamedPipe } from '../helpers/named-pipe.js';
import { KNOWN_PLUGINS } from '../helpers/shipped-plugins.js';
import { decodePatch } from '../helpers/patch.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAIN = join(ROOT, 'server', 'main.ts');

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
  const folder = configFolderPerTest('gateway-cli-');

  describe('the command line', function () {
    it('prints the commands with --help and exits 0', async function () {
      const run = await runProcess(['--help']);

      assert.equal(run.code, 0);
      assert.equal(run.stderr, '');
      assert.ok(run.stdout.startsWith('admission-gateway — an admission webhook gateway for Kubernetes\n'), run.stdout);
      for (const command of ['serve', 'certs', 'review', 'manifests', 'version']) {
        assert.match(run.stdout, new RegExp(`^  ${command} `, 'm'));
      }
    });

    it('prints the usage of one command with `<command> --help`', async function () {
      const run = await runCli(['certs', '--help']);

      assert.equal(run.code, 0);
      assert.ok(run.stdout.startsWith('usage: admission-gateway certs [--config FILE] [--ca FILE]\n'), run.stdout);
    });

    for (const args of [['--version'], ['-v'], ['version'], ['review', '--version']]) {
      it(`prints the package version with \`${args.join(' ')}\``, async function () {
        const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };

        const run = await runCli(args);

        assert.deepEqual(run, { code: 0, stdout: `admission-gateway ${version}\n`, stderr: '' });
      });
    }

    const refusals: Array<[string, string[], string]> = [
      [
        'an unknown command',
        ['frobnicate'],
        'admission-gateway: unknown command "frobnicate"\nRun "admission-gateway --help" for the commands and their options.\n',
      ],
      [
        'a misspelt command, naming the closest',
        ['reveiw', 'pod.yaml'],
        'admission-gateway: unknown command "reveiw" (did you mean "review"?)\nRun "admission-gateway --help" for the commands and their options.\n',
      ],
      [
        'an unknown option',
        ['review', 'pod.yaml', '--bogus'],
        'admission-gateway review: unknown option --bogus\nRun "admission-gateway review --help" for its options.\n',
      ],
      [
        'a misspelt option, naming the closest',
        ['review', '--confg', 'gw.yaml', 'pod.yaml'],
        'admission-gateway review: unknown option --confg (did you mean --config?)\nRun "admission-gateway review --help" for its options.\n',
      ],
      [
        'a misspelt option of the default command (serve)',
        ['--prot', '8443'],
        'admission-gateway: unknown option --prot (did you mean --port?)\nRun "admission-gateway --help" for the commands and their options.\n',
      ],
      [
        'an unknown short option',
        ['certs', '-x'],
        'admission-gateway certs: unknown option -x\nRun "admission-gateway certs --help" for its options.\n',
      ],
      [
        "another command's option, naming the commands that take it",
        ['serve', '--ca', 'ca.crt'],
        'admission-gateway serve: unknown option --ca (an option of certs and manifests)\nRun "admission-gateway serve --help" for its options.\n',
      ],
      [
        'an option without its value',
        ['review', 'pod.yaml', '--config'],
        'admission-gateway review: option --config needs a value\nRun "admission-gateway review --help" for its options.\n',
      ],
      [
        'a value for a flag',
        ['review', 'pod.yaml', '--exit-code=yes'],
        'admission-gateway review: option --exit-code takes no value\nRun "admission-gateway review --help" for its options.\n',
      ],
    ];
    for (const [what, args, message] of refusals) {
      it(`refuses ${what} in one line and a pointer to --help, exit code 2`, async function () {
        const run = await runCli(args);

        assert.deepEqual(run, { code: 2, stdout: '', stderr: message });
      });
    }

    it('does the same as a process (what main.ts adds: the exit code)', async function () {
      const run = await runProcess(['review', '--confg', 'gw.yaml']);

      assert.equal(run.code, 2);
      assert.equal(
        run.stderr,
        'admission-gateway review: unknown option --confg (did you mean --config?)\nRun "admission-gateway review --help" for its options.\n',
      );
    });
  });

  describe('given an invalid gateway.yaml', function () {
    /** A config with its mistake on line 14 (chain[2]), as a user's file would have it. */
    const CHAIN_OF_THREE = (third: string) => `apiVersion: admissiongateway.io/v1alpha1
kind: GatewayConfig
server:
  port: 8443
log:
  level: info
chain:
  - plugin: default-labels
    settings:
      labels: { owner: platform }
  - plugin: image-policy
    mode: warn
${third}`;
    const cases = [
      {
        name: 'a value of the wrong type, at its line and column',
        yaml: CHAIN_OF_THREE('  - plugin: require-labels\n    timeoutSeconds: ten\n    settings: { labels: [team] }\n'),
        error: '14:5: chain[2].timeoutSeconds: expected a number from 0.001 to 30, got "ten"',
      },
      {
        name: 'a misspelt plugin, naming the closest',
        yaml: CHAIN_OF_THREE('  - plugin: requre-labels\n'),
        error: '13:5: chain[2].plugin: unknown plugin "requre-labels" (did you mean "require-labels"?)',
      },
      {
        name: 'an unknown plugin name, listing the known ones',
        yaml: 'chain:\n  - plugin: no-such-plugin\n',
        error: `2:5: chain[0].plugin: unknown plugin "no-such-plugin" ${KNOWN_PLUGINS}`,
      },
      {
        name: 'a misspelt field, naming the closest',
        yaml: 'chain:\n  - plugin: default-labels\n    failurePolicyy: Ignore\n',
        error: '3:5: chain[0].failurePolicyy: unknown field (did you mean "failurePolicy"?)',
      },
      {
        name: 'a misspelt value, naming the closest',
        yaml: 'chain:\n  - plugin: default-labels\n    failurePolicy: ignore\n',
        error: '3:5: chain[0].failurePolicy: expected one of Fail, Ignore, got "ignore" (did you mean "Ignore"?)',
      },
      {
        name: 'invalid plugin settings, with the path below settings and its line',
        yaml: CHAIN_OF_THREE('  - plugin: require-labels\n    settings:\n      labels:\n        team: yes\n'),
        error: '15:7: chain[2].settings.labels: expected a list of strings, got a map',
      },
      {
        name: 'a required field left out, at the line of the entry that lacks it',
        yaml: 'chain:\n  - plugin: default-labels\n    match:\n      rules:\n        - operations: [CREATE]\n          apiGroups: [""]\n          apiVersions: [v1]\n',
        error: '5:11: chain[0].match.rules[0].resources: expected a non-empty list of strings',
      },
    ];
    for (const c of cases) {
      it(`serve exits 2 naming the file, line, column and field for ${c.name}`, async function () {
        const file = await folder.config(c.yaml);

        const run = await runCli(['serve', '--config', file, '--port', '0', '--ops-port', '0', '--health-port', '0']);

        assert.equal(run.code, 2);
        assert.equal(run.stderr, `admission-gateway: ${file}:${c.error}\n`);
      });
    }

    it('serve exits 2 at once for a config file that is a named pipe or a device, neither waiting nor reading on', async function () {
      const pipe = join(folder.dir, 'pipe.yaml');
      makeNamedPipe(pipe);
      try {
        const serve = (file: string) => runCli(['serve', '--config', file, '--port', '0', '--ops-port', '0']);
        const refused = (file: string, kind: string) => ({
          code: 2,
          stdout: '',
          stderr: `admission-gateway: ${file}: (file): cannot read the config file: not a regular file (${kind})\n`,
        });
        assert.deepEqual(
          [await serve(pipe), await serve('/dev/zero')],
          [refused(pipe, 'a FIFO'), refused('/dev/zero', 'a character device')],
        );
      } finally {
        releaseNamedPipe(pipe);
      }
    });

    it('review exits 2 naming the provider whose client certificate and key do not belong together', async function () {
      const sans = { dnsNames: ['localhost'], ipAddresses: [] };
      const [client, other] = [generateCertificates(sans), generateCertificates(sans)];
      await writeFile(join(folder.dir, 'client.crt'), client.cert);
      await writeFile(join(folder.dir, 'client.key'), other.key);
      const file = await folder.config(
        'chain:\n  - provider: scanner\n    url: https://127.0.0.1:1/admit\n' +
          '    clientCert: { certFile: client.crt, keyFile: client.key }\n',
      );
      const review = join(folder.dir, 'pod.json');
      await writeFile(review, JSON.stringify(podCreate()));

      const run = await runCli(['review', review, '--config', file]);

      assert.deepEqual(run, {
        code: 2,
        stdout: '',
        stderr:
          `admission-gateway: ${file}:4:5: chain[0].clientCert: TLS key file "${join(folder.dir, 'client.key')}" ` +
          `does not match the certificate in "${join(folder.dir, 'client.crt')}"\n`,
      });
    });

    it('review and manifests exit 2 with the same message', async function () {
      const file = await folder.config(cases[0]!.yaml);
      const review = join(folder.dir, 'pod.json');
      await writeFile(review, JSON.stringify(podCreate()));

      const runs = [
        await runCli(['review', review, '--config', file]),
        await runCli(['manifests', '--config', file, '--no-ca-bundle']),
      ];

      for (const run of runs) {
        assert.deepEqual(run, { code: 2, stdout: '', stderr: `admission-gateway: ${file}:${cases[0]!.error}\n` });
      }
    });
  });

  describe('certs', function () {
    it('generates a CA and serving certificate, says where on stderr, and prints a caBundle that decodes to the CA PEM', async function () {
      const file = await folder.config('server:\n  tls: { certFile: certs/tls.crt, keyFile: certs/tls.key }\n');

      const first = await runCli(['certs', '--config', file]);
      const second = await runCli(['certs', '--config', file]);

      assert.equal(first.code, 0, first.stderr);
      const caPem = await readFile(join(folder.dir, 'certs', 'ca.crt'), 'utf8');
      assert.equal(first.stdout, `${caBundle(caPem)}\n`);
      assert.equal(Buffer.from(first.stdout.trim(), 'base64').toString('utf8'), caPem);
      const ca = new X509Certificate(caPem);
      const serving = new X509Certificate(await readFile(join(folder.dir, 'certs', 'tls.crt')));
      assert.equal(ca.ca, true);
      assert.ok(serving.checkIssued(ca) && serving.verify(ca.publicKey), 'the serving certificate is signed by the CA');
      assert.match(serving.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
      assert.equal((await stat(join(folder.dir, 'certs', 'tls.key'))).mode & 0o777, 0o600);
      assert.equal(second.stdout, first.stdout, 'a second run reuses the certificates');
      const certs = join(folder.dir, 'certs');
      assert.equal(
        first.stderr,
        `admission-gateway certs: generated a CA (${certs}/ca.crt, key ${certs}/ca.key) and a serving certificate ` +
          `(${certs}/tls.crt, key ${certs}/tls.key); keys are mode 0600\n` +
          `admission-gateway certs: standard output is the caBundle: ${certs}/ca.crt in base64\n`,
      );
      assert.equal(
        second.stderr,
        `admission-gateway certs: using the existing serving certificate ${certs}/tls.crt (key ${certs}/tls.key)\n` +
          `admission-gateway certs: standard output is the caBundle: ${certs}/ca.crt in base64\n`,
      );
    });
  });

  describe('serve', function () {
    it('exits 2 at start, naming record.path and why, when the recording cannot be appended to', async function () {
      const file = await folder.config('record:\n  path: missing/reviews.ndjson\n  sampleRate: 0.1\n');

      const run = await runProcess(
        ['serve', '--config', file, '--port', '0', '--ops-port', '0', '--health-port', '0'],
        {
          timeoutMs: 15000,
        },
      );

      assert.deepEqual(
        { code: run.code, stderr: run.stderr },
        {
          code: 2,
          stderr:
            `admission-gateway: ${file}:2:3: record.path: cannot append to the recording ` +
            `"${join(folder.dir, 'missing/reviews.ndjson')}": ENOENT: no such file or directory\n`,
        },
      );
    });

    it('serves reviews over HTTPS with the generated certificate, and exits 0 after draining on SIGTERM', async function () {
      const file = await folder.config(`
server:
  tls: { certFile: tls.crt, keyFile: tls.key }
kube: { enabled: false }
record: { path: reviews.ndjson, sampleRate: 0.5 }
chain:
  - plugin: default-labels
    settings: { labels: { owner: platform } }
`);
      const child = spawnCli(['serve', '--config', file, '--port', '0', '--ops-port', '0', '--health-port', '0']);
      const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
      let stdout = '';
      const lines = () =>
        stdout
          .split('\n')
          .slice(0, -1)
          .map((line) => JSON.parse(line) as Record<string, unknown>);
      const serving = new Promise<Record<string, unknown>>((resolve, reject) => {
        child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
          stdout += chunk;
          const line = lines().find((l) => l.msg === 'admission-gateway serving');
          if (line) resolve(line);
        });
        void exited.then((code) => reject(new Error(`serve exited with ${code} before serving: ${stdout}`)));
      });
      try {
        const line = await serving;
        const { webhook, ops, health } = line as { webhook: string; ops: string; health: string };
        const trusted = new Agent({ connect: { ca: await readFile(join(folder.dir, 'ca.crt')) } });
        try {
          const ready = await sendRequest(trusted, `${health}/readyz`, 'GET');
          const review = reviewOf(await sendRequest(trusted, `${webhook}/mutate`, 'POST', podCreate()));
          assert.deepEqual({ status: ready.status, text: ready.text }, { status: 200, text: 'ok' });
          assert.deepEqual(decodePatch(review.response), [
            { op: 'add', path: '/metadata/labels/owner', value: 'platform' },
          ]);
        } finally {
          await trusted.close();
        }
        // The addresses the servers are bound to (the webhook on every interface; without a cluster, the plain-HTTP
        // servers on 127.0.0.1 only), and URLs that reach them.
        const webhookPort = new URL(webhook).port;
        const opsPort = new URL(ops).port;
        const healthPort = new URL(health).port;
        assert.deepEqual(
          { listening: line.listening, webhook, ops, health },
          {
            listening: {
              webhook: `0.0.0.0:${webhookPort}`,
              ops: `127.0.0.1:${opsPort}`,
              health: `127.0.0.1:${healthPort}`,
            },
            webhook: `https://127.0.0.1:${webhookPort}`,
            ops: `http://127.0.0.1:${opsPort}`,
            health: `http://127.0.0.1:${healthPort}`,
          },
        );
        // Where the relative paths of the file went: its own folder.
        const loaded = lines().find((l) => l.msg === 'configuration loaded');
        assert.deepEqual(
          { config: loaded?.config, files: loaded?.files },
          {
            config: file,
            files: {
              'server.tls.certFile': join(folder.dir, 'tls.crt'),
              'server.tls.keyFile': join(folder.dir, 'tls.key'),
              'record.path': join(folder.dir, 'reviews.ndjson'),
            },
          },
        );

        child.kill('SIGTERM');
        assert.equal(await exited, 0);
        assert.match(stdout, /"msg":"stopped"/);
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    });
  });
});
