/**
 * The reviewer the offline commands (`review`, `replay`) run a config's chain with: no cluster (namespace
 * selectors see only the name label, as without one), the config's deadline settings; a decision trace for
 * `onReviewed` when given (`review --explain`).
 */
import type { BindableLogger } from '../base/log.js';
import type { Chain } from '../chain/chain.js';
import { createReviewer, standaloneNamespaceLabels, type ReviewedRequest, type Reviewer } from '../chain/reviewer.js';
import type { GatewayConfig } from '../config/types.js';
import type { Metrics } from '../metrics/metrics.js';

export function offlineReviewer(
  chain: Chain,
  deps: {
    readonly log: BindableLogger;
    readonly metrics: Metrics;
    readonly config: GatewayConfig;
    readonly onReviewed?: ((reviewed: ReviewedRequest) => void) | undefined;
  },
): Reviewer {
  return createReviewer({
    chain: () => chain,
    metrics: deps.metrics,
    log: deps.log,
    namespaceLabels: standaloneNamespaceLabels,
    deadlineMarginMs: deps.config.server.deadlineMarginMs,
    defaultTimeoutMs: deps.config.server.defaultTimeoutSeconds * 1000,
    ...(deps.onReviewed ? { onReviewed: deps.onReviewed } : {}),
  });
}
