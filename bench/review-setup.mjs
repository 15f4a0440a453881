// The review path as the gateway builds it, from a checkout's dist/: config, metrics, a logger writing batched
// lines to /dev/null, the chain and the reviewer. Shared by the benchmarks that drive reviews in process.

import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** Loads `file` (relative to `root`) from that checkout, whatever checkout this script is in. */
export const loaderFor = (root) => (file) => import(pathToFileURL(path.join(root, file)).href);

/** The review `body` with the `n`th of a series of uids, as the apiserver gives each review one of its own. */
export const withUid = (body, n) =>
  body.replace(/"uid": "[^"]*"/, `"uid": "0df28fbd-5f5f-4c1c-9f5d-${String(n).padStart(12, '0')}"`);

/**
 * `options.keepTrace`, when given, takes the place of the trace buffer's `add` as the reviewer's listener (the
 * buffer is not made): `bench/trace-cost.mjs --parts` uses it to record a trace's input and keep nothing.
 */
export async function reviewSetup(root, yaml, options = {}) {
  const load = loaderFor(root);
  const { Registry } = await load('node_modules/prom-client/index.js');
  const pino = (await load('node_modules/pino/pino.js')).default;
  const { createReviewer, standaloneNamespaceLabels } = await load('dist/server/dispatch/reviewer.js');
  // Checkouts from before the chain of a config left the composition root keep it in gateway.js.
  const { createChainForConfig } = await load('dist/server/providers/configured-chain.js').catch(() =>
    load('dist/server/gateway.js'),
  );
  const { parseConfigText } = await load('dist/server/config/load.js');
  const { createMetrics } = await load('dist/server/metrics/metrics.js');
  const { availablePlugins } = await load('dist/plugins/index.js');
  const { LineBatch, createLogger } = await load('dist/server/base/log.js');

  const config = parseConfigText(yaml, 'gateway.yaml', root);
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
  const log = createLogger('info', new LineBatch(pino.destination({ dest: '/dev/null', sync: false })));
  const chains = await createChainForConfig(config, availablePlugins, { metrics, log, onChain: () => {} });
  // Only a config with `tracing` loads it: checkouts from before tracing have no such module.
  const tracer = config.tracing
    ? await (await load('dist/server/tracing/start-tracing.js')).startTracing(config.tracing, { log, metrics })
    : undefined;
  // Decision traces as serve keeps them (explain.bufferSize; checkouts from before them have none).
  const explain = config.explain;
  const traces = explain && explain.bufferSize > 0 && !options.keepTrace ? await traceBuffer(load, config) : undefined;
  const keepTrace = options.keepTrace ?? (traces ? (reviewed) => traces.add(reviewed) : undefined);
  const reviewer = createReviewer({
    ...(keepTrace
      ? {
          onReviewed: keepTrace,
          annotateTrace: explain.auditAnnotation ? explain.keep : undefined,
        }
      : {}),
    tracing: tracer,
    chain: () => chains.current(),
    metrics,
    log,
    namespaceLabels: standaloneNamespaceLabels,
    deadlineMarginMs: config.server.deadlineMarginMs,
    defaultTimeoutMs: config.server.defaultTimeoutSeconds * 1000,
  });
  return { config, metrics, log, chains, reviewer, tracer };
}

/** The trace buffer as serve makes it: of options since explain.maxBytes, of three arguments before. */
async function traceBuffer(load, config) {
  const { TraceBuffer } = await load('dist/server/explain/trace-buffer.js');
  const { bufferSize, maxBytes, includeObjects, keep } = config.explain;
  if (maxBytes === undefined) return new TraceBuffer(bufferSize, includeObjects, keep);
  const { compileRedaction } = await load('dist/server/recording/redact.js');
  const redaction = compileRedaction(config.record.redact);
  return new TraceBuffer({ size: bufferSize, maxBytes, includeObjects, redaction, keep });
}
