/**
 * What manifests/webhooks.yaml installs. That it is exactly the renderer's output for manifests/config.yaml is
 * checked through the CLI (test/integration/cli-manifests.test.ts); after a chain change, regenerate it with
 *   npx tsx server/main.ts manifests --config manifests/config.yaml --no-ca-bundle > manifests/webhooks.yaml
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT as ROOT } from '../../helpers/cli.js';

describe('manifests/webhooks.yaml', () => {
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
