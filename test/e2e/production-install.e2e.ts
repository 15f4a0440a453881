/**
 * The production install, without a Docker engine: the Dockerfile is carried out stage by stage in a
 * temporary directory (test/helpers/dockerfile.ts) — the build stage compiles the sources of a clean
 * checkout, the production-deps stage runs its real `npm ci --omit=dev`, the runtime stage copies
 * node_modules, dist/ and what else it names — and the gateway is started the way the image starts it.
 * It catches what only the image would show: a runtime import of a devDependency, a file missing from
 * dist/ or from the COPY lines, a path that only resolves in the checkout, a write into the image. The
 * example provider Deployment's command line runs from it too (`provider`, registering with a stand-in
 * apiserver).
 *
 * In the e2e suite because it is slow (a real `npm ci` and a full `tsc` build), not because it needs the
 * cluster: the gateway answers reviews posted straight to it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Agent } from 'undici';
import { parse, stringify } from 'yaml';
import { generateCertificates } from '../../certs/generate.js';
import { deploymentCreate, podCreate } from '../fixtures/reviews/index.js';
import { carryOutDockerfile, linkNodeModules, type Image } from '../helpers/dockerfile.js';
import { startHarness, reviewOf, sendRequest, type Harness } from '../helpers/gateway-harness.js';
import { spawnGateway, spawnLogged } from '../helpers/gateway-process.js';
import { kustomizationDocuments } from '../helpers/manifest-files.js';
import { startStandInApiserver, status } from '../helpers/stand-in-apiserver.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const keep = process.env.E2E_KEEP === '1';

/** The files of a clean checkout once the working tree is committed: tracked plus untracked-not-ignored. */
async function checkoutFiles(): Promise<string[]> {
  const { stdout } = await promisify(execFile)(
    'git',
    ['ls-files', '--cached', '--others', '--exclude-standard', '-z'],
    {
      cwd: ROOT,
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  const files = stdout.split('\0').filter(Boolean);
  // A deleted but still tracked file is not in the checkout.
  const present = await Promise.all(
    files.map((f) =>
      stat(join(ROOT, f)).then(
        () => f,
        () => undefined,
      ),
    ),
  );
  return present.filter((f): f is string => f !== undefined);
}

/** Every path under `dir` (directories end with `/`), sorted: a snapshot to tell whether anything was written. */
async function tree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.map((e) => `${join(e.parentPath, e.name).slice(dir.length)}${e.isDirectory() ? '/' : ''}`).sort();
}

describe('production install from the Dockerfile (no Docker engine)', function () {
  this.timeout(15 * 60_000);
  let work: string;
  let image: Image;
  let output = '';

  before(async function () {
    work = await mkdtemp(join(tmpdir(), 'gateway-image-'));
    image = await carryOutDockerfile({
      dockerfile: await readFile(join(ROOT, 'Dockerfile'), 'utf8'),
      context: { dir: ROOT, files: await checkoutFiles() },
      workDir: work,
      // The build stage's `npm ci` (dev dependencies included) installs the same lockfile the checkout's
      // node_modules came from: link it rather than install it again. The production-deps stage's
      // `npm ci --omit=dev` — the one that decides what the image runs with — runs for real.
      substitute: async (stage, command, cwd) => {
        if (!/^npm ci\b/.test(command) || command.includes('--omit=dev')) return false;
        await linkNodeModules(ROOT, cwd);
        return true;
      },
      log: (text) => (output += text),
    });
  });

  after(async function () {
    if (keep || this.currentTest?.state === 'failed') console.log(`  image directory kept: ${work}`);
    else await rm(work, { recursive: true, force: true });
  });

  it('builds a runtime stage of production dependencies and dist/ only, as a non-root user, started by node without a shell', async function () {
    const app = image.workdir;
    const topLevel = (await readdir(app)).sort();
    // Dev-only packages as the lockfile marks them (a devDependency a production dependency also needs,
    // like @types/node under @kubernetes/client-node, is not dev-only and rightly installed).
    const lock = JSON.parse(await readFile(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const devOnly = Object.entries(lock.packages)
      .filter(([key, entry]) => key.startsWith('node_modules/') && entry.dev)
      .map(([key]) => key);
    const installedDev: string[] = [];
    for (const key of devOnly) {
      if (
        await stat(join(app, key)).then(
          () => true,
          () => false,
        )
      )
        installedDev.push(key);
    }
    const sources = (await tree(join(app, 'dist'))).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));

    assert.deepEqual(topLevel, ['dist', 'gateway.yaml', 'node_modules', 'package.json']);
    assert.ok(devOnly.includes('node_modules/typescript'), 'the lockfile marks dev-only packages');
    assert.deepEqual(installedDev, [], 'no dev-only package in the runtime node_modules');
    assert.deepEqual(sources, [], 'no TypeScript source in dist/');
    assert.deepEqual(image.command.slice(1), ['dist/server/main.js', 'serve']);
    assert.equal(image.command[0], process.execPath, 'the base image starts node itself (distroless: no shell)');
    assert.match(image.baseImage, /^gcr\.io\/distroless\/nodejs\d+-debian\d+:nonroot$/);
    assert.equal(
      image.baseImage.match(/nodejs(\d+)/)?.[1],
      process.versions.node.split('.')[0],
      'the image runs the Node major this test runs on',
    );
    assert.ok(!image.keywords.includes('RUN'), 'the runtime stage runs nothing at build time (it has no shell)');
    assert.match(image.user, /^[1-9]\d*(:[1-9]\d*)?$/, 'a numeric non-root USER (runAsNonRoot can verify it)');
    assert.deepEqual(image.env, { NODE_ENV: 'production' });
  });

  describe('the installed gateway', function () {
    let dir: string;
    let reference: Harness | undefined;

    beforeEach(async function () {
      dir = await mkdtemp(join(tmpdir(), 'gateway-prod-run-'));
    });

    afterEach(async function () {
      await reference?.close();
      reference = undefined;
      await rm(dir, { recursive: true, force: true });
    });

    it('starts from the install directory with the shipped chain, answers reviews exactly as the source tree does, writes nothing into the image and exits 0 on SIGTERM', async function () {
      // The shipped gateway.yaml's chain (every shipped plugin), served on loopback with a certificate the
      // gateway generates outside the image, as a mounted config and Secret would be in the cluster.
      const shipped = parse(await readFile(join(image.workdir, 'gateway.yaml'), 'utf8')) as { chain: unknown };
      // The decision-trace annotation said explicitly: the reference harness turns it off unless told.
      const chainYaml = stringify({
        kube: { enabled: false },
        explain: { auditAnnotation: true },
        chain: shipped.chain,
      });
      const config = join(dir, 'config', 'gateway.yaml');
      await mkdir(join(dir, 'config'));
      await writeFile(
        config,
        stringify({
          server: {
            host: '127.0.0.1',
            opsHost: '127.0.0.1',
            tls: { certFile: join(dir, 'certs', 'tls.crt'), keyFile: join(dir, 'certs', 'tls.key') },
          },
          ...(parse(chainYaml) as object),
        }),
      );
      const before = await tree(image.workdir);
      const env: NodeJS.ProcessEnv = { ...image.env, PATH: process.env.PATH, HOME: dir };
      const gw = await spawnGateway({
        command: image.command[0]!,
        args: [...image.command.slice(1), '--config', config, '--port', '0', '--ops-port', '0', '--health-port', '0'],
        cwd: image.workdir,
        env,
      });
      reference = await startHarness({ yaml: chainYaml });
      const client = new Agent({ connect: { ca: await readFile(join(dir, 'certs', 'ca.crt')) } });
      try {
        const ready = await sendRequest(client, `${gw.health}/readyz`, 'GET');
        const answers = [];
        const expected = [];
        for (const [path, review] of [
          ['/mutate', podCreate()],
          ['/validate', podCreate()],
          ['/mutate', deploymentCreate()],
        ] as const) {
          answers.push(reviewOf(await sendRequest(client, `${gw.webhook}${path}`, 'POST', review)));
          expected.push(await reference.review(path, review));
        }

        gw.child.kill('SIGTERM');
        const exit = await gw.exited;

        assert.deepEqual({ status: ready.status, text: ready.text }, { status: 200, text: 'ok' });
        assert.deepEqual(answers, expected);
        assert.ok(answers[0]!.response.patch, 'the shipped chain patches a Pod');
        assert.deepEqual(exit, { code: 0, signal: null }, gw.stderr());
        assert.equal(gw.stderr(), '');
        assert.ok(
          gw.logs().some((l) => l.msg === 'stopped'),
          'the drain completed',
        );
        assert.deepEqual(await tree(image.workdir), before, 'nothing written into the image (readOnlyRootFilesystem)');
      } finally {
        gw.kill();
        await client.close();
      }
    });

    it('runs the example provider Deployment’s command line: serves the plugin as compiled in, registers itself, exits 0 on SIGTERM', async function () {
      // manifests/examples/provider/deployment.yaml's arguments, with the mounted Secret's files here, any
      // free port, POD_NAMESPACE as the downward API sets it, and a stand-in apiserver to register with.
      const [deployment] = (await kustomizationDocuments('examples/provider')).filter(
        (d) => d.object.kind === 'Deployment',
      );
      const container = (deployment!.object as { spec: { template: { spec: { containers: { args: string[] }[] } } } })
        .spec.template.spec.containers[0]!;
      const certs = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
      await mkdir(join(dir, 'tls'));
      await writeFile(join(dir, 'tls', 'tls.crt'), certs.cert);
      await writeFile(join(dir, 'tls', 'tls.key'), certs.key);
      await writeFile(join(dir, 'tls', 'ca.crt'), certs.caCert);
      const api = await startStandInApiserver();
      api.answerWith((req) =>
        req.method === 'GET' && req.path.includes('/clusterrolebindings/')
          ? { status: 200, body: { metadata: { uid: 'binding-uid' } } }
          : req.method === 'GET'
            ? status(404, 'NotFound', 'not found')
            : {
                status: 201,
                body: { ...(req.body as object), metadata: { name: 'x', uid: 'u', resourceVersion: '1' } },
              },
      );
      await writeFile(join(dir, 'kubeconfig'), api.kubeConfig().exportConfig());
      const args = container.args.map((arg) =>
        arg.replace('/etc/admission-gateway/tls/', `${join(dir, 'tls')}/`).replace(/^--port=\d+$/, '--port=0'),
      );
      const before = await tree(image.workdir);
      const provider = await spawnLogged(
        {
          command: image.command[0]!,
          args: [...args, `--kubeconfig=${join(dir, 'kubeconfig')}`],
          cwd: image.workdir,
          env: { ...image.env, PATH: process.env.PATH, HOME: dir, POD_NAMESPACE: 'admission-gateway' },
        },
        'provider serving',
      );
      const settings = args.find((a) => a.startsWith('--settings='))!.slice('--settings=default-labels='.length);
      try {
        await api.until(
          'the registration is applied',
          () => api.requests.filter((r) => r.method === 'PATCH').length === 2,
        );
        const remote = await startHarness({
          yaml: stringify({
            chain: [
              {
                provider: 'labels',
                url: `https://127.0.0.1:${String(provider.serving.port)}`,
                caBundle: Buffer.from(certs.caCert).toString('base64'),
                discovery: true,
              },
            ],
          }),
        });
        reference = await startHarness({
          yaml: stringify({ chain: [{ plugin: 'default-labels', settings: JSON.parse(settings) as unknown }] }),
        });
        try {
          const [viaImage, inProcess] = [
            await remote.review('/mutate', podCreate()),
            await reference.review('/mutate', podCreate()),
          ];
          assert.ok(inProcess.response.patch);
          assert.equal(viaImage.response.patch, inProcess.response.patch);
        } finally {
          await remote.close();
        }
        provider.child.kill('SIGTERM');
        assert.deepEqual(await provider.exited, { code: 0, signal: null }, provider.stderr());
        assert.equal(provider.stderr(), '');
        assert.deepEqual((api.requests.at(-1)!.body as { spec: unknown }).spec, {
          service: { namespace: 'admission-gateway', name: 'default-labels-provider', port: 443 },
          caBundle: Buffer.from(certs.caCert).toString('base64'),
          discovery: true,
          phases: ['mutate'],
        });
        assert.deepEqual(await tree(image.workdir), before, 'nothing written into the image (readOnlyRootFilesystem)');
      } finally {
        provider.kill();
        await api.close();
      }
    });
  });
});
