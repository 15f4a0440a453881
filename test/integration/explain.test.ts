/**
 * Decision traces through the real gateway (README "Explaining a decision"): real HTTPS reviews, a real remote
 * provider, the trace read back from the ops server by the uid the answer's audit annotation names.
 */
import assert from 'node:assert/strict';
import type { AdmissionReview } from '../../server/admission/types.js';
import { definePlugin } from '../../server/plugin-api/index.js';
import { podCreate } from '../fixtures/reviews/index.js';
import { PROVIDER_PATCH, startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { startHarness, type Harness } from '../helpers/gateway-harness.js';

const UID = '0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21';
const TRACE_ID = '0df28fbd5f5f4c1c9f5d3b1d3a4c8e21';

/** A trace with its clock readings replaced: what varies from run to run, checked for shape only. */
function timeless(trace: unknown): unknown {
  return JSON.parse(JSON.stringify(trace), (key, value: unknown) => {
    if (key === 'ms' || key === 'deadlineLeftMs') {
      assert.equal(typeof value, 'number');
      return '<ms>';
    }
    if (key === 'startedAt') {
      assert.match(String(value), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      return '<time>';
    }
    return value;
  }) as unknown;
}

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** Writes into a Secret what `kubectl apply` and a secret-filling step would: data, stringData, last-applied. */
const fillsSecret = definePlugin({
  name: 'fills-secret',
  match: { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['secrets'] }] },
  setup: () => ({
    mutate({ object }) {
      const secret = object as { data?: Record<string, string>; stringData?: Record<string, string> };
      (secret.data ??= {}).password = 'aHVudGVyMg==';
      secret.stringData = { token: 's3cr3t-t0k3n' };
      (object.metadata ??= {}).annotations = {
        [LAST_APPLIED]: `${JSON.stringify({ apiVersion: 'v1', kind: 'Secret', stringData: { token: 's3cr3t-t0k3n' } })}\n`,
      };
    },
  }),
});

/** A Secret create in team-a, holding a password already. */
function secretCreate(uid: string): AdmissionReview {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: '', version: 'v1', kind: 'Secret' },
      resource: { group: '', version: 'v1', resource: 'secrets' },
      name: 'creds',
      namespace: 'team-a',
      operation: 'CREATE',
      userInfo: { username: 'alice@example.com' },
      object: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds' }, data: { user: 'YWxpY2U=' } },
    },
  };
}

/** The fixture's Pod CREATE, without the `team` label and with a `latest` image, in namespace `team-a`. */
function unlabelledPod(uid = UID) {
  const review = podCreate();
  review.request!.uid = uid;
  const object = review.request!.object!;
  object.metadata!.labels = { app: 'web' };
  (object.spec as { containers: Array<{ image: string }> }).containers[0]!.image = 'nginx:latest';
  return review;
}

describe('decision traces (GET /explain/<uid>)', function () {
  this.timeout(20_000);
  let fake: FakeProvider;
  let h: Harness;

  before(async () => {
    fake = await startFakeProvider();
    h = await startHarness({
      yaml: `
explain: { auditAnnotation: true, keep: all }
chain:
  - plugin: default-labels
    name: prod-labels
    settings: { labels: { tier: prod } }
    match:
      rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: ['*'], resources: [pods] }]
      namespaceSelector: { matchLabels: { env: prod } }
  - provider: labeller
    url: ${fake.url('/patch')}
    caBundle: ${fake.caBundle}
    phases: [mutate]
  - plugin: require-labels
    settings: { labels: [team] }
  - plugin: image-policy
    mode: warn
    settings: { forbidLatest: true }
  - plugin: require-labels
    name: deletes-only
    settings: { labels: [owner] }
    match:
      rules: [{ operations: [DELETE], apiGroups: [''], apiVersions: ['*'], resources: [pods] }]
`,
    });
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  it('links the answer to its trace by the decision-trace audit annotation, and says which step decided and why', async () => {
    const mutated = await h.review('/mutate', unlabelledPod());
    const validated = await h.review('/validate', unlabelledPod());
    const annotation = `uid=${UID} traceId=${TRACE_ID}`;
    assert.deepEqual(mutated.response.auditAnnotations, { 'decision-trace': annotation });
    assert.equal(validated.response.allowed, false);
    assert.deepEqual(validated.response.auditAnnotations, { 'decision-trace': annotation });

    // The uid is both reviews' (the test sends the same one): the later, the validate call, is kept under it.
    const uid = /uid=(\S+)/.exec(validated.response.auditAnnotations['decision-trace'])![1]!;
    const answer = await h.ops(`/explain/${uid}`);
    assert.equal(answer.status, 200);
    assert.deepEqual(timeless(answer.body), {
      uid: UID,
      traceId: TRACE_ID,
      route: 'validate',
      phase: 'validate',
      startedAt: '<time>',
      ms: '<ms>',
      request: {
        operation: 'CREATE',
        kind: 'v1/Pod',
        resource: 'v1/pods',
        namespace: 'team-a',
        name: 'web',
        dryRun: false,
        user: 'alice@example.com',
      },
      allowed: false,
      code: 403,
      message: 'require-labels: missing required label: team',
      decidedBy: ['require-labels'],
      warnings: [
        'image-policy: spec.containers[0] image "nginx:latest": tag latest is not allowed (mode warn: not enforced)',
      ],
      auditAnnotations: { 'decision-trace': annotation },
      steps: [
        {
          step: 'require-labels',
          phase: 'validate',
          source: 'plugin',
          mode: 'enforce',
          failurePolicy: 'Fail',
          outcome: 'denied',
          ms: '<ms>',
          rule: 'rule 1 (CREATE, UPDATE on core,apps,batch/* pods, deployments, statefulsets, daemonsets, replicasets, jobs, cronjobs, services)',
          message: 'missing required label: team',
          decided: true,
          deadlineLeftMs: '<ms>',
        },
        {
          step: 'image-policy',
          phase: 'validate',
          source: 'plugin',
          mode: 'warn',
          failurePolicy: 'Fail',
          outcome: 'denied',
          ms: '<ms>',
          rule: 'rule 1 (CREATE, UPDATE on core,apps,batch/* pods, deployments, replicasets, statefulsets, daemonsets, jobs, cronjobs, replicationcontrollers, podtemplates, pods/ephemeralcontainers)',
          message: 'spec.containers[0] image "nginx:latest": tag latest is not allowed',
          warnings: [
            'image-policy: spec.containers[0] image "nginx:latest": tag latest is not allowed (mode warn: not enforced)',
          ],
          deadlineLeftMs: '<ms>',
        },
        {
          step: 'deletes-only',
          phase: 'validate',
          source: 'plugin',
          mode: 'enforce',
          failurePolicy: 'Fail',
          outcome: 'skipped',
          ms: '<ms>',
          reason: 'rules do not match: rule 1 wants operations [DELETE], not CREATE',
        },
      ],
      redacted: true,
    });
  });

  it("shows each mutating step's patch operations, a skip's selector, and the provider's breaker", async () => {
    const uid = 'b7b1c0de-0000-4000-8000-000000000001';
    await h.review('/mutate', unlabelledPod(uid));
    const trace = timeless((await h.ops(`/explain/${uid}`)).body) as { steps: unknown[]; patch: unknown };
    assert.deepEqual(trace.steps, [
      {
        step: 'prod-labels',
        phase: 'mutate',
        source: 'plugin',
        mode: 'enforce',
        failurePolicy: 'Fail',
        outcome: 'skipped',
        ms: '<ms>',
        reason:
          "namespaceSelector does not match: the namespace's labels {kubernetes.io/metadata.name=team-a} fail env=prod",
      },
      {
        step: 'labeller',
        phase: 'mutate',
        source: 'provider',
        mode: 'enforce',
        failurePolicy: 'Fail',
        outcome: 'patched',
        ms: '<ms>',
        rule: 'rule 1 (* on */* *)',
        breaker: 'closed',
        deadlineLeftMs: '<ms>',
        // Values are object content: left out unless explain.includeObjects.
        patch: PROVIDER_PATCH.map(({ op, path }) => ({ op, path })),
      },
    ]);
    assert.deepEqual(
      trace.patch,
      PROVIDER_PATCH.map(({ op, path }) => ({ op, path })),
    );
  });

  it('answers the trace in words with ?format=text', async () => {
    await h.review('/validate', unlabelledPod());
    const answer = await h.ops(`/explain/${UID}?format=text`);
    assert.equal(answer.headers['content-type'], 'text/plain; charset=utf-8');
    const lines = answer.text.split('\n').map((line) => line.replace(/\d+(\.\d+)? ms/g, 'N ms'));
    assert.deepEqual(lines.slice(2, 5), [
      '  DENIED (403) by require-labels: require-labels: missing required label: team',
      '  1. require-labels [plugin] DENIED N ms, N ms of deadline left (DECIDED)',
      '       matched: rule 1 (CREATE, UPDATE on core,apps,batch/* pods, deployments, statefulsets, daemonsets, replicasets, jobs, cronjobs, services)',
    ]);
    assert.ok(lines.includes('  3. deletes-only [plugin] skipped'), answer.text);
    assert.ok(lines.includes('       why: rules do not match: rule 1 wants operations [DELETE], not CREATE'));

    // What the review names is escaped: a terminal reading the trace shows an escape sequence, never obeys one.
    const escaping = unlabelledPod('00000000-0000-4000-8000-0000000000e5');
    escaping.request!.name = 'web\u001b[2J\u009b31m\nforged';
    await h.review('/mutate', escaping);
    const text = (await h.ops(`/explain/${escaping.request!.uid}?format=text`)).text;
    assert.equal(
      text.split('\n')[0],
      'mutate: CREATE v1/Pod team-a/web\\u001b[2J\\u009b31m\\u000aforged by alice@example.com',
    );
  });

  it('finds every review of a trace id, and lists recent refusals newest first', async () => {
    const answer = await h.ops(`/explain/${'ab'.repeat(16)}`);
    assert.equal(answer.status, 404);
    const byTrace = (await h.ops(`/explain/${TRACE_ID}`)).body as {
      traceId: string;
      reviews: Array<{ uid: string; route: string }>;
    };
    // The trace id is also the uid's digits: asking by it finds every review of that uid still kept, oldest first
    // (the tests above sent it to /mutate, /validate, then /validate again).
    assert.deepEqual(
      { traceId: byTrace.traceId, reviews: byTrace.reviews.map(({ uid, route }) => ({ uid, route })) },
      {
        traceId: TRACE_ID,
        reviews: [
          { uid: UID, route: 'mutate' },
          { uid: UID, route: 'validate' },
          { uid: UID, route: 'validate' },
        ],
      },
    );
    const recent = (await h.ops('/explain?denied=true&limit=1')).body as { reviews: Array<Record<string, unknown>> };
    assert.deepEqual(
      recent.reviews.map(({ uid, route, allowed, kind, namespace, name }) => ({
        uid,
        route,
        allowed,
        kind,
        namespace,
        name,
      })),
      [{ uid: UID, route: 'validate', allowed: false, kind: 'v1/Pod', namespace: 'team-a', name: 'web' }],
    );
  });

  it('keeps only the last explain.bufferSize reviews, and says so for an older one', async () => {
    const small = await startHarness({ yaml: 'explain: { bufferSize: 2, keep: all }\nchain: []\n' });
    try {
      const uids = ['1', '2', '3'].map((n) => `00000000-0000-4000-8000-00000000000${n}`);
      for (const uid of uids) await small.review('/validate', unlabelledPod(uid));
      const statuses = await Promise.all(uids.map(async (uid) => (await small.ops(`/explain/${uid}`)).status));
      assert.deepEqual(statuses, [404, 200, 200]);
      assert.deepEqual((await small.ops(`/explain/${uids[0]}`)).body, {
        error: `no trace of "${uids[0]}": not a recent review's uid or trace id (the last 2 are kept, fewer when their traces would hold more than explain.maxBytes)`,
      });
    } finally {
      await small.close();
    }
  });

  it('keeps at most 50 patch operations of a review, counting the rest, and their values only with includeObjects', async () => {
    const labels = Object.fromEntries(Array.from({ length: 120 }, (_, i) => [`l${i}`, `v${i}`]));
    const settings = JSON.stringify({ labels });
    const yaml = (includeObjects: boolean) =>
      `explain: { includeObjects: ${includeObjects}, keep: all }\nchain:\n  - plugin: default-labels\n    settings: ${settings}\n`;
    for (const includeObjects of [false, true]) {
      const many = await startHarness({ yaml: yaml(includeObjects) });
      try {
        await many.review('/mutate', unlabelledPod());
        const trace = (await many.ops(`/explain/${UID}`)).body as {
          patch: Array<{ op: string; path: string; value?: unknown }>;
          patchOpsOmitted: number;
          steps: Array<{ patch: unknown[]; patchOpsOmitted?: number }>;
          redacted: boolean;
        };
        assert.deepEqual(
          {
            first: trace.patch[0],
            kept: trace.patch.length,
            omitted: trace.patchOpsOmitted,
            stepKept: trace.steps[0]!.patch.length,
            redacted: trace.redacted,
          },
          {
            first: { op: 'add', path: '/metadata/labels/l0', ...(includeObjects ? { value: 'v0' } : {}) },
            kept: 50,
            omitted: 70,
            stepKept: 50,
            redacted: !includeObjects,
          },
        );
      } finally {
        await many.close();
      }
    }
  });

  it("keeps each step's own operations, values as it left them, when a later step adds to what an earlier one made", async () => {
    const two = await startHarness({
      yaml: `explain: { includeObjects: true, keep: all }
chain:
  - plugin: default-labels
    settings: { labels: { admissiongateway.io/admitted: "true" } }
  - plugin: default-labels
    name: team-label
    settings: { labels: { team: platform } }
`,
    });
    try {
      const review = unlabelledPod();
      delete review.request!.object!.metadata!.labels;
      await two.review('/mutate', review);
      const trace = (await two.ops(`/explain/${UID}`)).body as {
        patch: unknown;
        steps: Array<{ step: string; patch?: unknown }>;
      };
      assert.deepEqual(
        { patch: trace.patch, steps: trace.steps.map(({ step, patch }) => ({ step, patch })) },
        {
          patch: [
            {
              op: 'add',
              path: '/metadata/labels',
              value: { 'admissiongateway.io/admitted': 'true', team: 'platform' },
            },
          ],
          steps: [
            {
              step: 'default-labels',
              patch: [{ op: 'add', path: '/metadata/labels', value: { 'admissiongateway.io/admitted': 'true' } }],
            },
            { step: 'team-label', patch: [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }] },
          ],
        },
      );
    } finally {
      await two.close();
    }
  });

  it('keeps and annotates only notable reviews by default: refused, warned or annotated', async () => {
    const notable = await startHarness({
      yaml: `explain: { auditAnnotation: true }
chain:
  - plugin: default-labels
    settings: { labels: { tier: web } }
  - plugin: require-labels
    settings: { labels: [team] }
  - plugin: image-policy
    mode: warn
    settings: { forbidLatest: true }
`,
    });
    try {
      const labelled = podCreate();
      const uids = ['a1', 'a2', 'a3'].map((n) => `00000000-0000-4000-8000-0000000000${n}`);
      labelled.request!.uid = uids[0]!;
      const plain = await notable.review('/mutate', labelled); // allowed and patched: nothing to ask about
      const refused = await notable.review('/validate', unlabelledPod(uids[1])); // denied
      const warned = podCreate();
      warned.request!.uid = uids[2]!;
      (warned.request!.object!.spec as { containers: Array<{ image: string }> }).containers[0]!.image = 'nginx:latest';
      const warnedAnswer = await notable.review('/validate', warned); // allowed with a warning
      assert.deepEqual(
        [plain, refused, warnedAnswer].map((a) => a.response.auditAnnotations?.['decision-trace'] !== undefined),
        [false, true, true],
      );
      const statuses = await Promise.all(uids.map(async (uid) => (await notable.ops(`/explain/${uid}`)).status));
      assert.deepEqual(statuses, [404, 200, 200]);
      assert.deepEqual((await notable.ops(`/explain/${uids[0]}`)).body, {
        error: `no trace of "${uids[0]}": not a recent review's uid or trace id (the last 1000 refused, warned or annotated reviews are kept, fewer when their traces would hold more than explain.maxBytes)`,
      });
    } finally {
      await notable.close();
    }
  });

  it('keeps every string of a trace clipped, saying so, whatever the reviews carry: the buffer stays small', async () => {
    // With `keep: notable` (the default) a warn-mode validator makes an ordinary Pod notable; `all` needs none.
    const hostile = await startHarness({ yaml: 'explain: { keep: all }\nchain: []\n' });
    try {
      const [long, longer] = [1_000_000, 5_000_000];
      const uids = Array.from({ length: 12 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
      for (const uid of uids) {
        const review = unlabelledPod(uid);
        review.request!.name = `${uid}${'n'.repeat(longer)}`;
        review.request!.kind = { group: '', version: 'v1', kind: `Pod${'k'.repeat(long)}` };
        review.request!.subResource = 's'.repeat(long);
        await hostile.review('/validate', review);
      }
      const list = await hostile.ops('/explain?limit=1000');
      const traces = await Promise.all(uids.map((uid) => hostile.ops(`/explain/${uid}`)));
      const served = list.text.length + traces.reduce((sum, t) => sum + t.text.length, 0);
      const last = traces.at(-1)!.body as {
        request: { name: string; kind: string; resource: string };
        clipped: boolean;
      };
      const cut = (text: string) => `${text.slice(0, 256)}… (${text.length - 256} more characters)`;
      assert.deepEqual(
        {
          statuses: traces.map((t) => t.status),
          name: last.request.name,
          kind: last.request.kind,
          resource: last.request.resource,
          clipped: last.clipped,
          servedUnder64KiB: served < 64 * 1024,
        },
        {
          statuses: uids.map(() => 200),
          name: cut(`${uids.at(-1)!}${'n'.repeat(longer)}`),
          kind: `v1/${cut(`Pod${'k'.repeat(long)}`)}`,
          resource: `v1/pods/${cut('s'.repeat(long))}`,
          clipped: true,
          servedUnder64KiB: true,
        },
      );
      const { bytes, maxBytes } = list.body as { bytes: number; maxBytes: number };
      assert.ok(bytes > 0 && bytes <= 64 * 1024, `the buffer counts ${bytes} bytes`);
      assert.equal(maxBytes, 8 * 1024 * 1024);
    } finally {
      await hostile.close();
    }
  });

  it("redacts with explain.includeObjects what a step writes into a Secret's data, as a recording does", async () => {
    const secrets = await startHarness({
      yaml: 'explain: { includeObjects: true, keep: all }\nchain: [{ plugin: fills-secret }]\n',
      plugins: [fillsSecret],
    });
    try {
      const uid = '00000000-0000-4000-8000-00000000005e';
      const answer = await secrets.review('/mutate', secretCreate(uid));
      assert.equal(answer.response.patchType, 'JSONPatch');
      const trace = (await secrets.ops(`/explain/${uid}`)).body as { patch: unknown; steps: Array<{ patch: unknown }> };
      const redacted = [
        { op: 'add', path: '/data/password', value: '<redacted>' },
        { op: 'add', path: '/stringData', value: { token: '<redacted>' } },
        {
          op: 'add',
          path: '/metadata/annotations',
          value: { [LAST_APPLIED]: '{"apiVersion":"v1","kind":"Secret","stringData":{"token":"<redacted>"}}\n' },
        },
      ];
      assert.deepEqual({ patch: trace.patch, step: trace.steps[0]!.patch }, { patch: redacted, step: redacted });
      const text = (await secrets.ops(`/explain/${uid}?format=text`)).text;
      assert.deepEqual([text.includes('aHVudGVyMg=='), text.includes('s3cr3t')], [false, false]);
    } finally {
      await secrets.close();
    }
  });

  it('makes no traces and no annotation with explain.bufferSize 0', async () => {
    const none = await startHarness({ yaml: 'explain: { bufferSize: 0, auditAnnotation: true }\nchain: []\n' });
    try {
      const answer = await none.review('/validate', unlabelledPod());
      assert.deepEqual(answer.response, { uid: UID, allowed: true });
      assert.deepEqual((await none.ops(`/explain/${UID}`)).body, {
        error: 'no traces are kept: explain.bufferSize is 0',
      });
    } finally {
      await none.close();
    }
  });
});
