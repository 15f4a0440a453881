/**
 * Replicas share the work, on the real apiserver: gateways in cluster mode with the periodic audit on
 * (audit.intervalSeconds 1) and one Lease (kube.leaderElection, short timings: 4 s lease, 3 s renew deadline,
 * 0.5 s retry period) in a namespace of this file. Three run in this process in turn (startE2EGateway), one as a
 * real `serve` process, so it can die without a word (SIGKILL). Exactly one replica leads
 * (admission_gateway_leader is 1 there, 0 on the others, and the Lease names it); only it audits — the others log
 * no audit run and export no audit metric — and across all replicas runs end at least an interval apart; a leader
 * that closes releases the Lease and another leads and audits; a leader that dies is replaced once its Lease has
 * expired, not before. The shipped Role lets the gateway's ServiceAccount do all the election does.
 */
import assert from 'node:assert/strict';
import { readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  AuthorizationV1Api,
  CoordinationV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1Lease,
  type V1Role,
} from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { parseAllDocuments, stringify } from 'yaml';
import { createLogger } from '../../server/base/log.js';
import { startLeaderDuties } from '../../server/kube/leader-duties.js';
import { createMetrics } from '../../server/metrics/metrics.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { serveArgs, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { KUBECONFIG_ENV, core, eventually, kubeConfig, newKubeConfig, randomSuffix } from './cluster.js';
import { anyFailed, metricValue, startE2EGateway, type E2EGateway } from './gateway.js';
import { configMapsHaveTeam, installReportCrds, readReport, reportStatus } from './policy-reports.js';

const SUITE = 'leader-election';
/** Ties this run's namespaces to the audited step's selector, so objects other files left are not audited. */
const RUN_LABEL = 'e2e.admissiongateway.io/leader-election-run';
const run = randomSuffix();
const LEASE_NAME = 'admission-gateway';
const TIMING = { leaseDurationSeconds: 4, renewDeadlineSeconds: 3, retryPeriodSeconds: 0.5 };
const INTERVAL_SECONDS = 1;

/** A step in warn mode on the ConfigMaps of this run's namespaces: what the leader audits. */
const CHAIN = [configMapsHaveTeam(RUN_LABEL, run)];

/** One gateway replica, in this process or a process of its own. */
interface Replica {
  readonly name: string;
  /** Its candidate identity, as its log says when the election starts. */
  identity(): Promise<string>;
  /** admission_gateway_leader{lease} on its /metrics. */
  leaderGauge(): Promise<number | undefined>;
  /** admission_gateway_audit_last_run_timestamp_seconds{outcome="complete"}, absent until it audited. */
  lastAudit(): Promise<number | undefined>;
  /** When each of its audit runs ended (its `audit` and `audit failed` log lines), in ms. */
  auditRuns(): Promise<number[]>;
}

const coordination = () => kubeConfig().makeApiClient(CoordinationV1Api);

/** Parses the Prometheus text of a replica's /metrics for the two series this file reads. */
function seriesOf(text: string) {
  return {
    leader: metricValue(text, 'admission_gateway_leader', { lease: LEASE_NAME }),
    lastAudit: metricValue(text, 'admission_gateway_audit_last_run_timestamp_seconds', { outcome: 'complete' }),
  };
}

const AUDIT_LINES = new Set(['audit', 'audit failed']);

function auditEnds(lines: readonly Record<string, unknown>[]): number[] {
  return lines.filter((l) => AUDIT_LINES.has(String(l.msg))).map((l) => Date.parse(String(l.time)));
}

function identityIn(lines: readonly Record<string, unknown>[]): string | undefined {
  const started = lines.find((l) => l.msg === 'leader election: started');
  return typeof started?.identity === 'string' ? started.identity : undefined;
}

describe('leader election: replicas share the work', function () {
  this.timeout(240_000);
  /** Where the Lease is. */
  let leaseNamespace: string;
  const inProcess = new Map<string, E2EGateway>();
  const processes = new Map<string, GatewayProcess>();
  const replicas: Replica[] = [];
  /** When the audit runs of replicas that are gone ended. */
  const goneRuns: number[] = [];
  let dir: string;

  const leaderElection = () => ({ leaseName: LEASE_NAME, leaseNamespace, ...TIMING });

  async function startInProcess(name: string): Promise<Replica> {
    const gw = await startE2EGateway({
      suite: `${SUITE}-${name}`,
      chain: stringify(CHAIN),
      clusterMode: {},
      audit: { intervalSeconds: INTERVAL_SECONDS },
      kube: { watchProviders: false, leaderElection: leaderElection() },
    });
    inProcess.set(name, gw);
    const replica: Replica = {
      name,
      identity: () => eventually(`replica ${name} to start its election`, async () => identityIn(await gw.logLines())),
      leaderGauge: async () => seriesOf(await gw.metrics()).leader,
      lastAudit: async () => seriesOf(await gw.metrics()).lastAudit,
      auditRuns: async () => auditEnds(await gw.logLines()),
    };
    replicas.push(replica);
    return replica;
  }

  /** `serve` in a process of its own, with the same settings as the in-process replicas. */
  async function startProcess(name: string): Promise<Replica> {
    const configFile = path.join(dir, `${name}.yaml`);
    await writeFile(
      configFile,
      stringify({
        server: {
          host: '127.0.0.1',
          opsHost: '127.0.0.1',
          opsAuth: 'none',
          healthHost: '127.0.0.1',
          tls: {
            certFile: `${name}-tls.crt`,
            keyFile: `${name}-tls.key`,
            generate: true,
            dnsNames: ['localhost'],
            ipAddresses: ['127.0.0.1'],
          },
        },
        kube: {
          enabled: true,
          watchProviders: false,
          kubeconfig: process.env[KUBECONFIG_ENV] ?? '',
          leaderElection: leaderElection(),
        },
        log: { level: 'info' },
        chain: CHAIN,
        audit: { intervalSeconds: INTERVAL_SECONDS },
      }),
    );
    const gw = await spawnGateway({
      command: process.execPath,
      args: ['--import', 'tsx', ...serveArgs(path.join(REPO_ROOT, 'server', 'main.ts'), configFile)],
      cwd: REPO_ROOT,
      startTimeoutMs: 60_000,
    });
    processes.set(name, gw);
    const metrics = async () => seriesOf(await (await fetch(`${gw.ops}/metrics`)).text());
    const replica: Replica = {
      name,
      identity: () => eventually(`replica ${name} to start its election`, () => Promise.resolve(identityIn(gw.logs()))),
      leaderGauge: async () => (await metrics()).leader,
      lastAudit: async () => (await metrics()).lastAudit,
      auditRuns: () => Promise.resolve(auditEnds(gw.logs())),
    };
    replicas.push(replica);
    return replica;
  }

  /** Closes an in-process replica (gracefully, as `serve` does on SIGTERM) and keeps its audit runs. */
  async function close(replica: Replica): Promise<void> {
    const gw = inProcess.get(replica.name)!;
    // The log is read after the close: a run the close cut short is in it too.
    await gw.close({ keepDir: true });
    goneRuns.push(...(await replica.auditRuns()));
    if (!process.env.E2E_KEEP) await rm(gw.dir, { recursive: true, force: true });
    inProcess.delete(replica.name);
    replicas.splice(replicas.indexOf(replica), 1);
  }

  const readLease = async (): Promise<V1Lease> =>
    coordination().readNamespacedLease({ name: LEASE_NAME, namespace: leaseNamespace });

  /** The replica whose gauge is 1, once exactly one of `among` has it 1 and every other 0. */
  async function soleLeader(among: readonly Replica[]): Promise<Replica> {
    return eventually(
      `exactly one of ${among.map((r) => r.name).join(', ')} to lead`,
      async () => {
        const gauges = await Promise.all(among.map((r) => r.leaderGauge()));
        const leaders = among.filter((_, i) => gauges[i] === 1);
        if (leaders.length !== 1 || gauges.some((g) => g !== 0 && g !== 1)) {
          throw new Error(`gauges ${among.map((r, i) => `${r.name}=${gauges[i]}`).join(', ')}`);
        }
        return leaders[0];
      },
      { timeoutMs: 60_000 },
    );
  }

  async function namespaceWithConfigMaps(): Promise<string> {
    const name = `${SUITE}-${randomSuffix()}`;
    await core().createNamespace({ body: { metadata: { name, labels: { [RUN_LABEL]: run } } } });
    for (const [cm, team] of [
      ['labelled', 'a'],
      ['unlabelled', undefined],
    ] as const) {
      await core().createNamespacedConfigMap({
        namespace: name,
        body: { metadata: { name: cm, ...(team ? { labels: { team } } : {}) }, data: { k: 'v' } },
      });
    }
    return name;
  }

  /** Waits for the PolicyReport of `namespace`, and checks it is the report of its two ConfigMaps. */
  async function reportWritten(namespace: string): Promise<void> {
    const report = await eventually(
      `the PolicyReport of ${namespace}`,
      async () => ((await reportStatus(namespace)) === 200 ? readReport(namespace) : undefined),
      { timeoutMs: 60_000 },
    );
    assert.deepEqual(report.summary, { pass: 1, fail: 1, warn: 0, error: 0, skip: 0 });
  }

  before(async function () {
    await installReportCrds();
    dir = await mkdtemp(path.join(os.tmpdir(), 'admission-gateway-e2e-leader-'));
    leaseNamespace = `${SUITE}-lease-${randomSuffix()}`;
    await core().createNamespace({ body: { metadata: { name: leaseNamespace } } });
  });

  after(async function () {
    for (const gw of processes.values()) gw.kill();
    const keepDir = anyFailed(this.test!.parent!);
    for (const gw of inProcess.values()) await gw.close({ keepDir });
    if (!keepDir && !process.env.E2E_KEEP) await rm(dir, { recursive: true, force: true });
  });

  afterEach(function () {
    if (this.currentTest?.state !== 'failed') return;
    for (const [name, gw] of processes) console.log(`--- ${name} stdout\n${gw.stdout()}\n--- stderr\n${gw.stderr()}`);
  });

  it('exactly one of two replicas leads: its gauge is 1, the other’s 0, and the Lease names it', async function () {
    const a = await startInProcess('a');
    const b = await startInProcess('b');
    const leader = await soleLeader([a, b]);
    const lease = await readLease();
    assert.equal(lease.spec?.holderIdentity, await leader.identity());
    assert.equal(lease.spec?.leaseDurationSeconds, TIMING.leaseDurationSeconds);
    assert.notEqual(await a.identity(), await b.identity());
  });

  it('only the leader audits and writes the reports; the other runs no audit', async function () {
    const [a, b] = replicas as [Replica, Replica];
    const leader = await soleLeader([a, b]);
    const follower = leader === a ? b : a;
    await reportWritten(await namespaceWithConfigMaps());
    await eventually('three audit runs of the leader', async () =>
      (await leader.auditRuns()).length >= 3 ? true : undefined,
    );
    assert.deepEqual(
      {
        leaderGauge: await leader.leaderGauge(),
        followerGauge: await follower.leaderGauge(),
        followerRuns: await follower.auditRuns(),
        followerLastAudit: await follower.lastAudit(),
      },
      { leaderGauge: 1, followerGauge: 0, followerRuns: [], followerLastAudit: undefined },
    );
    assert.ok(((await leader.lastAudit()) ?? 0) > 0, 'the leader exports its last complete run');
  });

  it('a leader that closes releases the Lease: the other leads, audits and writes the reports', async function () {
    const [a, b] = replicas as [Replica, Replica];
    const leader = await soleLeader([a, b]);
    const follower = leader === a ? b : a;
    const closedIdentity = await leader.identity();
    await close(leader);
    // Released on close: nobody holds it, or the other replica took it at once — never the closed one.
    const holder = (await readLease()).spec?.holderIdentity;
    assert.ok(
      holder === '' || holder === (await follower.identity()),
      `after close the Lease is held by ${holder}, the closed replica was ${closedIdentity}`,
    );
    assert.equal(await soleLeader([follower]), follower);
    await reportWritten(await namespaceWithConfigMaps());
    // The run logs its line once its reports are written.
    await eventually('an audit run of the new leader', async () =>
      (await follower.auditRuns()).length > 0 ? true : undefined,
    );
  });

  it('a leader that dies without a word is replaced once its Lease has expired, not before', async function () {
    const [survivor] = replicas as [Replica];
    const p = await startProcess('p');
    // The process follows while the in-process replica leads; that one then closes, and the process leads.
    assert.equal(await soleLeader([survivor, p]), survivor);
    await close(survivor);
    assert.equal(await soleLeader([p]), p);
    await eventually('an audit run of the process', async () => ((await p.auditRuns()).length > 0 ? true : undefined));
    const c = await startInProcess('c');
    assert.equal(await soleLeader([p, c]), p);
    processes.get('p')!.kill();
    await processes.get('p')!.exited;
    goneRuns.push(...(await p.auditRuns()));
    processes.delete('p');
    replicas.splice(replicas.indexOf(p), 1);
    const lastRenewal = (await readLease()).spec!;
    assert.equal(lastRenewal.holderIdentity, await p.identity());
    const taken = await eventually(
      'the in-process replica to take the Lease over',
      async () => {
        const spec = (await readLease()).spec!;
        return spec.holderIdentity === (await c.identity()) ? spec : undefined;
      },
      { timeoutMs: 60_000 },
    );
    // Not before the Lease had expired: the Lease's own times, both written on this machine's clock.
    const renewed = Date.parse(String(lastRenewal.renewTime));
    const acquired = Date.parse(String(taken.acquireTime));
    assert.ok(
      acquired - renewed >= TIMING.leaseDurationSeconds * 1000,
      `taken over ${acquired - renewed} ms after the last renewal`,
    );
    assert.equal(taken.leaseTransitions, (lastRenewal.leaseTransitions ?? 0) + 1);
    assert.equal(await soleLeader([c]), c);
    await reportWritten(await namespaceWithConfigMaps());
  });

  it('across all replicas, audit runs ended at least an interval apart: one run per interval', async function () {
    // Every replica of this file: those still running, and those closed or killed (their runs kept then).
    const ends = [...(await Promise.all(replicas.map((r) => r.auditRuns()))).flat(), ...goneRuns];
    ends.sort((x, y) => x - y);
    assert.ok(ends.length >= 3, `${ends.length} runs`);
    const gaps = ends.slice(1).map((end, i) => end - ends[i]!);
    assert.deepEqual(
      gaps.filter((gap) => gap < INTERVAL_SECONDS * 1000),
      [],
    );
  });

  it('the shipped Role lets the gateway’s ServiceAccount read, create, renew and release its Lease', async function () {
    const namespace = `${SUITE}-rbac-${randomSuffix()}`;
    await core().createNamespace({ body: { metadata: { name: namespace } } });
    await core().createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'admission-gateway' } } });
    const text = await readFile(path.join(REPO_ROOT, 'manifests', 'rbac.yaml'), 'utf8');
    const role = parseAllDocuments(text)
      .map((doc) => doc.toJS() as V1Role)
      .find((o) => o.kind === 'Role' && o.metadata?.name === 'admission-gateway-leader-election');
    assert.ok(role, 'manifests/rbac.yaml has the Role admission-gateway-leader-election');
    const rbac = kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: { metadata: { name: role.metadata!.name! }, rules: role.rules ?? [] },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: role.metadata!.name! },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role.metadata!.name! },
        subjects: [{ kind: 'ServiceAccount', name: 'admission-gateway', namespace }],
      },
    });
    const user = `system:serviceaccount:${namespace}:admission-gateway`;
    const groups = ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'];
    const authorization = kubeConfig().makeApiClient(AuthorizationV1Api);
    const allowed = async (verb: string, name?: string) =>
      (
        await authorization.createSubjectAccessReview({
          body: {
            spec: {
              user,
              groups,
              resourceAttributes: {
                group: 'coordination.k8s.io',
                resource: 'leases',
                namespace,
                verb,
                ...(name ? { name } : {}),
              },
            },
          },
        })
      ).status?.allowed === true;
    await eventually('the apiserver to apply the RoleBinding', async () =>
      (await allowed('get', LEASE_NAME)) ? true : undefined,
    );
    assert.deepEqual(
      {
        get: await allowed('get', LEASE_NAME),
        create: await allowed('create'),
        update: await allowed('update', LEASE_NAME),
        delete: await allowed('delete', LEASE_NAME),
        'update another Lease': await allowed('update', 'kube-scheduler'),
      },
      { get: true, create: true, update: true, delete: false, 'update another Lease': false },
    );

    // The election itself, as that ServiceAccount (a TokenRequest token): creates the Lease, leads, releases.
    const token = (
      await core().createNamespacedServiceAccountToken({
        name: 'admission-gateway',
        namespace,
        body: { spec: { audiences: [], expirationSeconds: 600 } },
      })
    ).status?.token;
    assert.ok(token, 'the TokenRequest API gave no token');
    const asAccount = new KubeConfig();
    asAccount.loadFromClusterAndUser(newKubeConfig().getCurrentCluster()!, { name: 'admission-gateway', token });
    let leading = false;
    const duties = startLeaderDuties({
      kc: asAccount,
      config: { leaseName: LEASE_NAME, leaseNamespace: namespace, ...TIMING },
      metrics: createMetrics(new Registry(), { defaultMetrics: false }),
      log: createLogger('silent'),
      duties: [
        {
          name: 'marker',
          start() {
            leading = true;
            return { stop: () => Promise.resolve() };
          },
        },
      ],
    });
    try {
      await eventually('the ServiceAccount’s election to lead', () => Promise.resolve(leading ? true : undefined));
      // Renewals go through too: still the holder after more than a lease duration.
      const acquired = (await coordination().readNamespacedLease({ name: LEASE_NAME, namespace })).spec!;
      await eventually(
        'a renewal past the lease duration',
        async () => {
          const spec = (await coordination().readNamespacedLease({ name: LEASE_NAME, namespace })).spec!;
          const renewedFor = Date.parse(String(spec.renewTime)) - Date.parse(String(acquired.acquireTime));
          return spec.holderIdentity === acquired.holderIdentity && renewedFor > TIMING.leaseDurationSeconds * 1000
            ? true
            : undefined;
        },
        { timeoutMs: 30_000 },
      );
    } finally {
      await duties.stop();
    }
    assert.equal((await coordination().readNamespacedLease({ name: LEASE_NAME, namespace })).spec?.holderIdentity, '');
  });
});
