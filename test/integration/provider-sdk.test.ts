/**
 * One plugin, two ways to run it: the same shipped plugin modules served as a remote provider by the SDK
 * (serveProvider, real HTTPS) and compiled into the gateway give the same answer — the same JSON patch, byte
 * for byte, and the plugin's refusal under the gateway's step name — and the provider's discovery document
 * lists one handler per phase with the plugin's own match. A provider announcing only the deprecated
 * admission.k8s.io/v1beta1 is called in it, and its patch is still the compiled-in plugin's.
 */
import { execFile } from 'node:child_process';
import https from 'node:https';
import { promisify } from 'node:util';
import assert from 'node:assert/strict';
import pino from 'pino';
import { caBundle, generateCertificates } from '../../certs/generate.js';
import defaultLabels from '../../plugins/default-labels.js';
import requireLabels from '../../plugins/require-labels.js';
import { podCreate } from '../fixtures/reviews/index.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { startHarness, type AnswerReview, type Harness } from '../helpers/gateway-harness.js';
import { eventually } from '../helpers/wait.js';
import { serveProvider, type ProviderServer } from '../../server/provider-sdk/serve-provider.js';

const LABELS = { labels: { team: 'unknown', 'cost-center': 'shared' } };
const REQUIRED = { labels: ['owner'] };

describe('the provider SDK: plugins served as a remote provider', () => {
  let provider: ProviderServer;
  let legacy: ProviderServer;
  const harnesses: Harness[] = [];
  const bundle = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });

  before(async () => {
    provider = await serveProvider({
      plugins: [
        { plugin: defaultLabels, settings: LABELS },
        { plugin: requireLabels, settings: REQUIRED },
      ],
      tls: { cert: bundle.cert, key: bundle.key },
      host: '127.0.0.1',
      port: 0,
      log: pino({ level: 'silent' }),
    });
    legacy = await serveProvider({
      plugins: [{ plugin: defaultLabels, settings: LABELS }],
      tls: { cert: bundle.cert, key: bundle.key },
      host: '127.0.0.1',
      port: 0,
      log: pino({ level: 'silent' }),
      admissionReviewVersions: ['v1beta1'],
    });
  });

  after(async () => {
    for (const h of harnesses) await h.close();
    await provider.close();
    await legacy.close();
  });

  const start = async (yaml: string) => {
    const h = await startHarness({ yaml });
    harnesses.push(h);
    return h;
  };

  /** A gateway with `server` as its provider `labels` (discovered), and one with the plugin entries compiled in. */
  const bothWays = async (server: ProviderServer, entries: string) => ({
    remote: await start(`
chain:
  - provider: labels
    url: ${server.url}
    caBundle: ${caBundle(bundle.caCert)}
    discovery: true
`),
    local: await start(`chain:\n${entries}`),
  });
  const mutate = async (h: Harness) => (await h.post('/mutate', podCreate())).body as AnswerReview;

  it('lists a handler per phase, with the plugin’s match, at GET /discovery', () => {
    assert.deepEqual(
      provider.handlers.map((h) => [h.name, h.phase, h.path]),
      [
        ['default-labels', 'mutate', '/default-labels'],
        ['require-labels', 'validate', '/require-labels'],
      ],
    );
    assert.deepEqual(provider.handlers[0]!.match, defaultLabels.match);
  });

  it('answers with the patch the compiled-in plugin gives, byte for byte, and refuses with the plugin’s message under the gateway’s step name', async () => {
    const { remote, local } = await bothWays(
      provider,
      `  - plugin: default-labels
    settings: ${JSON.stringify(LABELS)}
  - plugin: require-labels
    settings: ${JSON.stringify(REQUIRED)}
`,
    );
    const chain = (await remote.ops('/chain')).body as { order: string };
    assert.equal(chain.order, 'mutate=[default-labels.labels] validate=[require-labels.labels]');

    const [viaProvider, inProcess] = [await mutate(remote), await mutate(local)];
    assert.equal(viaProvider.response.allowed, true);
    assert.ok(inProcess.response.patch);
    assert.equal(viaProvider.response.patch, inProcess.response.patch);

    const validate = async (h: Harness) => (await h.post('/validate', podCreate())).body as AnswerReview;
    const [refusedRemotely, refusedLocally] = [await validate(remote), await validate(local)];
    assert.equal(refusedLocally.response.status?.message, 'require-labels: missing required label: owner');
    assert.equal(refusedRemotely.response.status?.message, 'require-labels.labels: missing required label: owner');
  });

  it('announces only v1beta1 when told to, is called in it, and still gives the compiled-in patch byte for byte', async () => {
    const document = await new Promise<unknown>((resolve, reject) => {
      https
        .get(`${legacy.url}/discovery`, { ca: bundle.caCert }, (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
          res.on('end', () => resolve(JSON.parse(text)));
        })
        .on('error', reject);
    });
    assert.deepEqual(document, {
      apiVersion: 'admissiongateway.io/v1alpha1',
      kind: 'DiscoveryResponse',
      handlers: [
        {
          name: 'default-labels',
          phase: 'mutate',
          apiVersion: 'admissiongateway.io/v1alpha1',
          admissionReviewVersions: ['v1beta1'],
          path: '/default-labels',
          match: JSON.parse(JSON.stringify(defaultLabels.match)) as unknown,
        },
      ],
    });

    const { remote, local } = await bothWays(
      legacy,
      `  - plugin: default-labels
    settings: ${JSON.stringify(LABELS)}
`,
    );
    await eventually('the handler is discovered', async () =>
      ((await remote.ops('/chain')).body as { order: string }).order.startsWith('mutate=[default-labels.labels]'),
    );

    const [viaProvider, inProcess] = [await mutate(remote), await mutate(local)];
    assert.ok(inProcess.response.patch);
    assert.equal(viaProvider.response.patch, inProcess.response.patch);
    const chain = (await remote.ops('/chain')).body as { mutate: Array<{ admissionReviewVersion?: string }> };
    assert.equal(chain.mutate[0]?.admissionReviewVersion, 'admission.k8s.io/v1beta1');
    assert.equal(
      await remote.metric('admission_gateway_provider_deprecated_version', {
        provider: 'labels',
        version: 'admission.k8s.io/v1beta1',
      }),
      1,
    );
  });
});

describe('the provider SDK’s own log (no `log` option)', function () {
  this.timeout(60_000);

  it('is in the gateway’s format: JSON lines with the level’s name, an ISO time and the service', async function () {
    const script = `
      import { generateCertificates } from './certs/generate.ts';
      import defaultLabels from './plugins/default-labels.ts';
      import { serveProvider } from './server/provider-sdk/index.ts';
      const { cert, key } = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
      const settings = ${JSON.stringify(LABELS)};
      const server = await serveProvider({ plugins: [{ plugin: defaultLabels, settings }], tls: { cert, key }, host: '127.0.0.1', port: 0 });
      await server.close();
    `;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '--eval', script],
      { cwd: REPO_ROOT, timeout: 50_000 },
    );

    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.equal(lines.length, 1, stdout);
    const { time, port, ...line } = lines[0]!;
    assert.match(String(time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(typeof port, 'number');
    assert.deepEqual(line, {
      level: 'info',
      service: 'admission-provider',
      handlers: ['default-labels(mutate)'],
      msg: 'provider serving',
    });
  });
});
