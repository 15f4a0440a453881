/**
 * Starts tracing when it is configured: the OpenTelemetry SDK is imported here, on demand, so that a gateway
 * (or provider) without `tracing.otlpEndpoint` neither loads it nor pays anything per review.
 */
import type { TracingConfig } from '../config/types.js';
import type { GatewayTracing, TracingDeps } from './otel-tracing.js';

export type { GatewayTracing } from './otel-tracing.js';

/** The tracer, or undefined when tracing is off. */
export async function startTracing(
  config: TracingConfig | undefined,
  deps: TracingDeps,
): Promise<GatewayTracing | undefined> {
  if (!config) return undefined;
  const { createOtelTracing } = await import('./otel-tracing.js');
  const tracing = createOtelTracing(config, deps);
  deps.log.info(
    { endpoint: config.otlpEndpoint, serviceName: config.serviceName, sampleRatio: config.sampleRatio },
    'tracing: exporting spans over OTLP',
  );
  return tracing;
}
