/**
 * `admission-gateway review` through runCli in this process: AdmissionReviews and bare objects (JSON or YAML,
 * file or standard input), the printed answers, --route, --exit-code, the logs on stderr and the refusals.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { runCliCaptured } from '../helpers/cli.js';
import { podCreate, requestOf } from '../fixtures/reviews/index.js';
import type { KubeObject } from '../../server/plugin-api/types.js';

const UID = '0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const CHAIN = `
chain:
  - plugin: default-labels
    settings: { labels: { owner: platform } }
  - plugin: require-labels
    settings: { labels: [owner, cost-center] }
`;
const OWNER_PATCH = [{ op: 'add', path: '/metadata/labels/owner', value: 'platform' }];
const mutateReview = {
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  response: {
    uid: UID,
    allowed: true,
    patchType: 'JSONPatch',
    patch: Buffer.from(JSON.stringify(OWNER_PATCH)).toString('base64'),
  },
};
const expectedOutput = {
  mutate: { review: mutateReview, patch: OWNER_PATCH, steps: [{ step: 'default-labels', outcome: 'patched' }] },
  validate: {
    review: {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: {
        uid: UID,
        allowed: false,
        status: { code: 403, reason: 'Forbidden', message: 'require-labels: missing required label: cost-center' },
      },
    },
    patch: null,
    steps: [{ step: 'require-labels', outcome: 'denied' }],
  },
  allowed: false,
};

type Phase = { review: { response: { uid: string } }; steps?: Array<Record<string, unknown>> };

/** The printed output without the step durations (wall-clock), and with the uid as `uid` when given. */
function printed(stdout: string, uid?: string): unknown {
  const output = JSON.parse(stdout) as Record<string, Phase | boolean>;
  for (const phase of Object.values(output)) {
    if (typeof phase !== 'object') continue;
    phase.steps = phase.steps?.map(({ ms, ...rest }) => {
      assert.equal(typeof ms, 'number');
      return rest;
    });
    if (uid !== undefined) {
      assert.match(phase.review.response.uid, UUID);
      phase.review.response.uid = uid;
    }
  }
  return output;
}

/** The Pod of the recorded review, as it would be written in a manifest. */
const podManifest = (): KubeObject => {
  const object = structuredClone(requestOf(podCreate()).object!);
  delete object.metadata!.creationTimestamp;
  return object;
};

describe('admission-gateway review', function () {
  this.timeout(30000);
  let dir: string;
  let config: string;

  beforeEach(async function () {
    dir = await mkdtemp(join(tmpdir(), 'gateway-review-'));
    config = join(dir, 'gateway.yaml');
    await writeFile(config, CHAIN);
  });

  afterEach(async function () {
    await rm(dir, { recursive: true, force: true });
  });

  async function file(name: string, text: string): Promise<string> {
    await writeFile(join(dir, name), text);
    return join(dir, name);
  }

  it('prints its usage with --help, exit codes included', async function () {
    const run = await runCliCaptured(['review', '--help']);

    assert.equal(run.code, 0);
    assert.ok(
      run.stdout.startsWith('usage: admission-gateway review <file|-> [--config FILE] [--route ROUTE] [--exit-code]\n'),
      run.stdout,
    );
    assert.match(run.stdout, /^ {2}--exit-code {9}exit 3 when the request is refused/m);
    assert.ok(run.stdout.endsWith('3 refused (with --exit-code).\n'), run.stdout);
  });

  describe('given an AdmissionReview', function () {
    it('runs it through mutate, then validate on the mutated object, and prints responses and the decoded patch', async function () {
      const run = await runCliCaptured([
        'review',
        await file('pod.json', JSON.stringify(podCreate())),
        '--config',
        config,
      ]);

      assert.equal(run.stderr, '');
      assert.equal(run.code, 0);
      assert.deepEqual(printed(run.stdout), expectedOutput);
    });

    it('reads it from standard input with `-`', async function () {
      const run = await runCliCaptured(['review', '-', '--config', config], { stdin: JSON.stringify(podCreate()) });

      assert.equal(run.code, 0);
      assert.deepEqual(printed(run.stdout), expectedOutput);
    });

    it('runs one route with --route, e.g. the mutate phase alone', async function () {
      const run = await runCliCaptured(['review', '-', '--route', 'mutate', '--config', config], {
        stdin: JSON.stringify(podCreate()),
      });

      assert.equal(run.code, 0);
      const output = JSON.parse(run.stdout) as { review: unknown; patch: unknown };
      assert.deepEqual(output.review, mutateReview);
      assert.deepEqual(output.patch, OWNER_PATCH);
    });

    it('refuses one that is invalid with exit code 2 and says what is wrong', async function () {
      const review = podCreate();
      delete (requestOf(review) as { uid?: string }).uid;

      const run = await runCliCaptured(['review', '-', '--config', config], { stdin: JSON.stringify(review) });

      assert.equal(run.code, 2);
      assert.equal(run.stdout, '');
      assert.equal(run.stderr, 'admission-gateway: invalid AdmissionReview: request.uid is missing or empty\n');
    });
  });

  describe('given a bare Kubernetes object', function () {
    it('reviews a YAML manifest as the CREATE the apiserver would send for it, and says so on stderr', async function () {
      const run = await runCliCaptured([
        'review',
        await file('pod.yaml', stringify(podManifest())),
        '--config',
        config,
      ]);

      assert.equal(run.stderr, 'admission-gateway review: reviewing the CREATE of v1 Pod team-a/web\n');
      assert.equal(run.code, 0);
      assert.deepEqual(printed(run.stdout, UID), expectedOutput);
    });

    it('reads JSON from standard input with `-`', async function () {
      const run = await runCliCaptured(['review', '-', '--config', config], { stdin: JSON.stringify(podManifest()) });

      assert.equal(run.code, 0);
      assert.deepEqual(printed(run.stdout, UID), expectedOutput);
    });

    it('places an object without a namespace in "default", and infers group, version and resource', async function () {
      const deployment = stringify({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', labels: { 'cost-center': 'c1' } },
        spec: { template: { spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } } },
      });

      const run = await runCliCaptured(['review', '-', '--config', config], { stdin: deployment });

      assert.equal(run.stderr, 'admission-gateway review: reviewing the CREATE of apps/v1 Deployment default/web\n');
      assert.equal(run.code, 0);
      assert.equal((JSON.parse(run.stdout) as { allowed: boolean }).allowed, true);
    });

    const refusals: Array<[string, string, string]> = [
      [
        'several YAML documents',
        `${stringify(podManifest())}---\n${stringify(podManifest())}`,
        'admission-gateway: review: "-" holds 2 YAML documents; review one object or AdmissionReview at a time\n',
      ],
      [
        'a map that is no Kubernetes object',
        'replicas: 3\n',
        'admission-gateway: review: "-" is neither an AdmissionReview nor a Kubernetes object: expected apiVersion as "group/version" or "version" (e.g. apps/v1, v1), got null\n',
      ],
      [
        'text that is neither JSON nor YAML',
        'kind: Pod\n  apiVersion: v1\n',
        'admission-gateway: review: "-" is neither JSON nor YAML: Nested mappings are not allowed in compact mappings\n',
      ],
      [
        'an empty input',
        '',
        'admission-gateway: review: "-" is empty or not a map: expected an AdmissionReview or a Kubernetes object\n',
      ],
    ];
    for (const [what, stdin, message] of refusals) {
      it(`refuses ${what} with exit code 2`, async function () {
        const run = await runCliCaptured(['review', '-', '--config', config], { stdin });

        assert.equal(run.stdout, '');
        assert.equal(run.stderr, message);
        assert.equal(run.code, 2);
      });
    }
  });

  it('takes -o json without --explain: JSON is what it prints', async function () {
    const run = await runCliCaptured(['review', '-', '-o', 'json', '--config', config], {
      stdin: JSON.stringify(podCreate()),
    });

    assert.equal(run.stderr, '');
    assert.equal(run.code, 0);
    assert.deepEqual(printed(run.stdout), expectedOutput);
  });

  for (const mode of ['warn', 'audit']) {
    it(`names the mode of a step that denied without enforcing (${mode}), beside the answer that allowed`, async function () {
      await writeFile(config, `${CHAIN}    mode: ${mode}\n`);

      const run = await runCliCaptured(['review', '-', '--route', 'validate', '--config', config], {
        stdin: JSON.stringify(podCreate()),
      });

      assert.equal(run.code, 0);
      const output = JSON.parse(run.stdout) as {
        review: { response: { allowed: boolean } };
        steps: Array<{ ms?: number }>;
      };
      assert.deepEqual(
        { allowed: output.review.response.allowed, steps: output.steps.map(({ ms: _ms, ...rest }) => rest) },
        { allowed: true, steps: [{ step: 'require-labels', outcome: 'denied', mode }] },
      );
    });
  }

  describe('--exit-code, to gate CI', function () {
    it('exits 3 when a phase denies, and prints the same answers', async function () {
      const run = await runCliCaptured(['review', '-', '--exit-code', '--config', config], {
        stdin: JSON.stringify(podCreate()),
      });

      assert.equal(run.code, 3);
      assert.deepEqual(printed(run.stdout), expectedOutput);
    });

    it('exits 0 when the request is allowed', async function () {
      const pod = podManifest();
      pod.metadata!.labels = { ...pod.metadata!.labels, 'cost-center': 'c1' };

      const run = await runCliCaptured(['review', '-', '--exit-code', '--config', config], {
        stdin: JSON.stringify(pod),
      });

      assert.equal(run.code, 0);
      assert.equal((JSON.parse(run.stdout) as { allowed: boolean }).allowed, true);
    });

    it('judges the route it ran with --route: the mutate phase alone allows this Pod', async function () {
      const run = await runCliCaptured(['review', '-', '--exit-code', '--route', 'mutate', '--config', config], {
        stdin: JSON.stringify(podCreate()),
      });

      assert.equal(run.code, 0);
    });
  });

  it('logs on stderr in the format serve logs in, and keeps stdout to the result', async function () {
    await writeFile(
      config,
      `${CHAIN}  - provider: unreachable\n    url: https://127.0.0.1:1/\n    phases: [validate]\n    failurePolicy: Ignore\n`,
    );

    const run = await runCliCaptured(['review', '-', '--config', config], { stdin: JSON.stringify(podCreate()) });

    assert.equal(run.code, 0);
    const lines = run.stderr
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const failedOpen = lines.find((line) => line.msg === 'step failed, failing open');
    assert.ok(failedOpen, run.stderr);
    assert.deepEqual(
      { level: failedOpen.level, service: failedOpen.service, step: failedOpen.step, reason: failedOpen.reason },
      { level: 'warn', service: 'admission-gateway', step: 'unreachable', reason: 'connection' },
    );
    assert.match(String(failedOpen.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal((JSON.parse(run.stdout) as { allowed: boolean }).allowed, false, 'stdout is the result alone');
  });

  describe('--exceptions FILE', function () {
    it('skips the step an exception names and says which exception and until when, in the trace', async function () {
      const expiresAt = new Date(Date.now() + 30 * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
      const exceptions = await file(
        'exceptions.yaml',
        stringify({
          apiVersion: 'admissiongateway.io/v1alpha1',
          kind: 'AdmissionException',
          metadata: { name: 'web-no-cost-center', namespace: 'team-a' },
          spec: { steps: ['require-labels'], match: { names: ['web'] }, expiresAt, reason: 'billing moves next month' },
        }),
      );
      const pod = await file('pod.json', JSON.stringify(podCreate()));

      const refused = await runCliCaptured(['review', pod, '--config', config, '--exit-code']);
      const run = await runCliCaptured(['review', pod, '--config', config, '--exit-code', '--exceptions', exceptions]);
      const explained = await runCliCaptured([
        'review',
        pod,
        '--config',
        config,
        '--explain',
        '--exceptions',
        exceptions,
      ]);

      assert.deepEqual([refused.code, run.code], [3, 0]);
      assert.deepEqual((printed(run.stdout) as { validate: Phase }).validate.steps, [
        {
          step: 'require-labels',
          outcome: 'skipped',
          reason: `skipped-by-exception: AdmissionException team-a/web-no-cost-center (until ${expiresAt})`,
        },
      ]);
      assert.ok(
        explained.stdout.includes(
          `  1. require-labels [plugin] skipped\n       why: skipped-by-exception: AdmissionException team-a/web-no-cost-center (until ${expiresAt})\n`,
        ),
        explained.stdout,
      );
    });

    it('refuses to start on an invalid exception, naming it and the field', async function () {
      const exceptions = await file(
        'exceptions.yaml',
        stringify({
          apiVersion: 'admissiongateway.io/v1alpha1',
          kind: 'AdmissionException',
          metadata: { name: 'everything', namespace: 'team-a' },
          spec: { steps: ['*'], expiresAt: '2027-01-01T00:00:00Z', reason: 'all' },
        }),
      );
      const run = await runCliCaptured([
        'review',
        await file('pod.json', JSON.stringify(podCreate())),
        '--config',
        config,
        '--exceptions',
        exceptions,
      ]);
      assert.equal(run.code, 2);
      assert.match(
        run.stderr,
        /exceptions\.yaml \(exception 1\): AdmissionException team-a\/everything: spec\.steps\[0\]: "\*" is for a ClusterAdmissionException only/,
      );
    });
  });

  describe('--explain', function () {
    it("prints each phase's decision trace in words: the deciding step, its rule and message, and the patch", async function () {
      const run = await runCliCaptured([
        'review',
        await file('pod.json', JSON.stringify(podCreate())),
        '--config',
        config,
        '--explain',
      ]);

      assert.equal(run.code, 0);
      const text = run.stdout.replace(/\d+(\.\d+)? ms/g, 'N ms').replace(/at \S+Z/g, 'at TIME');
      assert.equal(
        text,
        `mutate: CREATE v1/Pod team-a/web by alice@example.com
  uid ${UID}  trace ${UID.replace(/-/g, '')}  at TIME  N ms
  ALLOWED
  1. default-labels [plugin] patched N ms, N ms of deadline left
       matched: rule 1 (CREATE, UPDATE on */* *)
       patch: add /metadata/labels/owner "platform"
  patch (1 operation):
    add /metadata/labels/owner "platform"

validate: CREATE v1/Pod team-a/web by alice@example.com
  uid ${UID}  trace ${UID.replace(/-/g, '')}  at TIME  N ms
  DENIED (403) by require-labels: require-labels: missing required label: cost-center
  1. require-labels [plugin] DENIED N ms, N ms of deadline left (DECIDED)
       matched: rule 1 (CREATE, UPDATE on core,apps,batch/* pods, deployments, statefulsets, daemonsets, replicasets, jobs, cronjobs, services)
       message: missing required label: cost-center
`,
      );
    });

    it('credits each step with its own operations, values as it left them: one creates the labels, the next adds to them', async function () {
      await writeFile(
        config,
        `
chain:
  - plugin: default-labels
    settings: { labels: { admissiongateway.io/admitted: "true" } }
  - plugin: default-labels
    name: team-label
    settings: { labels: { team: platform } }
`,
      );
      const review = podCreate();
      delete review.request!.object!.metadata!.labels;
      const run = await runCliCaptured([
        'review',
        await file('pod.json', JSON.stringify(review)),
        '--config',
        config,
        '--route',
        'mutate',
        '--explain',
      ]);

      assert.equal(run.code, 0);
      const text = run.stdout.replace(/\d+(\.\d+)? ms/g, 'N ms').replace(/at \S+Z/g, 'at TIME');
      assert.equal(
        text,
        `mutate: CREATE v1/Pod team-a/web by alice@example.com
  uid ${UID}  trace ${UID.replace(/-/g, '')}  at TIME  N ms
  ALLOWED
  1. default-labels [plugin] patched N ms, N ms of deadline left
       matched: rule 1 (CREATE, UPDATE on */* *)
       patch: add /metadata/labels {"admissiongateway.io/admitted":"true"}
  2. team-label [plugin] patched N ms, N ms of deadline left
       matched: rule 1 (CREATE, UPDATE on */* *)
       patch: add /metadata/labels/team "platform"
  patch (1 operation):
    add /metadata/labels {"admissiongateway.io/admitted":"true","team":"platform"}
`,
      );
    });

    it("prints the traces as JSON with -o json, patch values included (the object is the caller's own)", async function () {
      const run = await runCliCaptured([
        'review',
        await file('pod.json', JSON.stringify(podCreate())),
        '--config',
        config,
        '--explain',
        '-o',
        'json',
      ]);

      assert.equal(run.code, 0);
      const output = JSON.parse(run.stdout) as {
        allowed: boolean;
        reviews: Array<{ route: string; decidedBy?: string[]; steps: Array<{ step: string; patch?: unknown }> }>;
      };
      assert.deepEqual(
        {
          allowed: output.allowed,
          reviews: output.reviews.map((r) => ({
            route: r.route,
            decidedBy: r.decidedBy,
            steps: r.steps.map((s) => [s.step, s.patch]),
          })),
        },
        {
          allowed: false,
          reviews: [
            { route: 'mutate', decidedBy: undefined, steps: [['default-labels', OWNER_PATCH]] },
            { route: 'validate', decidedBy: ['require-labels'], steps: [['require-labels', undefined]] },
          ],
        },
      );
    });

    it('refuses text without --explain (the answers are JSON), and a format it does not know', async function () {
      const text = await runCliCaptured(['review', '-', '-o', 'text', '--config', config]);
      const unknown = await runCliCaptured(['review', '-', '--explain', '-o', 'yaml', '--config', config]);

      assert.deepEqual(
        [text.code, text.stderr, unknown.code, unknown.stderr],
        [
          2,
          'admission-gateway: review: --output text goes with --explain (without it, review prints JSON)\n',
          2,
          'admission-gateway: --output: expected text or json, got "yaml"\n',
        ],
      );
    });
  });

  describe('refuses a bad command line with exit code 2', function () {
    const cases: Array<[string, string[], string]> = [
      ['no input', ['review'], 'admission-gateway: review: expected a file name or "-" for standard input\n'],
      [
        'two inputs',
        ['review', 'a.yaml', 'b.yaml'],
        'admission-gateway: review: unexpected argument "b.yaml" (one file at a time)\n',
      ],
      [
        'an unknown route',
        ['review', '-', '--route', 'mutat'],
        'admission-gateway: --route: expected all or one of mutate, mutate/fail, mutate/ignore, validate, validate/fail, validate/ignore, got "mutat"\n',
      ],
      [
        'a file that does not exist',
        ['review', 'DIR/nope.yaml'],
        'admission-gateway: review: cannot read "DIR/nope.yaml": ENOENT: no such file or directory, open \'DIR/nope.yaml\'\n',
      ],
    ];
    for (const [what, args, message] of cases) {
      it(`given ${what}`, async function () {
        const run = await runCliCaptured([...args.map((a) => a.replace('DIR', dir)), '--config', config]);

        assert.equal(run.stdout, '');
        assert.equal(run.stderr, message.replaceAll('DIR', dir));
        assert.equal(run.code, 2);
      });
    }
  });
});
