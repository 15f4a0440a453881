/**
 * What one replica does for all (today the periodic audit): started on the replica that holds the Lease of
 * kube.leaderElection, stopped when it loses the Lease or stops, and only then is the Lease released. The gauge
 * admission_gateway_leader{lease="<leaseName>"} says which replica it is.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../base/log.js';
import type { LeaderElectionConfig } from '../config/types.js';
import type { Metrics } from '../metrics/metrics.js';
import { createLeaderElector, type ElectionClock } from './leader-election.js';
import { createLeaseLock, type LeaseLock } from './lease-lock.js';

/** A piece of work only the leader does: `start` begins it, the handle it returns ends it. */
export interface LeaderDuty {
  readonly name: string;
  start(): { stop(): Promise<void> };
}

export interface LeaderDutiesOptions {
  readonly kc: KubeConfig;
  readonly config: LeaderElectionConfig;
  readonly duties: readonly LeaderDuty[];
  readonly metrics: Metrics;
  readonly log: Logger;
  /** Default: the host name (the pod's name) and a random UUID, so a restarted pod is a new candidate. */
  readonly identity?: string;
  /** Default: the Lease of `config` through `kc`. */
  readonly lock?: LeaseLock;
  readonly clock?: ElectionClock;
  readonly random?: () => number;
}

export interface LeaderDuties {
  stop(): Promise<void>;
}

export function startLeaderDuties(options: LeaderDutiesOptions): LeaderDuties {
  const { config, duties, metrics, log } = options;
  const lock =
    options.lock ?? createLeaseLock(options.kc, { namespace: config.leaseNamespace, name: config.leaseName });
  // The name from the config (bounded, like step names), not the namespace: no label carries a namespace.
  const lease = { lease: config.leaseName };
  let running: { readonly name: string; stop(): Promise<void> }[] = [];
  metrics.leader.set(lease, 0);
  const elector = createLeaderElector({
    lock,
    identity: options.identity ?? `${hostname()}_${randomUUID()}`,
    timing: config,
    log,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.random ? { random: options.random } : {}),
    onStartedLeading() {
      metrics.leader.set(lease, 1);
      running = duties.map((duty) => ({ name: duty.name, ...duty.start() }));
      log.info({ ...lease, duties: duties.map((d) => d.name) }, 'leading: started the work one replica does for all');
    },
    async onStoppedLeading() {
      metrics.leader.set(lease, 0);
      const stopping = running;
      running = [];
      await Promise.all(stopping.map((duty) => duty.stop()));
    },
  });
  elector.start();
  return { stop: () => elector.stop() };
}
