/**
 * The answer a real reviewer gives to one request with a chain written as gateway.yaml's `chain:` (plugin-free
 * entries: policies, native policies), on a route, with the namespace source a test gives (standalone by default).
 */
import { Registry } from 'prom-client';
import type { AdmissionRequest, AdmissionResponse } from '../../server/admission/types.js';
import { createLogger } from '../../server/base/log.js';
import { buildPluginSteps, createChain } from '../../server/chain/chain.js';
import { createPluginRegistry } from '../../server/chain/plugin-registry.js';
import {
  createReviewer,
  standaloneNamespaceLabels,
  type NamespaceLabelSource,
} from '../../server/dispatch/reviewer.js';
import { selectionOf, type Route } from '../../server/http/routes.js';
import { createMetrics } from '../../server/metrics/metrics.js';
import { parseConfig } from './config.js';

const metrics = createMetrics(new Registry(), { defaultMetrics: false });
const log = createLogger('silent');

export async function chainAnswer(
  chain: string,
  request: AdmissionRequest,
  route: Route,
  namespaceLabels: NamespaceLabelSource = standaloneNamespaceLabels,
): Promise<AdmissionResponse> {
  const config = parseConfig(`chain:\n${chain}`);
  const steps = createChain(buildPluginSteps(config.chain, createPluginRegistry([]), config.file));
  const reviewer = createReviewer({
    chain: () => steps,
    metrics,
    log,
    namespaceLabels,
    deadlineMarginMs: 250,
    defaultTimeoutMs: 10_000,
  });
  return (await reviewer.review(request, selectionOf(route))).response;
}
