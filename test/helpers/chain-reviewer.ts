/**
 * A real reviewer of one chain, as serve makes it without a cluster: fresh metrics, a silent log, standalone
 * namespaces, the shipped deadline margin and default timeout.
 */
import { Registry } from 'prom-client';
import { createLogger } from '../../server/base/log.js';
import type { Chain } from '../../server/chain/chain.js';
import { createReviewer, standaloneNamespaceLabels, type Reviewer } from '../../server/dispatch/reviewer.js';
import { createMetrics } from '../../server/metrics/metrics.js';

export function chainReviewer(chain: Chain): Reviewer {
  return createReviewer({
    chain: () => chain,
    metrics: createMetrics(new Registry(), { defaultMetrics: false }),
    log: createLogger('silent'),
    namespaceLabels: standaloneNamespaceLabels,
    deadlineMarginMs: 250,
    defaultTimeoutMs: 10_000,
  });
}
