/**
 * From the apiserver's audit log to the decision trace (README "Explaining a decision"): a Pod create the gateway
 * denies, its audit event's `<webhook>/decision-trace` annotation, and the trace the ops server serves for the
 * uid it names.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { AUDIT_LOG, apiError, core, eventually, randomSuffix } from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';

const CHAIN = `
- plugin: default-labels
  name: prod-labels
  settings: { labels: { tier: prod } }
  match:
    rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: ['*'], resources: [pods] }]
    namespaceSelector: { matchLabels: { env: prod } }
- plugin: require-labels
  settings: { labels: [team] }
- plugin: image-policy
  mode: warn
  settings: { forbidLatest: true }
`;

const POD_RULES = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];

interface AuditEvent {
  readonly verb: string;
  readonly objectRef?: { readonly resource?: string; readonly namespace?: string; readonly name?: string };
  readonly responseStatus?: { readonly code?: number };
  readonly annotations?: Readonly<Record<string, string>>;
}

/** The audit events of a Pod's create, with their annotations. */
async function podCreateEvents(namespace: string, name: string): Promise<AuditEvent[]> {
  const lines = (await readFile(AUDIT_LOG, 'utf8')).split('\n').filter(Boolean);
  return lines
    .map((line) => JSON.parse(line) as AuditEvent)
    .filter(
      (e) =>
        e.verb === 'create' &&
        e.objectRef?.resource === 'pods' &&
        e.objectRef.namespace === namespace &&
        e.objectRef.name === name,
    );
}

interface Trace {
  readonly uid: string;
  readonly route: string;
  readonly allowed: boolean;
  readonly code?: number;
  readonly decidedBy?: readonly string[];
  readonly request: { readonly operation: string; readonly namespace?: string; readonly name?: string };
  readonly steps: ReadonlyArray<{
    readonly step: string;
    readonly outcome: string;
    readonly rule?: string;
    readonly reason?: string;
    readonly message?: string;
    readonly decided?: boolean;
  }>;
}

describe('a denial explained: from the audit log to the decision trace', function () {
  let gw: E2EGateway | undefined;
  let namespace: string;

  before(async function () {
    gw = await startE2EGateway({
      suite: 'explain',
      chain: CHAIN,
      // Every review kept and annotated: the allowed mutate call too (by default only notable ones are).
      explain: { keep: 'all' },
      mutating: [{ name: 'mutate', route: 'mutate', rules: POD_RULES }],
      validating: [{ name: 'validate', route: 'validate', rules: POD_RULES }],
    });
    namespace = await gw.namespace();
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
  });

  it('finds the trace by the uid the audit annotation names, with the deciding step, its rule and message', async function () {
    const name = `no-team-${randomSuffix()}`;
    const err = await apiError(
      core().createNamespacedPod({
        namespace,
        body: {
          metadata: { name, labels: { app: 'web' } },
          spec: { containers: [{ name: 'app', image: 'nginx:latest' }] },
        },
      }),
    );
    assert.equal(err.code, 403);

    const validate = gw!.webhookName('validate');
    const mutate = gw!.webhookName('mutate');
    const event = await eventually('the denied create is in the audit log', async () => {
      const events = await podCreateEvents(namespace, name);
      return events.find((e) => e.annotations?.[`${validate}/decision-trace`] !== undefined);
    });
    assert.equal(event.responseStatus?.code, 403);
    // Both webhooks' calls are linked: the mutate call's trace too.
    assert.match(event.annotations?.[`${mutate}/decision-trace`] ?? '', /^uid=\S+ traceId=[0-9a-f]{32}$/);
    const uid = /^uid=(\S+) traceId=[0-9a-f]{32}$/.exec(event.annotations![`${validate}/decision-trace`]!)![1]!;

    const answer = await fetch(`${gw!.gateway.opsUrl}/explain/${uid}`);
    assert.equal(answer.status, 200);
    const trace = (await answer.json()) as Trace;
    assert.deepEqual(
      {
        uid: trace.uid,
        route: trace.route,
        allowed: trace.allowed,
        code: trace.code,
        decidedBy: trace.decidedBy,
        request: trace.request,
      },
      {
        uid,
        route: 'validate',
        allowed: false,
        code: 403,
        decidedBy: ['require-labels'],
        request: {
          operation: 'CREATE',
          kind: 'v1/Pod',
          resource: 'v1/pods',
          namespace,
          name,
          dryRun: false,
          user: 'admin',
        },
      },
    );
    assert.deepEqual(
      trace.steps
        .filter(({ step }) => !step.startsWith('e2e-probe'))
        .map(({ step, outcome, rule, message, decided }) => ({ step, outcome, rule, message, decided })),
      [
        {
          step: 'require-labels',
          outcome: 'denied',
          rule: 'rule 1 (CREATE, UPDATE on core,apps,batch/* pods, deployments, statefulsets, daemonsets, replicasets, jobs, cronjobs, services)',
          message: 'missing required label: team',
          decided: true,
        },
        {
          step: 'image-policy',
          outcome: 'denied',
          rule: 'rule 1 (CREATE, UPDATE on core,apps,batch/* pods, deployments, replicasets, statefulsets, daemonsets, jobs, cronjobs, replicationcontrollers, podtemplates, pods/ephemeralcontainers)',
          message: 'spec.containers[0] image "nginx:latest": tag latest is not allowed',
          decided: undefined,
        },
      ],
    );

    // The mutate call's trace says why the namespaceSelector step did not run (this gateway is not in cluster
    // mode: a namespace's labels are the one Kubernetes sets, its name).
    const mutateUid = /^uid=(\S+) /.exec(event.annotations![`${mutate}/decision-trace`]!)![1]!;
    const mutated = (await (await fetch(`${gw!.gateway.opsUrl}/explain/${mutateUid}`)).json()) as Trace;
    assert.deepEqual(
      mutated.steps
        .filter(({ step }) => !step.startsWith('e2e-probe'))
        .map(({ step, outcome, reason }) => ({ step, outcome, reason })),
      [
        {
          step: 'prod-labels',
          outcome: 'skipped',
          reason: `namespaceSelector does not match: the namespace's labels {kubernetes.io/metadata.name=${namespace}} fail env=prod`,
        },
      ],
    );
  });
});
