/**
 * `admission-gateway audit`: the configured chain's validating steps run over the objects that exist in the
 * cluster (server/audit/), with the results written as PolicyReports and a ClusterPolicyReport, and the
 * operator's summary printed. The credentials are found as cluster mode finds them (--kubeconfig first).
 * The chain is the config's: AdmissionProviders registered in the cluster are audited by the periodic audit
 * of a running gateway, which reviews with its live chain.
 */
import { commandChain } from './offline-reviewer.js';
import path from 'node:path';
import { audit, auditReviewLog, type AuditOutcome } from '../audit/audit.js';
import { createAuditCluster, namespaceLabelsFromCluster } from '../audit/cluster.js';
import { reportsOf } from '../audit/write-reports.js';
import { AuditSetupError } from '../audit/run-audit.js';
import type { AnyPlugin } from '../chain/plugin-registry.js';
import type { GatewayConfig } from '../config/types.js';
import { loadExceptions } from '../exceptions/watched-exceptions.js';
import { findKubeconfig, loadKubeConfig } from '../kube/kube-config.js';
import { EXIT_DENIED, UsageError, type Values } from './usage.js';

/** The audit did not reach everything, or could not write its reports. */
export const EXIT_INCOMPLETE = 1;

export interface AuditCommand {
  readonly step: string | undefined;
  readonly dryRun: boolean;
  readonly output: 'text' | 'json';
  /** Exit EXIT_DENIED when an object fails (or errors in) a step. */
  readonly exitCode: boolean;
  readonly kubeconfig: string | undefined;
}

export interface AuditIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  readonly plugins?: readonly AnyPlugin[] | undefined;
}

/** Checks audit's arguments before anything is read. */
export function auditCommand(args: readonly string[], values: Values): AuditCommand {
  if (args.length > 0) throw new UsageError(`audit: unexpected argument "${args[0]}"`);
  const output = values.output ?? 'text';
  if (output !== 'text' && output !== 'json') {
    throw new UsageError(`--output: expected text or json, got "${output}"`);
  }
  if (values.step === '') throw new UsageError('--step: expected a step name');
  return {
    step: values.step,
    dryRun: values['dry-run'] === true,
    output,
    exitCode: values['exit-code'] === true,
    kubeconfig: values.kubeconfig,
  };
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The text the operator reads. */
export function auditText(outcome: AuditOutcome, dryRun: boolean): string {
  const { run, write } = outcome;
  const reports = reportsOf(outcome.reports).map((r) => r.metadata.namespace ?? 'cluster');
  const lines = [
    `audited ${plural(run.objects.length, 'object')} of ${plural(run.targets.length, 'resource')} ` +
      `(${run.targets.map((t) => `${t.resource}${t.group ? `.${t.group}` : ''}`).join(', ') || 'none'})`,
    ...(run.excluded > 0
      ? [
          `not audited: ${run.excluded} objects in namespaces the webhooks exclude (kube-system, kube-node-lease, the gateway's, labelled admissiongateway.io/exclude)`,
        ]
      : []),
    ...outcome.lines,
    ...run.problems.map((p) => `problem: ${p}`),
  ];
  if (dryRun) lines.push(`dry run: nothing written; reports: ${reports.join(', ') || 'none'}`);
  else if (write) {
    lines.push(`reports written: ${write.written.join(', ') || 'none'}`);
    if (write.deleted.length > 0) lines.push(`reports deleted (no results any more): ${write.deleted.join(', ')}`);
    lines.push(...write.errors.map((e) => `error: ${e}`));
  }
  return `${lines.join('\n')}\n`;
}

function printable(outcome: AuditOutcome) {
  return {
    objects: outcome.run.objects.length,
    excluded: outcome.run.excluded,
    resources: outcome.run.targets,
    steps: outcome.summaries,
    summary: outcome.lines,
    cutShort: outcome.run.cutShort,
    problems: outcome.run.problems,
    ...(outcome.write
      ? { written: outcome.write.written, deleted: outcome.write.deleted, errors: outcome.write.errors }
      : {}),
    reports: reportsOf(outcome.reports),
  };
}

async function kubeConfigFor(command: AuditCommand, config: GatewayConfig, io: AuditIO) {
  const section = {
    ...config.kube,
    enabled: true,
    kubeconfig: command.kubeconfig !== undefined ? path.resolve(io.cwd, command.kubeconfig) : config.kube.kubeconfig,
  };
  if (!(await findKubeconfig(section, io.env))) {
    throw new UsageError(
      'audit needs a cluster: no credentials in --kubeconfig, kube.kubeconfig, KUBECONFIG, ~/.kube/config or an in-cluster service account',
    );
  }
  return (await loadKubeConfig(section, io.env))!;
}

/** Runs the audit; returns the exit code. */
export async function runAuditCommand(command: AuditCommand, config: GatewayConfig, io: AuditIO): Promise<number> {
  const kc = await kubeConfigFor(command, config, io);
  const { log, metrics, chains } = await commandChain(config, io);
  const deadline = AbortSignal.timeout(config.audit.timeoutSeconds * 1000);
  // The exceptions admission applies: the config's files and the cluster's objects, as they are now.
  const exceptions = await loadExceptions(config.exceptions);
  // Imported here: the Kubernetes client is loaded only where a cluster is used, never by `serve` without one.
  const { listClusterExceptions } = await import('../kube/cluster-exceptions.js');
  const inCluster = await listClusterExceptions(kc, { maxLifetimeMs: exceptions.maxLifetimeMs, now: exceptions.now() });
  exceptions.setWatched(inCluster.exceptions);
  for (const problem of inCluster.problems) io.stderr(`admission-gateway audit: exception left out: ${problem}\n`);
  let outcome: AuditOutcome;
  try {
    // Providers with discovery get one attempt, so the audit sees their handlers.
    await Promise.all(chains.runtimes().map((r) => r.discover()));
    outcome = await audit(
      {
        cluster: createAuditCluster(kc),
        chain: chains.current(),
        namespaceLabels: namespaceLabelsFromCluster(kc, deadline),
        metrics,
        log: auditReviewLog(log),
        limits: config.audit,
        deadlineMarginMs: config.server.deadlineMarginMs,
        defaultTimeoutMs: config.server.defaultTimeoutSeconds * 1000,
        gatewayNamespace: config.server.service.namespace,
        step: command.step,
        exceptions,
      },
      { dryRun: command.dryRun },
    );
  } catch (err) {
    if (err instanceof AuditSetupError) throw new UsageError(err.message);
    throw err;
  } finally {
    await chains.close();
  }
  io.stdout(
    command.output === 'json' ? `${JSON.stringify(printable(outcome), null, 2)}\n` : auditText(outcome, command.dryRun),
  );
  const incomplete =
    outcome.run.cutShort.length > 0 || outcome.run.problems.length > 0 || (outcome.write?.errors.length ?? 0) > 0;
  if (incomplete) return EXIT_INCOMPLETE;
  const refused = outcome.summaries.some((s) => s.fail > 0 || s.error > 0);
  return command.exitCode && refused ? EXIT_DENIED : 0;
}
