/**
 * A remote provider built with the SDK (serveProvider) with tracing on: it serves require-labels (requiring
 * `team`) over real HTTPS on 127.0.0.1 and exports its spans to `otlpEndpoint`, so a test sees them below the
 * gateway's step span. `caBundle` is what a chain entry trusts it with.
 */
import pino from 'pino';
import { caBundle, generateCertificates } from '../../certs/generate.js';
import requireLabels from '../../plugins/require-labels.js';
import { serveProvider, type ProviderServer } from '../../server/provider-sdk/serve-provider.js';

export interface TracedProvider {
  readonly server: ProviderServer;
  readonly caBundle: string;
}

export async function startTracedProvider(otlpEndpoint: string): Promise<TracedProvider> {
  const bundle = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  const server = await serveProvider({
    plugins: [{ plugin: requireLabels, settings: { labels: ['team'] } }],
    tls: { cert: bundle.cert, key: bundle.key },
    host: '127.0.0.1',
    port: 0,
    log: pino({ level: 'silent' }),
    tracing: { otlpEndpoint, exportDelaySeconds: 0.05 },
  });
  return { server, caBundle: caBundle(bundle.caCert) };
}
