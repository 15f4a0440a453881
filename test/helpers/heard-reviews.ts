/**
 * Requests reviewed by a real reviewer of a chain written as gateway.yaml's `chain:`, returned as the review
 * listeners (the decision-trace buffer, the recorder) hear them.
 */
import { Registry } from 'prom-client';
import type { AdmissionRequest } from '../../server/admission/types.js';
import { createLogger } from '../../server/base/log.js';
import { buildPluginSteps, createChain } from '../../server/chain/chain.js';
import type { AnyPlugin } from '../../server/chain/plugin-registry.js';
import { createPluginRegistry } from '../../server/chain/plugin-registry.js';
import { createReviewer, standaloneNamespaceLabels, type ReviewedRequest } from '../../server/dispatch/reviewer.js';
import { parseConfigText } from '../../server/config/load.js';
import { selectionOf, type Route } from '../../server/http/routes.js';
import { createMetrics } from '../../server/metrics/metrics.js';

// One logger for every call: each logger flushes itself on the process's exit.
const silent = createLogger('silent');

export async function heardReviews(
  chainYaml: string,
  plugins: readonly AnyPlugin[],
  reviews: ReadonlyArray<readonly [AdmissionRequest, Route]>,
): Promise<ReviewedRequest[]> {
  const config = parseConfigText(`chain:\n${chainYaml}`, 'gateway.yaml', '/');
  const chain = createChain(buildPluginSteps(config.chain, createPluginRegistry(plugins), config.file));
  const heard: ReviewedRequest[] = [];
  const reviewer = createReviewer({
    chain: () => chain,
    metrics: createMetrics(new Registry(), { defaultMetrics: false }),
    log: silent,
    namespaceLabels: standaloneNamespaceLabels,
    deadlineMarginMs: 250,
    defaultTimeoutMs: 10_000,
    onReviewed: (reviewed) => heard.push(reviewed),
  });
  for (const [request, route] of reviews) await reviewer.review(request, selectionOf(route));
  return heard;
}
