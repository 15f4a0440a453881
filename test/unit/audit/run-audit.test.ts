/**
 * An audit run over an in-memory stand-in for the apiserver (discovery documents, paged lists with limit and
 * continue, as the apiserver answers them), through the gateway's own chain and reviewer: which objects each
 * step has a result for and what it is, the namespaces the webhooks exclude, and every bound that cuts a run
 * short saying so. The real apiserver's side is test/e2e/audit.e2e.ts.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { availablePlugins } from '../../../plugins/index.js';
import type { KubeObject } from '../../../server/admission/types.js';
import { audit } from '../../../server/audit/audit.js';
import { runAudit, type AuditDeps } from '../../../server/audit/run-audit.js';
import type { Chain } from '../../../server/chain/chain.js';
import type { Labels } from '../../../server/steps/label-selector.js';
import type { AuditConfig } from '../../../server/config/types.js';
import { createExceptionStore, type ExceptionSource } from '../../../server/exceptions/exception-source.js';
import { readException } from '../../../server/exceptions/read-exception.js';
import { createMetrics } from '../../../server/metrics/metrics.js';
import { createChainForConfig } from '../../../server/providers/configured-chain.js';
import { parseConfig } from '../../helpers/config.js';
import type { AuditCluster } from '../../../server/audit/cluster.js';
import { MemoryCluster } from '../../helpers/memory-audit-cluster.js';
import { createTestPlugins } from '../../helpers/test-plugins.js';

const object = (name: string, namespace: string | undefined, labels: Labels = {}): KubeObject => ({
  metadata: { name, ...(namespace ? { namespace } : {}), uid: `uid-${name}`, labels },
});

const CHAIN_YAML = `
server: { service: { namespace: gateway-ns, name: admission-gateway } }
chain:
  - plugin: require-labels
    name: team-label
    mode: warn
    match:
      rules: [{ operations: [CREATE, UPDATE], apiGroups: [''], apiVersions: [v1], resources: [configmaps] }]
      namespaceSelector: { matchExpressions: [{ key: audited, operator: NotIn, values: ['no'] }] }
    settings: { labels: [team] }
  - plugin: deny-with-reason
    name: no-secrets
    match:
      rules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['*'], resources: [secrets] }]
    settings: { reason: secrets are not allowed here }
  - plugin: throws
    name: broken
    mode: warn
    match:
      rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [configmaps] }]
      objectSelector: { matchLabels: { broken: 'yes' } }
    settings: { message: provider down }
  - plugin: records-calls
    name: with-side-effects
    sideEffects: Some
    match:
      rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [secrets] }]
  - plugin: records-calls
    name: status-only
    match:
      rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods/status] }]
  - plugin: records-calls
    name: updates-only
    match:
      rules: [{ operations: [UPDATE], apiGroups: [''], apiVersions: [v1], resources: [pods] }]
`;

const LIMITS: AuditConfig = {
  intervalSeconds: 0,
  timeoutSeconds: 60,
  maxObjectsPerResource: 100,
  maxObjects: 1000,
  concurrency: 3,
  maxResultsPerReport: 100,
};

const NAMESPACE_LABELS: Readonly<Record<string, Labels>> = {
  ns1: {},
  ns2: {},
  quiet: { audited: 'no' },
  opted: { 'admissiongateway.io/exclude': 'true' },
};

const ITEMS: Readonly<Record<string, readonly KubeObject[]>> = {
  configmaps: [
    object('cm-ok', 'ns1', { team: 'a' }),
    object('cm-bad', 'ns1'),
    object('cm-broken', 'ns2', { team: 'b', broken: 'yes' }),
    object('cm-quiet', 'quiet'),
    object('cm-system', 'kube-system'),
    object('cm-gateway', 'gateway-ns'),
    object('cm-opted-out', 'opted'),
  ],
  secrets: [object('s1', 'ns2')],
  pods: [object('p1', 'ns1')],
};

describe('runAudit', function () {
  let chain: Chain;
  let close: () => Promise<void>;

  before(async function () {
    const metrics = createMetrics(new Registry(), { defaultMetrics: false });
    const chains = await createChainForConfig(
      parseConfig(CHAIN_YAML),
      [...availablePlugins, ...createTestPlugins().plugins],
      { metrics, log: silent, onChain: () => undefined },
    );
    chain = chains.current();
    close = () => chains.close();
  });
  after(async () => close());

  const deps = (cluster: AuditCluster, over: Partial<AuditDeps> = {}): AuditDeps => ({
    cluster,
    chain,
    namespaceLabels: { labels: (ns) => NAMESPACE_LABELS[ns] },
    metrics: createMetrics(new Registry(), { defaultMetrics: false }),
    log: silent,
    limits: LIMITS,
    deadlineMarginMs: 100,
    defaultTimeoutMs: 5000,
    gatewayNamespace: 'gateway-ns',
    now: () => new Date('2026-01-02T03:04:05Z'),
    ...over,
  });

  /** The audit of a cm-ok (team label) and a cm-bad ConfigMap in ns1 through the chain `chainYaml` lists. */
  async function auditConfigMaps(chainYaml: string): Promise<Record<string, unknown>> {
    const metrics = createMetrics(new Registry(), { defaultMetrics: false });
    const chains = await createChainForConfig(
      parseConfig(`server: { service: { namespace: gateway-ns, name: admission-gateway } }\nchain:\n${chainYaml}`),
      [...availablePlugins],
      { metrics, log: silent, onChain: () => undefined },
    );
    try {
      const cluster = new MemoryCluster({
        configmaps: [object('cm-ok', 'ns1', { team: 'a' }), object('cm-bad', 'ns1')],
      });
      const run = await runAudit(deps(cluster, { chain: chains.current() }));
      return Object.fromEntries(run.objects.map((o) => [o.ref.name, o.results]));
    } finally {
      await chains.close();
    }
  }

  it('lists what the CREATE rules select and reviews each object, reporting each step that applies to it', async function () {
    const run = await runAudit(deps(new MemoryCluster(ITEMS)));
    assert.deepEqual(
      run.targets.map((t) => [t.resource, t.steps]),
      [
        ['configmaps', ['team-label', 'broken']],
        ['secrets', ['no-secrets', 'with-side-effects']],
      ],
    );
    const byName = Object.fromEntries(run.objects.map((o) => [o.ref.name, o.results]));
    assert.deepEqual(byName, {
      'cm-ok': [{ step: 'team-label', result: 'pass' }],
      'cm-bad': [{ step: 'team-label', result: 'fail', message: 'missing required label: team' }],
      'cm-broken': [
        { step: 'team-label', result: 'pass' },
        { step: 'broken', result: 'error', message: 'error: provider down' },
      ],
      // Its namespace is outside the step's namespaceSelector: no step applies, so no result.
      'cm-quiet': [],
      s1: [
        { step: 'no-secrets', result: 'fail', message: 'secrets are not allowed here' },
        {
          step: 'with-side-effects',
          result: 'skip',
          message: 'not run: the step declares side effects, and the audit reviews as a dry run',
        },
      ],
    });
    assert.deepEqual(run.objects.find((o) => o.ref.name === 's1')!.ref, {
      apiVersion: 'v1',
      kind: 'Secret',
      name: 's1',
      namespace: 'ns2',
      uid: 'uid-s1',
    });
    // kube-system, the gateway's namespace and a namespace labelled admissiongateway.io/exclude.
    assert.equal(run.excluded, 3);
    assert.deepEqual([run.cutShort, run.problems], [[], []]);
  });

  it('gives skip, naming the exception and until when, for a step an exception lets the object off; fail once it expired', async function () {
    const rules = { maxLifetimeMs: 90 * 86_400_000, now: Date.parse('2026-01-01T00:00:00Z') };
    const exception = readException(
      {
        apiVersion: 'admissiongateway.io/v1alpha1',
        kind: 'AdmissionException',
        metadata: { name: 'cm-bad-later', namespace: 'ns1' },
        spec: {
          steps: ['team-label'],
          match: { names: ['cm-bad'] },
          expiresAt: '2026-02-01T00:00:00Z',
          reason: 'labelled next sprint',
          mode: 'Exempt',
        },
      },
      rules,
    );
    const applied: string[] = [];
    const source = (now: string): ExceptionSource => {
      const store = createExceptionStore({
        clock: () => Date.parse(now),
        onApplied: (step) => applied.push(step),
        onUsed: (e) => applied.push(e.ref),
      });
      store.set([exception]);
      return store;
    };

    const before = await runAudit(deps(new MemoryCluster(ITEMS), { exceptions: source('2026-01-15T00:00:00Z') }));
    const after = await runAudit(deps(new MemoryCluster(ITEMS), { exceptions: source('2026-02-02T00:00:00Z') }));

    const results = (run: typeof before) => run.objects.find((o) => o.ref.name === 'cm-bad')!.results;
    assert.deepEqual(results(before), [
      {
        step: 'team-label',
        result: 'skip',
        message: 'skipped-by-exception: AdmissionException ns1/cm-bad-later (until 2026-02-01T00:00:00Z)',
      },
    ]);
    assert.deepEqual(results(after), [{ step: 'team-label', result: 'fail', message: 'missing required label: team' }]);
    assert.deepEqual(
      before.objects.find((o) => o.ref.name === 'cm-ok')!.results,
      [{ step: 'team-label', result: 'pass' }],
      'the exception names cm-bad only',
    );
    assert.deepEqual(applied, [], "the audit's reviews are not counted as admission's use of the exception");
  });

  it('audits one step with --step, and refuses a name the chain has no validating step of', async function () {
    const run = await runAudit(deps(new MemoryCluster(ITEMS), { step: 'no-secrets' }));
    assert.deepEqual(
      run.objects.map((o) => [o.ref.name, o.results]),
      [['s1', [{ step: 'no-secrets', result: 'fail', message: 'secrets are not allowed here' }]]],
    );
    await assert.rejects(runAudit(deps(new MemoryCluster(ITEMS), { step: 'nope' })), {
      name: 'AuditSetupError',
      message:
        '--step: no validating step named "nope" (steps: team-label, no-secrets, broken, with-side-effects, status-only, updates-only)',
    });
  });

  it('names the validation of a policy step that refused, or the expression that failed, in its result', async function () {
    const results = await auditConfigMaps(`  - policy: team-label
    match: { rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [configmaps] }] }
    validations:
      - expression: "true"
      - expression: has(object.metadata.labels) && 'team' in object.metadata.labels
        message: every ConfigMap needs a team label
  - policy: broken-policy
    match: { rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [configmaps] }] }
    validations: [{ expression: object.metadata.missing == 'x' }]
`);
    const broken = {
      step: 'broken-policy',
      result: 'error',
      message: 'error: validations[0]: No such key: missing (at column 17)',
    };
    assert.deepEqual(results, {
      'cm-ok': [{ step: 'team-label', result: 'pass' }, broken],
      'cm-bad': [
        { step: 'team-label', result: 'fail', message: 'validations[1]: every ConfigMap needs a team label' },
        broken,
      ],
    });
  });

  it('runs a shadow entry’s native policy as a candidate: a Warn binding reports what Deny would refuse', async function () {
    const dir = await mkdtemp(join(tmpdir(), 'audit-native-'));
    await writeFile(
      join(dir, 'policies.yaml'),
      `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: { name: team-label }
spec:
  matchConstraints:
    resourceRules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [configmaps] }]
  validations:
    - expression: "'team' in object.metadata.?labels.orValue({})"
      message: every ConfigMap needs a team label
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: { name: team-label-warn }
spec: { policyName: team-label, validationActions: [Warn] }
`,
    );
    try {
      const step = 'candidate/team-label/team-label-warn';
      assert.deepEqual(
        await auditConfigMaps(
          `  - admissionPolicies: candidate\n    files: [${join(dir, 'policies.yaml')}]\n    shadow: true\n`,
        ),
        {
          'cm-ok': [{ step, result: 'pass' }],
          'cm-bad': [
            {
              step,
              result: 'fail',
              message:
                "validations[0]: ValidatingAdmissionPolicy 'team-label' with binding 'team-label-warn' denied request: every ConfigMap needs a team label",
            },
          ],
        },
      );
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it('stops a resource at maxObjectsPerResource and the run at maxObjects, saying so', async function () {
    const perResource = new MemoryCluster(ITEMS);
    const run = await runAudit(deps(perResource, { limits: { ...LIMITS, maxObjectsPerResource: 2 } }));
    assert.deepEqual(
      run.objects.map((o) => o.ref.name),
      ['cm-ok', 'cm-bad', 's1'],
    );
    assert.deepEqual(run.cutShort, ['configmaps: only the first 2 audited (audit.maxObjectsPerResource)']);
    assert.deepEqual(perResource.limits, [2, 2]);

    const total = await runAudit(deps(new MemoryCluster(ITEMS), { limits: { ...LIMITS, maxObjects: 2 } }));
    assert.deepEqual(
      total.objects.map((o) => o.ref.name),
      ['cm-ok', 'cm-bad'],
    );
    assert.deepEqual(total.cutShort, ['audit.maxObjects (2) reached at configmaps']);
  });

  it('stops when the gateway stops, and says where', async function () {
    const stopping = new AbortController();
    const cluster = new MemoryCluster(ITEMS);
    cluster.onList = (target) => {
      if (target.resource === 'secrets') stopping.abort();
    };
    const run = await runAudit(deps(cluster, { signal: stopping.signal }));
    assert.deepEqual(run.cutShort, ['the gateway is stopping while auditing secrets']);
    assert.equal(run.objects.length, 4);
  });

  it('writes a report per namespace with results, and deletes the stale ones (a namespace’s, the cluster’s) after a complete run', async function () {
    const cluster = new MemoryCluster(ITEMS, [{ namespace: 'ns1' }, { namespace: 'gone' }, { namespace: undefined }]);
    const outcome = await audit(deps(cluster), { dryRun: false });
    assert.deepEqual(
      cluster.applied.map((r) => [r.kind, r.metadata.namespace, r.summary]),
      [
        ['PolicyReport', 'ns1', { pass: 1, fail: 1, warn: 0, error: 0, skip: 0 }],
        ['PolicyReport', 'ns2', { pass: 1, fail: 1, warn: 0, error: 1, skip: 1 }],
      ],
    );
    assert.deepEqual(cluster.deleted, [{ namespace: 'gone' }, { namespace: undefined }]);
    assert.deepEqual(outcome.write, { written: ['ns1', 'ns2'], deleted: ['gone', 'cluster'], errors: [] });
    assert.deepEqual(outcome.lines, [
      'team-label (mode warn): 3 objects checked, 2 pass, 1 fail, 0 error: switching it to enforce would refuse 1 object',
      'no-secrets (mode enforce): 1 object checked, 0 pass, 1 fail, 0 error: enforced; 1 existing object would be refused if written again',
      'broken (mode warn): 1 object checked, 0 pass, 0 fail, 1 error: switching it to enforce would refuse none of them; 1 object could not be checked (error)',
      'with-side-effects (mode enforce): 1 object checked, 0 pass, 0 fail, 0 error, 1 skip: enforced; every existing object passes',
      'status-only (mode enforce): 0 objects checked, 0 pass, 0 fail, 0 error: enforced; every existing object passes',
      'updates-only (mode enforce): 0 objects checked, 0 pass, 0 fail, 0 error: enforced; every existing object passes',
    ]);
  });

  it('keeps the reports it did not rewrite when the run was cut short, and writes nothing on a dry run', async function () {
    const cut = new MemoryCluster(ITEMS, [{ namespace: 'gone' }]);
    await audit(deps(cut, { limits: { ...LIMITS, maxObjects: 2 } }), { dryRun: false });
    assert.deepEqual(
      cut.applied.map((r) => r.metadata.namespace),
      ['ns1'],
    );
    assert.deepEqual(cut.deleted, []);

    const dry = new MemoryCluster(ITEMS, [{ namespace: 'gone' }]);
    const outcome = await audit(deps(dry), { dryRun: true });
    assert.deepEqual([dry.applied, dry.deleted, outcome.write], [[], [], undefined]);
    assert.deepEqual(
      outcome.reports.namespaced.map((r) => r.metadata.namespace),
      ['ns1', 'ns2'],
    );
  });
});

const silent = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silent,
};
