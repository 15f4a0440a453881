/**
 * `admission-gateway provider` as a real process: it serves the config's plugin entries as a remote provider
 * with a generated certificate, a gateway that registers it with discovery gets the patch the compiled-in
 * plugin gives, and SIGTERM stops it with exit code 0. In this process: --plugin with --settings and the
 * certificate files, registering against a stand-in apiserver what the flags say, and every mistake in the
 * flags refused in one line with exit code 2.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { caBundle, generateCertificates } from '../../certs/generate.js';
import { runCli } from '../../server/cli.js';
import { portInUse } from '../../server/commands/provider.js';
import { parseConfigText } from '../../server/config/load.js';
import { podCreate } from '../fixtures/reviews/index.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { startHarness, type AnswerReview, type Harness } from '../helpers/gateway-harness.js';
import { startStandInApiserver, status, type StandInApiserver } from '../helpers/stand-in-apiserver.js';
import { KNOWN_PLUGINS } from '../helpers/shipped-plugins.js';

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

describe('admission-gateway provider --plugin … --register (in this process)', function () {
  this.timeout(30_000);
  let dir: string;
  let api: StandInApiserver;
  let kubeconfig: string;
  const certs = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  const files = (name: string) => join(dir, name);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'provider-register-'));
    await Promise.all([
      writeFile(files('tls.crt'), certs.cert),
      writeFile(files('tls.key'), certs.key),
      writeFile(files('ca.crt'), certs.caCert),
    ]);
    api = await startStandInApiserver();
    kubeconfig = files('kubeconfig');
    await writeFile(kubeconfig, api.kubeConfig().exportConfig());
  });
  after(async () => {
    await api.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** The CLI as main.ts runs it, in `dir`, with `env`, until `stop` resolves. */
  const run = (args: readonly string[], env: NodeJS.ProcessEnv = {}, stop = Promise.resolve('SIGTERM')) => {
    let stderr = '';
    const code = runCli(['provider', ...args], {
      stdout: () => undefined,
      stderr: (text) => (stderr += text),
      stdin: () => Promise.resolve(''),
      env: { HOME: dir, ...env },
      cwd: dir,
      stopSignal: () => stop,
    });
    return code.then((exit) => ({ code: exit, stderr }));
  };
  const TLS = ['--tls-cert', 'tls.crt', '--tls-key', 'tls.key'];

  it('registers the Service it runs behind, in POD_NAMESPACE, with the CA of --ca-file and the defaults, then exits 0 on the stop signal', async function () {
    api.answerWith((req) => {
      if (req.method === 'GET')
        return status(404, 'NotFound', 'admissionproviders.admissiongateway.io "labels" not found');
      return {
        status: 201,
        body: { ...(req.body as object), metadata: { name: 'labels', uid: 'u', resourceVersion: '1' } },
      };
    });
    let stop!: (signal: string) => void;
    const stopped = new Promise<string>((resolve) => (stop = resolve));
    const exited = run(
      [
        '--plugin',
        'default-labels',
        '--settings',
        `default-labels=${JSON.stringify(LABELS)}`,
        ...TLS,
        '--ca-file',
        'ca.crt',
        '--port',
        '0',
        '--log-level',
        'silent',
        '--register',
        '--service',
        'labels:8443',
        '--kubeconfig',
        'kubeconfig',
        '--order',
        '50',
        '--failure-policy',
        'Ignore',
      ],
      { POD_NAMESPACE: 'tools' },
      stopped,
    );
    await api.until('the registration is applied', () => api.requests.filter((r) => r.method === 'PATCH').length === 2);
    stop('SIGTERM');
    assert.deepEqual(await exited, { code: 0, stderr: '' });
    const spec = {
      service: { namespace: 'tools', name: 'labels', port: 8443 },
      caBundle: caBundle(certs.caCert),
      discovery: true,
      phases: ['mutate'],
    };
    assert.deepEqual(
      api.requests.map((r) => [r.method, r.query.fieldManager, (r.body as { spec?: unknown } | undefined)?.spec]),
      [
        ['GET', undefined, undefined],
        ['PATCH', 'admission-gateway-provider', { ...spec, order: 50, failurePolicy: 'Ignore' }],
        ['PATCH', 'admission-gateway-provider', spec],
      ],
      'the create answered without managedFields: no defaults to hand over',
    );
  });

  describe('a port another process holds (a running gateway holds the config’s)', function () {
    let holder: Server;
    let port: number;
    before(async function () {
      holder = createServer();
      await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
      port = (holder.address() as AddressInfo).port;
    });
    after(async function () {
      await new Promise((resolve) => holder.close(resolve));
    });
    afterEach(async function () {
      await rm(files('gateway.yaml'), { force: true });
    });
    const plugin = ['--plugin', 'default-labels', '--settings', `default-labels=${JSON.stringify(LABELS)}`, ...TLS];

    it('says which port, that gateway.yaml’s server.port chose it, and that --port chooses another', async function () {
      await writeFile(files('gateway.yaml'), `server:\n  host: 127.0.0.1\n  port: ${port}\n`);

      const result = await run([...plugin, '--log-level', 'silent']);

      assert.deepEqual(result, {
        code: 1,
        stderr:
          `admission-gateway: provider: port ${port} on 127.0.0.1 is in use by another process (a running gateway?): ` +
          `it is server.port at gateway.yaml:3:3; --port N serves the provider on another\n`,
      });
    });

    it('says when the port is server.port’s default, which gateway.yaml does not set', function () {
      const config = parseConfigText('server:\n  host: 127.0.0.1\n', 'gateway.yaml', dir);

      assert.equal(
        portInUse(config, {}).message,
        'provider: port 8443 on 127.0.0.1 is in use by another process (a running gateway?): ' +
          'it is the default server.port (gateway.yaml sets none); --port N serves the provider on another',
      );
    });

    it('names --port when the flag chose it', async function () {
      await writeFile(files('gateway.yaml'), `server:\n  host: 127.0.0.1\n`);

      const result = await run([...plugin, '--port', String(port), '--log-level', 'silent']);

      assert.deepEqual(result, {
        code: 1,
        stderr: `admission-gateway: provider: port ${port} on 127.0.0.1 is in use by another process: --port ${port} chose it; choose another\n`,
      });
    });
  });

  const refusals: [string, string[], NodeJS.ProcessEnv, string | RegExp][] = [
    [
      '--settings without --plugin',
      ['--settings', 'default-labels={}'],
      {},
      '--settings goes with --plugin (a config’s plugin entries carry their own settings)',
    ],
    ['an unknown plugin', ['--plugin', 'nope'], {}, `provider: unknown plugin "nope" ${KNOWN_PLUGINS}`],
    [
      'settings that are not JSON',
      ['--plugin', 'default-labels', '--settings', 'default-labels={labels'],
      {},
      /^--settings default-labels: expected JSON: Expected property name or '}' in JSON at position 1/,
    ],
    [
      'settings the plugin refuses',
      ['--plugin', 'default-labels', '--settings', 'default-labels={"labels":{}}', ...TLS],
      {},
      '--settings default-labels: expected labels or annotations (or both) with at least one entry',
    ],
    [
      'a registration flag without --register',
      ['--plugin', 'default-labels', '--order', '5'],
      {},
      '--order goes with --register',
    ],
    [
      '--register without a location',
      ['--plugin', 'default-labels', ...TLS, '--register'],
      {},
      '--register needs where the gateway reaches the provider: --service or --url (one of them)',
    ],
    [
      'a Service without a namespace',
      ['--plugin', 'default-labels', ...TLS, '--register', '--service', 'labels'],
      {},
      '--service labels: no namespace (write NAMESPACE/NAME or set POD_NAMESPACE)',
    ],
    [
      'a timeout out of range',
      [
        '--plugin',
        'default-labels',
        '--settings',
        `default-labels=${JSON.stringify(LABELS)}`,
        ...TLS,
        '--register',
        '--url',
        'https://127.0.0.1:9443',
        '--provider-name',
        'labels',
        '--kubeconfig',
        'kubeconfig',
        '--timeout-seconds',
        '31',
      ],
      {},
      'provider: register: spec.timeoutSeconds: expected an integer from 1 to 30, got 31 (--timeout-seconds)',
    ],
    [
      '--tls-cert alone',
      ['--plugin', 'default-labels', '--tls-cert', 'tls.crt'],
      {},
      '--tls-cert and --tls-key go together',
    ],
  ];
  for (const [what, args, env, message] of refusals) {
    it(`refuses ${what} with exit code 2, naming the flag`, async function () {
      const result = await run(args, env, new Promise(() => undefined));
      assert.equal(result.code, 2, result.stderr);
      if (typeof message === 'string') assert.equal(result.stderr, `admission-gateway: ${message}\n`);
      else assert.match(result.stderr.replace(/^admission-gateway: /, ''), message);
      assert.deepEqual(await readdir(dir), ['ca.crt', 'kubeconfig', 'tls.crt', 'tls.key'], 'nothing generated');
    });
  }
});
