/**
 * The provider SDK speaking only the deprecated admission.k8s.io/v1beta1: the gateway calls its handler in
 * v1beta1 (down-converted), reads the v1beta1 answer (up-converted), and the patch the user gets is still the
 * compiled-in plugin's, byte for byte; the provider is reported as called in a deprecated version.
 */
import assert from 'node:assert/strict';
import https from 'node:https';
import pino from 'pino';
import { caBundle, generateCertificates } from '../../certs/generate.js';
import defaultLabels from '../../plugins/default-labels.js';
import { serveProvider, type ProviderServer } from '../../server/provider-sdk/serve-provider.js';
import { podCreate } from '../fixtures/reviews/index.js';
import { startHarness, type AnswerReview, type Harness } from '../helpers/gateway-harness.js';
import { eventually } from '../helpers/wait.js';

const LABELS = { labels: { 'cost-center': 'shared' } };

describe('the provider SDK announcing only admission.k8s.io/v1beta1', () => {
  let provider: ProviderServer;
  const harnesses: Harness[] = [];
  const bundle = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });

  before(async () => {
    provider = await serveProvider({
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
  });

  const start = async (yaml: string) => {
    const h = await startHarness({ yaml });
    harnesses.push(h);
    return h;
  };

  it('announces the version in discovery, is called in it, and gives the compiled-in patch byte for byte', async () => {
    const document = await new Promise<unknown>((resolve, reject) => {
      https
        .get(`${provider.url}/discovery`, { ca: bundle.caCert }, (res) => {
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

    const remote = await start(`
chain:
  - provider: labels
    url: ${provider.url}
    caBundle: ${caBundle(bundle.caCert)}
    discovery: true
`);
    const local = await start(`
chain:
  - plugin: default-labels
    settings: ${JSON.stringify(LABELS)}
`);
    await eventually('the handler is discovered', async () =>
      ((await remote.ops('/chain')).body as { order: string }).order.startsWith('mutate=[default-labels.labels]'),
    );

    const mutate = async (h: Harness) => (await h.post('/mutate', podCreate())).body as AnswerReview;
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
