/**
 * The package as another project imports it: `admission-gateway/provider` (and `admission-gateway`, the plugin
 * API) resolved by name through package.json's `exports` — Node's self-reference, as an installed dependency
 * would be — from the build (`npm run build`, made here when missing or stale). A plugin written with the
 * package's definePlugin is served by the package's serveProvider and answers over HTTPS; a consumer
 * typechecks against the emitted declarations, and a misuse is a type error (so they are not `any`).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { generateCertificates } from '../../certs/generate.js';
import { podCreate } from '../fixtures/reviews/index.js';
import { REPO_ROOT } from '../helpers/cli.js';

/** The public surfaces, by their package names (variables: the typecheck of this file must not need dist/). */
const PROVIDER = 'admission-gateway/provider';
const PLUGIN_API = 'admission-gateway';
type ProviderModule = typeof import('../../server/provider-sdk/index.js');
type PluginApiModule = typeof import('../../server/plugin-api/index.js');

function node(args: readonly string[]): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, args, { cwd: REPO_ROOT, encoding: 'utf8', timeout: 170_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe('the package by name: admission-gateway/provider and admission-gateway', function () {
  this.timeout(180_000);

  before(function () {
    const build = node(['scripts/build-if-needed.mjs']);
    assert.equal(build.status, 0, build.output);
  });

  it('resolves to the build and exports the SDK and the plugin API', async function () {
    assert.equal(
      createRequire(import.meta.url).resolve(PROVIDER),
      join(REPO_ROOT, 'dist/server/provider-sdk/index.js'),
    );
    const sdk = (await import(PROVIDER)) as ProviderModule;
    assert.deepEqual(Object.keys(sdk).sort(), [
      'DEFAULTS_FIELD_MANAGER',
      'REGISTRATION_FIELD_MANAGER',
      'RegistrationOptionsError',
      'checkRegistrationOptions',
      'definePlugin',
      'registerProvider',
      'serveProvider',
    ]);
    const api = (await import(PLUGIN_API)) as PluginApiModule;
    assert.equal(typeof api.definePlugin, 'function');
    assert.equal(typeof api.on, 'function');
  });

  it('serves a plugin written with the package’s own definePlugin', async function () {
    const { definePlugin, serveProvider } = (await import(PROVIDER)) as ProviderModule;
    const { on } = (await import(PLUGIN_API)) as PluginApiModule;
    const stamp = definePlugin({
      name: 'stamp',
      match: on('pods').create(),
      setup: () => ({
        mutate: ({ object }) => {
          object.metadata!.labels = { ...object.metadata!.labels, stamped: 'true' };
        },
      }),
    });
    const certs = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
    const server = await serveProvider({
      plugins: [{ plugin: stamp }],
      tls: { cert: certs.cert, key: certs.key },
      host: '127.0.0.1',
      port: 0,
      log: {
        debug() {},
        info() {},
        warn() {},
        error() {},
        child: function () {
          return this;
        },
      },
    });
    const agent = new Agent({ connect: { ca: certs.caCert } });
    try {
      const res = await request(`${server.url}/stamp?timeout=5s`, {
        method: 'POST',
        dispatcher: agent,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(podCreate()),
      });
      const answer = (await res.body.json()) as { response: { allowed: boolean; patch: string } };
      assert.equal(res.statusCode, 200);
      assert.deepEqual(JSON.parse(Buffer.from(answer.response.patch, 'base64').toString('utf8')), [
        { op: 'add', path: '/metadata/labels/stamped', value: 'true' },
      ]);
    } finally {
      await server.close();
      await agent.close();
    }
  });

  it('typechecks a consumer against the emitted declarations, misuses included', async function () {
    // Inside the package (dist/ has no package.json of its own), so the names resolve by self-reference.
    const dir = await mkdtemp(join(REPO_ROOT, 'dist', 'consumer-'));
    try {
      await writeFile(
        join(dir, 'consumer.ts'),
        `import { readFileSync } from 'node:fs';
import { definePlugin, on, type Plugin } from 'admission-gateway';
import { serveProvider, type ProviderServer, type RegistrationOptions } from 'admission-gateway/provider';

export const plugin: Plugin<undefined> = definePlugin({
  name: 'stamp',
  match: on('pods').create(),
  setup: () => ({ mutate: ({ object }) => void object }),
});
export const register = (kubeConfig: RegistrationOptions['kubeConfig']): RegistrationOptions => ({
  kubeConfig,
  name: 'stamp',
  service: { namespace: 'tools', name: 'stamp' },
  defaults: { failurePolicy: 'Ignore' },
});
export const served: Promise<ProviderServer> = serveProvider({
  plugins: [{ plugin }],
  tls: { cert: readFileSync('tls.crt'), key: readFileSync('tls.key') },
});
// @ts-expect-error: plugins is a list
void serveProvider({ plugins: plugin, tls: { cert: '', key: '' } });
// @ts-expect-error: a failure policy the gateway does not know
export const wrong: RegistrationOptions['defaults'] = { failurePolicy: 'Maybe' };
`,
      );
      await writeFile(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2023',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            noEmit: true,
            skipLibCheck: true,
            types: ['node'],
          },
          files: ['consumer.ts'],
        }),
      );
      const tsc = node(['node_modules/typescript/bin/tsc', '-p', dir]);
      assert.equal(tsc.status, 0, tsc.output);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
