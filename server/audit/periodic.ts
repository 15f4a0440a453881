/**
 * The periodic audit of cluster mode (audit.intervalSeconds > 0): an audit every interval, the first one
 * interval after start, the next one interval after the previous one ended, so runs never overlap. It reviews
 * with the live chain (AdmissionProviders included) and the namespace label cache, off the request path: its
 * reviews run a few at a time (audit.concurrency) and yield between objects, and are counted in a metrics
 * registry of their own, not in the gateway's review metrics. Its own metrics: audit_results,
 * audit_last_run_timestamp_seconds, audit_duration_seconds.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import type { Logger } from '../base/log.js';
import type { Chain } from '../chain/chain.js';
import type { NamespaceLabelSource } from '../dispatch/reviewer.js';
import type { GatewayConfig } from '../config/types.js';
import type { ExceptionSource } from '../exceptions/exception-source.js';
import { createMetrics, type Metrics } from '../metrics/metrics.js';
import { audit, auditReviewLog } from './audit.js';
import { apiErrorMessage, createAuditCluster } from './cluster.js';

export interface PeriodicAuditOptions {
  readonly kc: KubeConfig;
  readonly config: GatewayConfig;
  /** The live chain, read at the start of each run. */
  readonly chain: () => Chain;
  readonly namespaceLabels: NamespaceLabelSource;
  /** The gateway's metrics, for the audit's own. */
  readonly metrics: Metrics;
  readonly log: Logger;
  /** The exceptions in force, the cluster's included, as admission applies them. */
  readonly exceptions?: ExceptionSource | undefined;
}

export interface PeriodicAudit {
  /** Stops the timer, and a run under way at its next step; resolves when it has. */
  stop(): Promise<void>;
}

const RESULTS = ['pass', 'fail', 'error', 'skip'] as const;

export function startPeriodicAudit(options: PeriodicAuditOptions): PeriodicAudit {
  const { config, metrics, log } = options;
  const intervalMs = config.audit.intervalSeconds * 1000;
  const cluster = createAuditCluster(options.kc);
  const reviewMetrics = createMetrics(new Registry(), { defaultMetrics: false });
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  const once = async () => {
    const started = performance.now();
    let outcome: 'complete' | 'cut_short' | 'failed' = 'failed';
    try {
      const result = await audit(
        {
          cluster,
          chain: options.chain(),
          namespaceLabels: options.namespaceLabels,
          metrics: reviewMetrics,
          log: auditReviewLog(log),
          limits: config.audit,
          deadlineMarginMs: config.server.deadlineMarginMs,
          defaultTimeoutMs: config.server.defaultTimeoutSeconds * 1000,
          gatewayNamespace: config.server.service.namespace,
          exceptions: options.exceptions,
          signal: stopping.signal,
        },
        { dryRun: false },
      );
      outcome = result.run.cutShort.length > 0 ? 'cut_short' : 'complete';
      metrics.auditResults.reset();
      for (const s of result.summaries) {
        for (const r of RESULTS) metrics.auditResults.set({ step: s.step, result: r }, s[r]);
      }
      const { write } = result;
      log.info(
        {
          objects: result.run.objects.length,
          excluded: result.run.excluded,
          resources: result.run.targets.length,
          written: write?.written.length ?? 0,
          deleted: write?.deleted ?? [],
          summary: result.lines,
          ...(result.run.problems.length > 0 ? { problems: result.run.problems } : {}),
          ...(write && write.errors.length > 0 ? { errors: write.errors } : {}),
        },
        'audit',
      );
    } catch (err) {
      log.warn({ err: apiErrorMessage(err) }, 'audit failed');
    }
    metrics.auditDuration.set((performance.now() - started) / 1000);
    metrics.auditLastRun.set({ outcome }, Date.now() / 1000);
  };

  const schedule = () => {
    if (stopping.signal.aborted) return;
    timer = setTimeout(() => {
      running = once().finally(() => {
        running = undefined;
        schedule();
      });
    }, intervalMs);
    // A pending audit never keeps the process alive.
    timer.unref();
  };
  schedule();

  return {
    async stop() {
      stopping.abort();
      clearTimeout(timer);
      await running;
    },
  };
}
