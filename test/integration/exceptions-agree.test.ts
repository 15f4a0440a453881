/**
 * One answer everywhere (README "Exceptions"): for every (exception, request, time) case of a generated table —
 * Exempt or Warn, in the request's namespace or another, naming the object or another, in force or expired —
 * admission (a gateway with the exceptions in `exceptions.files`), `review --exceptions`, `replay --exceptions`
 * of a recording made without them, and `audit` give the answer the rules say, so they agree with each other.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { availablePlugins } from '../../plugins/index.js';
import type { AdmissionReview, KubeObject } from '../../server/admission/types.js';
import { runAudit } from '../../server/audit/run-audit.js';
import { createLogger } from '../../server/base/log.js';
import { loadExceptions } from '../../server/exceptions/watched-exceptions.js';
import { createMetrics } from '../../server/metrics/metrics.js';
import { createChainForConfig } from '../../server/providers/configured-chain.js';
import { runCliCaptured } from '../helpers/cli.js';
import { parseConfig } from '../helpers/config.js';
import { reviewOf, startHarness, type Harness } from '../helpers/gateway-harness.js';
import { MemoryCluster } from '../helpers/memory-audit-cluster.js';
import { numberedPodCreate } from '../fixtures/reviews/index.js';

const CHAIN = 'chain:\n  - plugin: require-labels\n    settings: { labels: [team] }\n';
const REFUSAL = 'require-labels: missing required label: team';
const DAY = 86_400_000;
const silentLogger = createLogger('silent');

interface Case {
  readonly i: number;
  readonly mode: 'Exempt' | 'Warn';
  readonly ownNamespace: boolean;
  readonly namesIt: boolean;
  readonly inForce: boolean;
}

/** Every combination, each case its own Pod `web-<i>` in team-a (no team label) and its own exception `e-<i>`. */
const CASES: readonly Case[] = (['Exempt', 'Warn'] as const)
  .flatMap((mode) =>
    [true, false].flatMap((ownNamespace) =>
      [true, false].flatMap((namesIt) => [true, false].map((inForce) => ({ mode, ownNamespace, namesIt, inForce }))),
    ),
  )
  .map((c, i) => ({ ...c, i }));

const rfc3339 = (ms: number): string => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');

/** What the rules say the answer is: the README's, written out, not the gateway's code. */
function expected(c: Case, expiresAt: string) {
  const ref = `AdmissionException team-a/e-${c.i}`;
  const applies = c.ownNamespace && c.namesIt;
  if (applies && c.inForce && c.mode === 'Exempt') return { allowed: true, warnings: [], audit: 'skip' };
  if (applies && c.inForce)
    return {
      allowed: true,
      warnings: [`${REFUSAL} (not enforced: ${ref}, mode Warn, until ${expiresAt})`],
      audit: 'fail',
    };
  if (applies)
    return {
      allowed: false,
      warnings: [`require-labels: ${ref} expired at ${expiresAt} and no longer applies`],
      audit: 'fail',
    };
  return { allowed: false, warnings: [], audit: 'fail' };
}

describe('exceptions: admission, review, replay and audit agree on a generated table of cases', function () {
  this.timeout(120_000);
  let dir: string;
  let exceptionsFile: string;
  let harness: Harness | undefined;
  const expiresAt = new Map<number, string>();

  before(async function () {
    dir = await mkdtemp(join(tmpdir(), 'exceptions-agree-'));
    exceptionsFile = join(dir, 'exceptions.yaml');
    const now = Date.now();
    const documents = CASES.map((c) => {
      const at = rfc3339(c.inForce ? now + DAY : now - 3_600_000);
      expiresAt.set(c.i, at);
      return `apiVersion: admissiongateway.io/v1alpha1
kind: AdmissionException
metadata: { name: e-${c.i}, namespace: ${c.ownNamespace ? 'team-a' : 'team-b'} }
spec:
  steps: [require-labels]
  match: { names: [${c.namesIt ? `web-${c.i}` : `db-${c.i}`}] }
  expiresAt: '${at}'
  reason: case ${c.i}
  mode: ${c.mode}
`;
    });
    await writeFile(exceptionsFile, documents.join('---\n'));
    await writeFile(join(dir, 'base.yaml'), CHAIN);
  });

  afterEach(async function () {
    await harness?.close();
    harness = undefined;
  });

  after(async function () {
    await rm(dir, { recursive: true, force: true });
  });

  const pod = (c: Case): AdmissionReview => numberedPodCreate(c.i + 1, `web-${c.i}`, { app: 'web' });

  it('admission: a gateway with the exceptions in exceptions.files', async function () {
    harness = await startHarness({ yaml: `exceptions: { files: [${exceptionsFile}] }\n${CHAIN}` });
    for (const c of CASES) {
      const { response } = reviewOf(await harness.post('/validate', pod(c)));
      const want = expected(c, expiresAt.get(c.i)!);
      assert.deepEqual(
        { allowed: response.allowed, warnings: response.warnings ?? [] },
        { allowed: want.allowed, warnings: want.warnings },
        JSON.stringify(c),
      );
    }
  });

  it('review --exceptions: the same answers', async function () {
    for (const c of CASES) {
      const file = join(dir, `pod-${c.i}.json`);
      await writeFile(file, JSON.stringify(pod(c).request!.object));
      const run = await runCliCaptured(
        ['review', file, '--config', 'base.yaml', '--exceptions', exceptionsFile, '--route', 'validate'],
        { cwd: dir },
      );
      const { response } = (JSON.parse(run.stdout) as { review: AdmissionReview }).review;
      const want = expected(c, expiresAt.get(c.i)!);
      assert.deepEqual(
        { allowed: response!.allowed, warnings: response!.warnings ?? [] },
        { allowed: want.allowed, warnings: want.warnings },
        JSON.stringify(c),
      );
    }
  });

  it('replay --exceptions of a recording made without them: newly allowed exactly where an exception lets it through', async function () {
    harness = await startHarness({
      yaml: `record: { path: ${join(dir, 'recording.ndjson')}, sampleRate: 1 }\n${CHAIN}`,
    });
    for (const c of CASES) await harness.review('/validate', pod(c));
    await harness.gateway.close();

    const run = await runCliCaptured(
      ['replay', 'recording.ndjson', '--config', 'base.yaml', '--exceptions', exceptionsFile, '-o', 'json'],
      { cwd: dir },
    );

    const report = JSON.parse(run.stdout) as {
      differences: Array<{ line: number; changes: Array<{ kind: string; added?: string[] }> }>;
    };
    const byLine = new Map(report.differences.map((d) => [d.line, d.changes]));
    for (const c of CASES) {
      const want = expected(c, expiresAt.get(c.i)!);
      const changes = byLine.get(c.i + 1) ?? [];
      const kinds = changes.map((change) => change.kind);
      assert.deepEqual(
        kinds,
        [
          ...(want.allowed ? ['newly_allowed'] : []),
          ...(want.warnings.length > 0 && !want.allowed ? ['warnings_changed'] : []),
        ],
        JSON.stringify(c),
      );
    }
  });

  it('audit: skip where an Exempt exception in force lets the object off, fail elsewhere', async function () {
    const metrics = createMetrics(new Registry(), { defaultMetrics: false });
    const config = parseConfig(`server: { service: { namespace: gateway-ns, name: admission-gateway } }\n${CHAIN}`);
    const chains = await createChainForConfig(config, [...availablePlugins], {
      metrics,
      log: silentLogger,
      onChain: () => undefined,
    });
    try {
      const pods: KubeObject[] = CASES.map((c) => ({
        ...pod(c).request!.object!,
        metadata: { name: `web-${c.i}`, namespace: 'team-a', uid: `uid-${c.i}`, labels: { app: 'web' } },
      }));
      const run = await runAudit({
        cluster: new MemoryCluster({ pods }),
        chain: chains.current(),
        namespaceLabels: { labels: (ns) => ({ 'kubernetes.io/metadata.name': ns }) },
        metrics,
        log: silentLogger,
        limits: config.audit,
        deadlineMarginMs: 100,
        defaultTimeoutMs: 5000,
        gatewayNamespace: 'gateway-ns',
        exceptions: await loadExceptions({ ...config.exceptions, files: [exceptionsFile] }),
      });
      const results = new Map(run.objects.map((o) => [o.ref.name, o.results.map((r) => r.result)]));
      for (const c of CASES) {
        assert.deepEqual(results.get(`web-${c.i}`), [expected(c, expiresAt.get(c.i)!).audit], JSON.stringify(c));
      }
    } finally {
      await chains.close();
    }
  });
});
