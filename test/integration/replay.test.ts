/**
 * Record, replay and shadow steps end to end in this process: a real gateway with `record:` on answers real
 * HTTPS reviews, `admission-gateway replay` (runCli) runs its recording through a candidate config and its
 * whole report and exit code are asserted; `--offline` answers a provider step from the recording after the
 * provider is gone; a shadow step runs beside the live chain, counted in metrics, the answer unchanged.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AdmissionReview, KubeObject } from '../../server/admission/types.js';
import { runCliCaptured } from '../helpers/cli.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { startHarness, type Harness } from '../helpers/gateway-harness.js';
import { numberedPodCreate } from '../fixtures/reviews/index.js';
import { eventually } from '../helpers/wait.js';

const podReview = numberedPodCreate;

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** A Secret create in team-a with `data`, as `kubectl apply` makes it (its data in the last-applied annotation). */
function secretReview(n: number, name: string, data: Record<string, string>): AdmissionReview {
  const applied = { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'team-a' }, data };
  const object: KubeObject = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace: 'team-a',
      annotations: { token: 'abc', [LAST_APPLIED]: `${JSON.stringify(applied)}\n` },
    },
    data,
  };
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
      kind: { group: '', version: 'v1', kind: 'Secret' },
      resource: { group: '', version: 'v1', resource: 'secrets' },
      name,
      namespace: 'team-a',
      operation: 'CREATE',
      userInfo: { username: 'alice@example.com' },
      object,
    },
  };
}

/** The recording's lines, parsed. */
async function recordedLines(file: string): Promise<Array<Record<string, unknown>>> {
  const text = await readFile(file, 'utf8');
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('record and replay', function () {
  this.timeout(30_000);
  let gateway: Harness | undefined;
  let provider: FakeProvider | undefined;
  afterEach(async () => {
    await gateway?.close();
    await provider?.close();
    gateway = provider = undefined;
  });

  /** A gateway recording every review answers one Pod review on `route` and stops: its folder and recording. */
  async function recordOne(route: '/mutate' | '/validate'): Promise<{ dir: string; file: string }> {
    gateway = await startHarness({ yaml: 'record: { path: recording.ndjson, sampleRate: 1 }' });
    await gateway.review(route, podReview(1, 'web', {}));
    await gateway.gateway.close();
    return { dir: gateway.dir, file: join(gateway.dir, 'recording.ndjson') };
  }

  it('records every sampled review redacted, and replay lists what a candidate would answer differently', async () => {
    gateway = await startHarness({
      yaml: `
record: { path: recording.ndjson, sampleRate: 1, redact: [/metadata/annotations/token] }
chain:
  - plugin: default-labels
    settings: { labels: { owner: platform } }
  - plugin: require-labels
    mode: warn
    settings: { labels: [team] }
`,
    });
    const labelled = podReview(1, 'web', { app: 'web', team: 'payments' });
    const bare = podReview(2, 'bare', { app: 'bare' });
    for (const review of [labelled, bare]) {
      await gateway.review('/mutate', review);
      await gateway.review('/validate', review);
    }
    await gateway.review('/validate', secretReview(3, 'creds', { password: 'aHVudGVyMg==' }));
    const file = join(gateway.dir, 'recording.ndjson');
    const dir = gateway.dir;
    await gateway.gateway.close();
    assert.equal(await gateway.metric('admission_gateway_recorded_reviews_total', { result: 'written' }), 5);

    const lines = await recordedLines(file);
    assert.deepEqual(
      lines.map((l) => [l.route, (l.request as { name: string }).name, (l.answer as { allowed: boolean }).allowed]),
      [
        ['mutate', 'web', true],
        ['validate', 'web', true],
        ['mutate', 'bare', true],
        ['validate', 'bare', true],
        ['validate', 'creds', true],
      ],
    );
    assert.deepEqual((lines[4]!.request as { object: unknown }).object, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'creds',
        namespace: 'team-a',
        annotations: {
          token: '<redacted>',
          [LAST_APPLIED]:
            '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds","namespace":"team-a"},"data":{"password":"<redacted>"}}\n',
        },
      },
      data: { password: '<redacted>' },
    });
    assert.deepEqual(lines[3]!.answer, {
      allowed: true,
      warnings: ['require-labels: missing required label: team (mode warn: not enforced)'],
    });

    await writeFile(
      join(dir, 'candidate.yaml'),
      `
chain:
  - plugin: default-labels
    settings: { labels: { owner: platform, tier: web } }
  - plugin: require-labels
    settings: { labels: [team] }
`,
    );
    const run = await runCliCaptured(['replay', 'recording.ndjson', '--config', 'candidate.yaml', '--exit-code'], {
      cwd: dir,
    });
    assert.equal(run.stderr, '');
    assert.equal(
      run.stdout,
      `replayed 5 reviews of recording.ndjson on candidate.yaml
1 newly denied, 0 newly allowed, 0 with the denial changed, 2 with the patch changed, 0 with the warnings changed, 2 unchanged

newly denied:
  line 4: CREATE Pod team-a/bare (validate)
    require-labels: missing required label: team

with the patch changed:
  line 1: CREATE Pod team-a/web (mutate)
    + add /metadata/labels/tier "web"
  line 3: CREATE Pod team-a/bare (mutate)
    + add /metadata/labels/tier "web"
`,
    );
    assert.equal(run.code, 3);
  });

  it('reports a review denied for more reasons as a changed denial with both messages, exit code 4', async () => {
    gateway = await startHarness({
      yaml: `
record: { path: recording.ndjson, sampleRate: 1 }
chain:
  - plugin: require-labels
    settings: { labels: [team] }
  - plugin: pod-security
    mode: warn
`,
    });
    await gateway.review('/validate', podReview(1, 'bare', { app: 'bare' }));
    const dir = gateway.dir;
    await gateway.gateway.close();
    await writeFile(
      join(dir, 'candidate.yaml'),
      'chain:\n  - plugin: require-labels\n    settings: { labels: [team] }\n  - plugin: pod-security\n',
    );

    const run = await runCliCaptured(['replay', 'recording.ndjson', '--config', 'candidate.yaml', '--exit-code'], {
      cwd: dir,
    });

    const nonRoot =
      'pod-security: spec.containers[1]: must run as non-root: set securityContext.runAsNonRoot: true or a non-zero runAsUser';
    assert.deepEqual(run, {
      code: 4,
      stderr: '',
      stdout: `replayed 1 review of recording.ndjson on candidate.yaml
0 newly denied, 0 newly allowed, 1 with the denial changed, 0 with the patch changed, 1 with the warnings changed, 0 unchanged

with the denial changed:
  line 1: CREATE Pod team-a/bare (validate)
    was: require-labels: missing required label: team
    now: require-labels: missing required label: team; ${nonRoot}

with the warnings changed:
  line 1: CREATE Pod team-a/bare (validate)
    - ${nonRoot} (mode warn: not enforced)
`,
    });
  });

  it('--offline answers each provider step as the recording says it answered, with the provider gone', async () => {
    provider = await startFakeProvider();
    const { caBundle } = provider;
    const [patchUrl, denyUrl] = [provider.url('/patch'), provider.url('/deny')];
    const entries = (checkerMode: string) => `
  - provider: labeller
    url: ${patchUrl}
    caBundle: ${caBundle}
    phases: [mutate]
  - provider: checker
    url: ${denyUrl}
    caBundle: ${caBundle}
    phases: [validate]
    mode: ${checkerMode}`;
    gateway = await startHarness({
      yaml: `
record: { path: recording.ndjson, sampleRate: 1 }
chain:${entries('warn')}
`,
    });
    const review = podReview(1, 'web', { app: 'web' });
    await gateway.review('/mutate', review);
    await gateway.review('/validate', review);
    const dir = gateway.dir;
    await gateway.gateway.close();
    const calls = provider.reviews().length;
    const url = provider.url('/allow');
    await provider.close();
    provider = undefined;
    await writeFile(
      join(dir, 'candidate.yaml'),
      `
chain:${entries('enforce')}
  - provider: newcomer
    url: ${url}
    phases: [validate]
`,
    );

    const run = await runCliCaptured(
      ['replay', 'recording.ndjson', '--config', 'candidate.yaml', '--offline', '--exit-code'],
      { cwd: dir },
    );
    assert.equal(run.stderr, '');
    assert.equal(calls, 2);
    assert.equal(
      run.stdout,
      `replayed 2 reviews of recording.ndjson on candidate.yaml (offline: providers answered from the recording)
1 newly denied, 0 newly allowed, 0 with the denial changed, 0 with the patch changed, 0 with the warnings changed, 1 unchanged

newly denied:
  line 2: CREATE Pod team-a/web (validate)
    checker: denied by fake

not recorded (offline: these provider steps allowed):
  newcomer: line 2
`,
    );
    assert.equal(run.code, 3);

    // The live config itself, offline: every review answered as it was, the provider's warn-mode warning included.
    const same = await runCliCaptured(
      ['replay', 'recording.ndjson', '--config', 'gateway.yaml', '--offline', '--exit-code'],
      { cwd: dir },
    );
    assert.deepEqual(same, {
      code: 0,
      stdout: `replayed 2 reviews of recording.ndjson on gateway.yaml (offline: providers answered from the recording)
0 newly denied, 0 newly allowed, 0 with the denial changed, 0 with the patch changed, 0 with the warnings changed, 2 unchanged
`,
      stderr: '',
    });

    // Audit mode: the warning the gateway gave about the denial in warn mode is gone, not repeated by the stand-in.
    await writeFile(join(dir, 'audit.yaml'), `chain:${entries('audit')}\n`);
    const audit = await runCliCaptured(['replay', 'recording.ndjson', '--config', 'audit.yaml', '--offline'], {
      cwd: dir,
    });
    assert.equal(
      audit.stdout,
      `replayed 2 reviews of recording.ndjson on audit.yaml (offline: providers answered from the recording)
0 newly denied, 0 newly allowed, 0 with the denial changed, 0 with the patch changed, 1 with the warnings changed, 1 unchanged

with the warnings changed:
  line 2: CREATE Pod team-a/web (validate)
    - checker: denied by fake (mode warn: not enforced)
`,
    );

    const json = await runCliCaptured(
      ['replay', 'recording.ndjson', '--config', 'candidate.yaml', '--offline', '-o', 'json'],
      { cwd: dir },
    );
    assert.equal(json.code, 0, 'without --exit-code');
    assert.deepEqual(JSON.parse(json.stdout), {
      recording: 'recording.ndjson',
      config: 'candidate.yaml',
      offline: true,
      reviews: 2,
      summary: {
        newly_denied: 1,
        newly_allowed: 0,
        denial_changed: 0,
        patch_changed: 0,
        warnings_changed: 0,
        unchanged: 1,
      },
      differences: [
        {
          line: 2,
          route: 'validate',
          uid: '00000000-0000-4000-8000-000000000001',
          request: 'CREATE Pod team-a/web',
          changes: [{ kind: 'newly_denied', code: 403, message: 'checker: denied by fake' }],
        },
      ],
      notRecorded: [{ step: 'newcomer', lines: [2] }],
    });
  });

  /**
   * A recording of Pod reviews (`names`, no team label) refused by require-labels, a candidate of the same chain,
   * and the exception `legacy-no-team` letting `legacy` off it until `expiresAt`: the folder they are in.
   */
  async function legacySetUp(names: readonly string[], expiresAt: Date): Promise<string> {
    const chain = 'chain:\n  - plugin: require-labels\n    settings: { labels: [team] }\n';
    gateway = await startHarness({ yaml: `record: { path: recording.ndjson, sampleRate: 1 }\n${chain}` });
    for (const [i, name] of names.entries()) await gateway.review('/validate', podReview(i + 1, name, { app: name }));
    const dir = gateway.dir;
    await gateway.gateway.close();
    await writeFile(join(dir, 'candidate.yaml'), chain);
    await writeFile(
      join(dir, 'legacy.yaml'),
      `apiVersion: admissiongateway.io/v1alpha1
kind: AdmissionException
metadata: { name: legacy-no-team, namespace: team-a }
spec:
  steps: [require-labels]
  match: { names: [legacy] }
  expiresAt: '${expiresAt.toISOString().replace(/\.\d+Z$/, 'Z')}'
  reason: the legacy app is retired
`,
    );
    return dir;
  }

  it('applies the candidate’s exceptions and --exceptions: a review an exception lets off is newly allowed', async () => {
    const dir = await legacySetUp(['legacy', 'web'], new Date(Date.now() + 30 * 86_400_000));

    const run = await runCliCaptured(
      ['replay', 'recording.ndjson', '--config', 'candidate.yaml', '--exceptions', 'legacy.yaml', '--exit-code'],
      { cwd: dir },
    );

    assert.deepEqual(run, {
      code: 4,
      stderr: '',
      stdout: `replayed 2 reviews of recording.ndjson on candidate.yaml
0 newly denied, 1 newly allowed, 0 with the denial changed, 0 with the patch changed, 0 with the warnings changed, 1 unchanged

newly allowed:
  line 1: CREATE Pod team-a/legacy (validate)
    was denied: require-labels: missing required label: team
`,
    });
  });

  it('judges each review’s exceptions at the time it was recorded: one expired since still lets it through', async () => {
    // The exception ran out yesterday; the review is recorded as of two days ago.
    const dir = await legacySetUp(['legacy'], new Date(Date.now() - 86_400_000));
    const file = join(dir, 'recording.ndjson');
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000).toISOString();
    const lines = (await recordedLines(file)).map((l) => JSON.stringify({ ...l, recordedAt: twoDaysAgo }));
    await writeFile(file, `${lines.join('\n')}\n`);

    const run = await runCliCaptured(
      ['replay', 'recording.ndjson', '--config', 'candidate.yaml', '--exceptions', 'legacy.yaml', '-o', 'json'],
      { cwd: dir },
    );

    const report = JSON.parse(run.stdout) as { differences: Array<{ changes: Array<{ kind: string }> }> };
    assert.deepEqual(
      report.differences.map((d) => d.changes.map((c) => c.kind)),
      [['newly_allowed']],
    );
  });

  it('refuses a recording that is not one, naming the line, with exit code 2 and nothing replayed', async () => {
    const { dir, file } = await recordOne('/validate');
    await writeFile(file, `${await readFile(file, 'utf8')}{"format":1,"route":"validate"}\n`);
    const run = await runCliCaptured(['replay', 'recording.ndjson', '--config', 'gateway.yaml', '-o', 'json'], {
      cwd: dir,
    });
    assert.deepEqual(run, {
      code: 2,
      stdout: '',
      stderr: `admission-gateway: replay: ${file}: line 2: request: request is missing: expected an AdmissionReview with a request object\n`,
    });
  });

  it('refuses a line nested too deep, naming it, instead of crashing on it', async () => {
    const { dir, file } = await recordOne('/mutate');
    const [first] = await recordedLines(file);
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const line = JSON.stringify({
      ...first,
      answer: { allowed: true, patch: [{ op: 'add', path: '/metadata/labels/x', value: '<deep>' }] },
    }).replace('"<deep>"', deep);
    await writeFile(file, `${JSON.stringify(first)}\n${line}\n`);
    const run = await runCliCaptured(['replay', 'recording.ndjson', '--config', 'gateway.yaml'], { cwd: dir });
    assert.deepEqual(run, {
      code: 2,
      stdout: '',
      stderr: `admission-gateway: replay: ${file}: line 2: nests arrays and objects more than 1004 levels deep\n`,
    });
  });

  it('prints what a recording says with its control characters escaped, never raw to the terminal', async () => {
    const { dir, file } = await recordOne('/validate');
    const [line] = await recordedLines(file);
    const request = line!.request as { name: string };
    // An ANSI escape (clear the screen), a C1 control introducing another, a line break to forge a report line.
    request.name = 'web\u001b[2J\u009b31m\n  line 9: forged';
    await writeFile(file, `${JSON.stringify(line)}\n`);
    await writeFile(join(dir, 'candidate.yaml'), 'chain: [{ plugin: require-labels, settings: { labels: [team] } }]\n');
    const run = await runCliCaptured(['replay', 'recording.ndjson', '--config', 'candidate.yaml'], { cwd: dir });
    assert.equal(
      run.stdout,
      `replayed 1 review of recording.ndjson on candidate.yaml
1 newly denied, 0 newly allowed, 0 with the denial changed, 0 with the patch changed, 0 with the warnings changed, 0 unchanged

newly denied:
  line 1: CREATE Pod team-a/web\\u001b[2J\\u009b31m\\u000a  line 9: forged (validate)
    require-labels: missing required label: team
`,
    );
    const json = await runCliCaptured(['replay', 'recording.ndjson', '--config', 'candidate.yaml', '-o', 'json'], {
      cwd: dir,
    });
    // JSON escapes the C0 controls itself; the C1 one is escaped alike.
    assert.ok(json.stdout.includes('"request": "CREATE Pod team-a/web\\u001b[2J\\u009b31m\\n  line 9: forged"'));
    assert.equal(
      (JSON.parse(json.stdout) as { differences: Array<{ request: string }> }).differences[0]!.request,
      `CREATE Pod team-a/${request.name}`,
    );
    // A line the reader refuses: its message on stderr, which describes the operation, is escaped too.
    await writeFile(file, '{"format":1,"route":"validate","request":{"uid":"u","operation":"\\u009b2J"}}\n');
    const refused = await runCliCaptured(['replay', 'recording.ndjson', '--config', 'candidate.yaml'], { cwd: dir });
    assert.deepEqual(refused, {
      code: 2,
      stdout: '',
      stderr: `admission-gateway: replay: ${file}: line 1: request: request.operation="\\u009b2J", expected CREATE, UPDATE, DELETE or CONNECT\n`,
    });
  });
});

describe('shadow steps', function () {
  this.timeout(30_000);
  let gateway: Harness | undefined;
  afterEach(async () => {
    await gateway?.close();
    gateway = undefined;
  });

  it('run beside the live chain on real reviews, counted in metrics and the trace, the answers unchanged', async () => {
    gateway = await startHarness({
      yaml: `
explain: { keep: all }
chain:
  - plugin: default-labels
    settings: { labels: { owner: platform } }
  - plugin: default-labels
    name: tier-labels
    shadow: true
    settings: { labels: { tier: web } }
  - plugin: require-labels
    settings: { labels: [team] }
  - plugin: require-labels
    name: strict-labels
    shadow: true
    settings: { labels: [team, cost-center] }
`,
    });
    const g = gateway;
    const uid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    const teamOnly = podReview(1, 'team-only', { team: 'payments' });
    const answers = [
      await g.review('/validate', teamOnly),
      await g.review('/validate', podReview(2, 'bare', {})),
      await g.review('/validate', podReview(3, 'complete', { team: 'payments', 'cost-center': 'cc-1' })),
      await g.review('/mutate', podReview(4, 'team-only', { team: 'payments' })),
    ];
    const ownerPatch = Buffer.from(
      JSON.stringify([{ op: 'add', path: '/metadata/labels/owner', value: 'platform' }]),
    ).toString('base64');
    assert.deepEqual(
      answers.map((a) => a.response),
      [
        { uid: uid(1), allowed: true },
        {
          uid: uid(2),
          allowed: false,
          status: { code: 403, reason: 'Forbidden', message: 'require-labels: missing required label: team' },
        },
        { uid: uid(3), allowed: true },
        { uid: uid(4), allowed: true, patchType: 'JSONPatch', patch: ownerPatch },
      ],
    );

    const calls = (step: string, outcome: string) =>
      g.metric('admission_gateway_shadow_calls_total', { step, outcome });
    await eventually('the shadow steps have run', async () => (await calls('tier-labels', 'patched')) === 1);
    await eventually('the validate shadow steps have run', async () => (await calls('strict-labels', 'allowed')) === 1);
    const disagreements = (step: string, kind: string) =>
      g.metric('admission_gateway_shadow_disagreements_total', { step, kind });
    assert.deepEqual(
      {
        strictDenied: await calls('strict-labels', 'denied'),
        strictAllowed: await calls('strict-labels', 'allowed'),
        wouldDeny: await disagreements('strict-labels', 'would_deny'),
        wouldAllow: await disagreements('strict-labels', 'would_allow'),
        patchDiffers: await disagreements('tier-labels', 'patch_differs'),
        liveRequests: await g.metric('admission_gateway_step_calls_total', {
          step: 'strict-labels',
          phase: 'validate',
          outcome: 'denied',
        }),
      },
      { strictDenied: 2, strictAllowed: 1, wouldDeny: 1, wouldAllow: 0, patchDiffers: 1, liveRequests: 0 },
    );

    // The trace's shadow list, without the durations (wall-clock).
    const shadowOf = async (n: number) =>
      ((await g.ops(`/explain/${uid(n)}`)).body as { shadow: Array<{ ms: number }> }).shadow.map(({ ms, ...rest }) => {
        assert.equal(typeof ms, 'number');
        return rest;
      });
    assert.deepEqual(await shadowOf(1), [
      {
        step: 'strict-labels',
        outcome: 'denied',
        disagreement: 'would_deny',
        message: 'strict-labels: missing required label: cost-center',
      },
    ]);
    assert.deepEqual(await shadowOf(2), [
      {
        step: 'strict-labels',
        outcome: 'denied',
        message: 'strict-labels: missing required labels: team, cost-center',
      },
    ]);
    assert.deepEqual(await shadowOf(3), [{ step: 'strict-labels', outcome: 'allowed' }]);
    assert.deepEqual(await shadowOf(4), [
      {
        step: 'tier-labels',
        outcome: 'patched',
        disagreement: 'patch_differs',
        patch: [{ op: 'add', path: '/metadata/labels/tier' }],
      },
    ]);
    const chain = (await g.ops('/chain')).body as {
      order: string;
      validate: Array<{ name: string; shadow?: boolean }>;
    };
    assert.equal(chain.order, 'mutate=[default-labels] validate=[require-labels] shadow=[tier-labels,strict-labels]');
    assert.deepEqual(
      chain.validate.map((s) => [s.name, s.shadow ?? false]),
      [
        ['require-labels', false],
        ['strict-labels', true],
      ],
    );
  });

  it('are left out of the rendered webhook configurations: the apiserver sends what the live steps ask for', async () => {
    const live = `
chain:
  - plugin: require-labels
    settings: { labels: [team] }
`;
    const withShadow = `${live}
  - plugin: require-labels
    name: configmap-labels
    shadow: true
    settings: { labels: [team] }
    match:
      rules: [{ operations: [CREATE, DELETE], apiGroups: [''], apiVersions: [v1], resources: [configmaps] }]
  - plugin: default-labels
    shadow: true
    settings: { labels: { tier: web } }
`;
    const render = async (text: string) => {
      const dir = await mkdtemp(join(tmpdir(), 'shadow-manifests-'));
      try {
        await writeFile(join(dir, 'gateway.yaml'), text);
        const run = await runCliCaptured(
          [
            'manifests',
            '--config',
            'gateway.yaml',
            '--url',
            'https://gateway.example:8443',
            '--no-ca-bundle',
            '-o',
            'json',
          ],
          { cwd: dir },
        );
        assert.equal(run.code, 0, run.stderr);
        return JSON.parse(run.stdout) as { items: Array<{ kind: string; webhooks: Array<{ rules: unknown }> }> };
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    };
    const expected = await render(live);
    assert.deepEqual(
      expected.items.map((i) => i.kind),
      ['ValidatingWebhookConfiguration'],
      'no mutating webhook: the only mutate step is a shadow one',
    );
    assert.deepEqual(await render(withShadow), expected);
  });
});
