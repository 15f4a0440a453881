/**
 * Exceptions in admission (README "Exceptions"): whole answers, the step reports, and the metric, for an
 * Exempt, a Warn and an expired exception, judged against a clock the test sets.
 */
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { Registry } from 'prom-client';
import { buildPluginSteps, createChain } from '../../../server/chain/chain.js';
import { createPluginRegistry } from '../../../server/chain/plugin-registry.js';
import { parseConfigText } from '../../../server/config/load.js';
import { createLogger } from '../../../server/base/log.js';
import { createReviewer, standaloneNamespaceLabels } from '../../../server/dispatch/reviewer.js';
import { ShadowRunner } from '../../../server/dispatch/shadow.js';
import { createExceptionLabels } from '../../../server/exceptions/exception-label.js';
import { createExceptionStore } from '../../../server/exceptions/exception-source.js';
import { readException } from '../../../server/exceptions/read-exception.js';
import { selectionOf } from '../../../server/http/routes.js';
import { createMetrics } from '../../../server/metrics/metrics.js';
import { allow, definePlugin, deny } from '../../../server/plugin-api/index.js';
import { podCreate, requestOf } from '../../fixtures/reviews/index.js';

const everything = { rules: [{ operations: ['*' as const], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] };
const requireOwner = definePlugin({
  name: 'require-owner',
  match: everything,
  setup: () => ({
    validate: ({ object }) => (object?.metadata?.labels?.owner ? allow() : deny('missing label "owner"')),
  }),
});

const requireTier = definePlugin({
  name: 'require-tier',
  match: everything,
  setup: () => ({
    validate: ({ object }) => (object?.metadata?.labels?.tier ? allow() : deny('missing label "tier"')),
  }),
});

const CREATED = Date.parse('2027-01-01T00:00:00Z');
const EXPIRES_AT = Date.parse('2027-03-01T00:00:00Z');

function exception(mode: 'Exempt' | 'Warn', name = 'web-no-owner', namespace = 'team-a', steps = ['require-owner']) {
  return readException(
    {
      apiVersion: 'admissiongateway.io/v1alpha1',
      kind: 'AdmissionException',
      metadata: { name, namespace },
      spec: {
        steps,
        match: { names: ['web'] },
        expiresAt: '2027-03-01T00:00:00Z',
        reason: 'owners are assigned next quarter',
        mode,
      },
    },
    { maxLifetimeMs: 90 * 86_400_000, now: CREATED },
  );
}

function setUp(exceptions: ReturnType<typeof exception>[], chainText = 'chain: [{ plugin: require-owner }]') {
  let now = CREATED;
  const used: string[] = [];
  const registry = new Registry();
  const metrics = createMetrics(registry, { defaultMetrics: false });
  const label = createExceptionLabels();
  const store = createExceptionStore({
    clock: () => now,
    onApplied: (step, e) => metrics.exceptionsApplied.inc({ step, exception: label(e), mode: e.mode }),
    onUsed: (e) => used.push(e.ref),
  });
  store.set(exceptions);
  const config = parseConfigText(chainText, 'gateway.yaml', '/');
  const plugins = createPluginRegistry([requireOwner, requireTier]);
  const chain = createChain(buildPluginSteps(config.chain, plugins, config.file));
  const reviewer = createReviewer({
    chain: () => chain,
    metrics,
    log: createLogger('silent'),
    namespaceLabels: standaloneNamespaceLabels,
    deadlineMarginMs: 250,
    defaultTimeoutMs: 10_000,
    exceptions: store,
  });
  const review = async () => {
    const result = await reviewer.review(requestOf(podCreate()), selectionOf('validate'));
    return { response: result.response, reports: result.reports.map(({ ms: _ms, ...rest }) => rest) };
  };
  return {
    review,
    setNow: (ms: number) => (now = ms),
    used,
    applied: async () => (await registry.getSingleMetricAsString('admission_gateway_exceptions_applied_total')).trim(),
  };
}

const UID = requestOf(podCreate()).uid;
const REFUSED = {
  response: {
    uid: UID,
    allowed: false,
    status: { code: 403, message: 'require-owner: missing label "owner"', reason: 'Forbidden' },
  },
  reports: [{ step: 'require-owner', outcome: 'denied' }],
};

describe('exceptions in a review', () => {
  it('without exceptions the step refuses the Pod', async () => {
    assert.deepEqual(await setUp([]).review(), REFUSED);
  });

  it('an Exempt exception skips the step, naming itself and its expiry in the report, and is counted', async () => {
    const t = setUp([exception('Exempt')]);
    assert.deepEqual(await t.review(), {
      response: { uid: UID, allowed: true },
      reports: [
        {
          step: 'require-owner',
          outcome: 'skipped',
          reason: 'skipped-by-exception: AdmissionException team-a/web-no-owner (until 2027-03-01T00:00:00Z)',
        },
      ],
    });
    assert.match(
      await t.applied(),
      /admission_gateway_exceptions_applied_total\{step="require-owner",exception="team-a\/web-no-owner",mode="Exempt"\} 1$/,
    );
  });

  it('a Warn exception runs the step and answers its denial as a warning naming the exception, counted', async () => {
    const t = setUp([exception('Warn')]);
    assert.deepEqual(await t.review(), {
      response: {
        uid: UID,
        allowed: true,
        warnings: [
          'require-owner: missing label "owner" (not enforced: AdmissionException team-a/web-no-owner, mode Warn, until 2027-03-01T00:00:00Z)',
        ],
      },
      reports: [{ step: 'require-owner', outcome: 'denied' }],
    });
    assert.match(
      await t.applied(),
      /admission_gateway_exceptions_applied_total\{step="require-owner",exception="team-a\/web-no-owner",mode="Warn"\} 1$/,
    );
  });

  it('at expiresAt the same reviewer refuses again, with a warning naming the expired exception', async () => {
    const t = setUp([exception('Exempt')]);
    t.setNow(EXPIRES_AT - 1);
    assert.equal((await t.review()).response.allowed, true);
    t.setNow(EXPIRES_AT);
    assert.deepEqual(await t.review(), {
      ...REFUSED,
      response: {
        ...REFUSED.response,
        warnings: [
          'require-owner: AdmissionException team-a/web-no-owner expired at 2027-03-01T00:00:00Z and no longer applies',
        ],
      },
    });
  });

  it('counts an exception once per review that used it, however many of its steps it let off or warned of', async () => {
    const both = ['require-owner', 'require-tier'];
    const chainText = 'chain: [{ plugin: require-owner }, { plugin: require-tier }]';
    const exempt = setUp([exception('Exempt', 'web-no-labels', 'team-a', both)], chainText);
    await exempt.review();
    await exempt.review();
    assert.deepEqual(exempt.used, [
      'AdmissionException team-a/web-no-labels',
      'AdmissionException team-a/web-no-labels',
    ]);
    assert.match(
      await exempt.applied(),
      /step="require-owner".* 2\n.*step="require-tier".* 2$/s,
      'the metric per step',
    );

    // Warn: used when it turned a denial into a warning, once for both.
    const warn = setUp([exception('Warn', 'web-no-labels', 'team-a', both)], chainText);
    assert.equal((await warn.review()).response.warnings?.length, 2);
    assert.deepEqual(warn.used, ['AdmissionException team-a/web-no-labels']);

    // Two exceptions, one step each: each is used once.
    const two = setUp(
      [
        exception('Exempt', 'web-no-owner', 'team-a', ['require-owner']),
        exception('Exempt', 'web-no-tier', 'team-a', ['require-tier']),
      ],
      chainText,
    );
    assert.equal((await two.review()).response.allowed, true);
    assert.deepEqual(two.used, ['AdmissionException team-a/web-no-owner', 'AdmissionException team-a/web-no-tier']);
  });

  it("an exception in another namespace changes nothing in the Pod's", async () => {
    assert.deepEqual(await setUp([exception('Exempt', 'web-no-owner', 'team-b')]).review(), REFUSED);
  });

  it('lets a shadow step off as it lets the live one, without counting it as admission’s use', async () => {
    const shadowed = async (exceptions: ReturnType<typeof exception>[]) => {
      const registry = new Registry();
      const metrics = createMetrics(registry, { defaultMetrics: false });
      const used: string[] = [];
      const store = createExceptionStore({
        clock: () => CREATED,
        onApplied: (step, e) => metrics.exceptionsApplied.inc({ step, exception: e.ref, mode: e.mode }),
        onUsed: (e) => used.push(e.ref),
      });
      store.set(exceptions);
      const config = parseConfigText('chain: [{ plugin: require-owner, shadow: true }]', 'gateway.yaml', '/');
      const chain = createChain(buildPluginSteps(config.chain, createPluginRegistry([requireOwner]), config.file));
      const log = createLogger('silent');
      const runs: Array<Parameters<ShadowRunner['run']>[0]> = [];
      const runner = new ShadowRunner({ metrics, log, now: () => performance.now() });
      const reviewer = createReviewer({
        chain: () => chain,
        metrics,
        log,
        namespaceLabels: standaloneNamespaceLabels,
        deadlineMarginMs: 250,
        defaultTimeoutMs: 10_000,
        exceptions: store,
        shadow: { run: (run) => (runs.push(run), runner.run(run)) },
      });
      const { response } = await reviewer.review(requestOf(podCreate()), selectionOf('validate'));
      assert.equal(runs.length, 1);
      const count = async (name: string) => (await registry.getSingleMetricAsString(name)).trim();
      for (let i = 0; i < 100 && !(await count('admission_gateway_shadow_calls_total')).includes('outcome='); i++)
        await new Promise((resolve) => setTimeout(resolve, 5));
      return {
        allowed: response.allowed,
        calls: await count('admission_gateway_shadow_calls_total'),
        disagreements: await count('admission_gateway_shadow_disagreements_total'),
        applied: await count('admission_gateway_exceptions_applied_total'),
        used,
      };
    };

    const without = await shadowed([]);
    const exempted = await shadowed([exception('Exempt')]);

    assert.equal(without.allowed, true);
    assert.match(without.calls, /admission_gateway_shadow_calls_total\{step="require-owner",outcome="denied"\} 1/);
    assert.match(without.disagreements, /\{step="require-owner",kind="would_deny"\} 1/);
    assert.equal(exempted.allowed, true);
    assert.match(exempted.calls, /admission_gateway_shadow_calls_total\{step="require-owner",outcome="skipped"\} 1/);
    assert.doesNotMatch(exempted.disagreements, /kind="would_deny"/);
    assert.doesNotMatch(exempted.applied, /step="require-owner"/, 'not counted as admission’s use');
    assert.deepEqual(exempted.used, [], 'nor in the exception’s status');
  });
});
