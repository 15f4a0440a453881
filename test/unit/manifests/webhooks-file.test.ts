/**
 * manifests/webhooks.yaml is the renderer's output for manifests/config.yaml's chain (Service mode, empty
 * caBundle): this test keeps the two from drifting. After a chain change, regenerate it with
 *   npx tsx server/main.ts manifests --config manifests/config.yaml --no-ca-bundle > manifests/webhooks.yaml
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { availablePlugins } from '../../../plugins/index.js';
import { runManifests } from '../../../server/manifests/command.js';
import { loadManifestsConfig } from '../../../server/manifests/config-source.js';
import { parseManifestsOptions } from '../../../server/manifests/options.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const ARGS = ['--config', 'manifests/config.yaml', '--no-ca-bundle'];

async function render(): Promise<{ stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const config = await loadManifestsConfig('manifests/config.yaml', { isDefaultLocation: false, cwd: ROOT });
  await runManifests(parseManifestsOptions({ 'no-ca-bundle': true }), {
    config,
    plugins: availablePlugins,
    cwd: ROOT,
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    args: ARGS,
  });
  return { stdout, stderr };
}

describe('manifests/webhooks.yaml', () => {
  it('is exactly what `admission-gateway manifests --config manifests/config.yaml --no-ca-bundle` renders', async () => {
    const [file, { stdout }] = await Promise.all([readFile(`${ROOT}manifests/webhooks.yaml`, 'utf8'), render()]);
    assert.equal(file, stdout);
  });

  it('routes the installed chain so an unreachable gateway blocks nothing: /mutate Ignore (its steps are), /validate/ignore (warn-mode steps never block), no /validate/fail', async () => {
    const docs = parseAllDocuments(await readFile(`${ROOT}manifests/webhooks.yaml`, 'utf8')).map(
      (d) => d.toJS() as { kind: string; webhooks: { name: string; failurePolicy: string; clientConfig: unknown }[] },
    );
    assert.deepEqual(
      docs.flatMap((d) => d.webhooks.map((w) => [d.kind, w.name, w.failurePolicy, w.clientConfig])),
      [
        [
          'MutatingWebhookConfiguration',
          'mutate.admissiongateway.io',
          'Ignore',
          {
            service: { name: 'admission-gateway', namespace: 'admission-gateway', path: '/mutate', port: 443 },
          },
        ],
        [
          'ValidatingWebhookConfiguration',
          'validate-ignore.admissiongateway.io',
          'Ignore',
          {
            service: { name: 'admission-gateway', namespace: 'admission-gateway', path: '/validate/ignore', port: 443 },
          },
        ],
      ],
    );
  });
});
