/**
 * The large-review lane (server.largeReviews): a review over the threshold runs in a worker thread, and what the
 * user sees of it — the whole answer and its patch, the metrics, the decision trace, the recording — is what the
 * same review gets in the main lane (the same gateway configuration with `workers: 0`). A plugin that throws or
 * overruns its time fails as it does in the main lane; a full lane sheds with 429 and Retry-After; the event loop
 * answers probes while a worker holds a large review.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { stringify } from 'yaml';
import { namespaceForPolicies } from '../../../server/admission/namespace-object.js';
import type { NamespaceLabelSource } from '../../../server/dispatch/reviewer.js';
import { readException } from '../../../server/exceptions/read-exception.js';
import type { Harness, HttpAnswer } from '../../helpers/gateway-harness.js';
import {
  PODS,
  laneTook,
  settledCounts,
  explained,
  gateway,
  heldInWorker,
  largePod,
  largePodSized,
  logged,
  recorded,
  spanShape,
  removeTempDirs,
  tempDir,
  timeless,
  type Extra,
  type Lanes,
} from '../../helpers/large-reviews.js';
import { startOtlpReceiver } from '../../helpers/otlp-receiver.js';
import { podCreate } from '../../fixtures/reviews/index.js';

/** The niceness of each of this process's threads, by thread id (Linux: /proc/self/task/<tid>/stat). */
function threadNiceness(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // a thread that ended meanwhile
    }
    // The fields after the command's closing parenthesis start at the third (state); niceness is the 19th.
    out.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
  }
  return out;
}

/** A `spins-until` entry for the Pods labelled `size: <size>`. */
const spinsOn = (size: string, file: string, maxMs: number) => ({
  plugin: 'spins-until',
  match: { ...PODS, objectSelector: { matchLabels: { size } } },
  settings: { file, maxMs },
});

/** A chain with a mutating plugin, warn-mode validators, a CEL policy and a shadow step. */
const SHIPPED_LIKE = [
  {
    plugin: 'default-labels',
    failurePolicy: 'Ignore',
    settings: { labels: { 'admissiongateway.io/admitted': 'true' } },
  },
  { plugin: 'resource-defaults', failurePolicy: 'Ignore', settings: { requests: { cpu: '100m', memory: '128Mi' } } },
  { plugin: 'image-policy', mode: 'warn', settings: { forbidLatest: true } },
  { plugin: 'require-labels', mode: 'warn', settings: { labels: ['team'] } },
  {
    policy: 'few-containers',
    mode: 'warn',
    match: PODS,
    validations: [{ expression: 'size(object.spec.containers) <= 100', message: 'too many containers' }],
  },
  { plugin: 'require-labels', name: 'shadow-labels', shadow: true, settings: { labels: ['cost-center'] } },
];

after(removeTempDirs);
describe('the large-review lane', function () {
  // A worker loads the sources through tsx when it starts.
  this.timeout(60_000);
  const open: Harness[] = [];
  const start = async (chain: object[], lanes: Lanes, extra?: Extra) => {
    const h = await gateway(chain, lanes, extra);
    open.push(h);
    return h;
  };
  afterEach(async () => {
    await Promise.all(open.splice(0).map((h) => h.close()));
  });

  it('answers, patches, counts, traces and records a large review as the main lane does', async () => {
    const [lane, main] = await Promise.all([start(SHIPPED_LIKE, { workers: 1 }), start(SHIPPED_LIKE, { workers: 0 })]);
    const uid = '6f1c2d3e-4a5b-4c6d-8e7f-901234567890';
    const [inLane, inMain] = await Promise.all([
      lane.review('/mutate', largePod(uid)),
      main.review('/mutate', largePod(uid)),
    ]);
    assert.ok(inLane.response.patch, 'the review was patched');
    assert.deepEqual(inLane, inMain);
    const [validatedLane, validatedMain] = await Promise.all([
      lane.review('/validate', largePod(uid)),
      main.review('/validate', largePod(uid)),
    ]);
    assert.ok(validatedLane.response.warnings?.some((w) => w.includes('too many containers')));
    assert.deepEqual(validatedLane, validatedMain);

    assert.deepEqual(
      timeless(await explained(lane, uid, 1)),
      timeless(await explained(main, uid, 1)),
      'the decision traces, shadow entries included',
    );
    assert.deepEqual(timeless(await recorded(lane, 2)), timeless(await recorded(main, 2)), 'the recordings');
    assert.deepEqual(
      [await laneTook(lane, 'mutate'), await laneTook(lane, 'validate'), await laneTook(main, 'mutate')],
      [1, 1, 0],
      'the lane took both reviews; the gateway without workers, none',
    );
    const [laneCounts, mainCounts] = await settledCounts(lane, main);
    assert.ok(laneCounts['admission_gateway_requests_total{"phase":"mutate","operation":"CREATE","allowed":"true"}']);
    assert.deepEqual(laneCounts, mainCounts);
    assert.ok(
      lane.logs.some((line) => line.msg === 'review' && line.uid === uid),
      'the worker logs through the gateway',
    );
  });

  it('fails a plugin that throws, and one that overruns its time, as the main lane does', async () => {
    const chain = [
      { plugin: 'throws', failurePolicy: 'Ignore', settings: { message: 'broken settings' } },
      { plugin: 'busy-loops', timeoutSeconds: 1, failurePolicy: 'Ignore', settings: { ms: 1100 } },
      { plugin: 'throws', name: 'throws-fail', failurePolicy: 'Fail' },
    ];
    const [lane, main] = await Promise.all([start(chain, { workers: 1 }), start(chain, { workers: 0 })]);
    const uid = '7f1c2d3e-4a5b-4c6d-8e7f-901234567890';
    // How long the overrunning plugin ran is the one thing that differs.
    const ranFor = (answer: object): unknown =>
      JSON.parse(JSON.stringify(answer).replace(/ran for \d+ ms/g, 'ran for N ms')) as unknown;
    const answers = [];
    for (const route of ['/mutate', '/validate']) {
      const [inLane, inMain] = await Promise.all([
        lane.review(route, largePod(uid)),
        main.review(route, largePod(uid)),
      ]);
      assert.deepEqual(ranFor(inLane), ranFor(inMain));
      answers.push(inLane);
    }
    const mutated = answers[0]!;
    assert.deepEqual(
      mutated.response.warnings?.map((w) => w.split(':').slice(0, 2).join(':')),
      ['throws: failed open (error)', 'busy-loops: failed open (timeout)'],
    );
    assert.equal(mutated.response.allowed, false);
    assert.equal(mutated.response.status?.code, 500);
    assert.match(mutated.response.status?.message ?? '', /throws-fail/);
    // Both reviews of each are written to its recording (and counted) by then.
    assert.equal((await recorded(lane, 2)).length, (await recorded(main, 2)).length);
    assert.deepEqual([await laneTook(lane, 'mutate'), await laneTook(lane, 'validate')], [1, 1]);
    assert.deepEqual(...(await settledCounts(lane, main)));
  });

  it('applies the exceptions in force and reads the namespace from the cluster as the main lane does', async () => {
    const expiresAt = new Date(Date.now() + 7 * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
    const exceptionOf = (kind: string, name: string, spec: object, namespace?: string) => ({
      apiVersion: 'admissiongateway.io/v1alpha1',
      kind,
      metadata: { name, ...(namespace ? { namespace } : {}) },
      spec: { expiresAt, reason: 'the lane applies them as the main lane', ...spec },
    });
    const dir = await tempDir();
    const file = join(dir, 'exceptions.yaml');
    await writeFile(
      file,
      stringify(exceptionOf('AdmissionException', 'no-owner', { steps: ['require-labels'] }, 'team-a')),
    );
    // The cluster's, as the exception watcher sets them while the gateway runs.
    const watched = [
      exceptionOf('ClusterAdmissionException', 'latest-tolerated', {
        steps: ['image-policy'],
        mode: 'Warn',
        match: { namespaceSelector: { matchLabels: { tier: 'restricted' } } },
      }),
    ].map((object) => readException(object, { maxLifetimeMs: 90 * 86_400_000, now: Date.now() }));
    // A namespace as cluster mode's cache holds it: an annotation only its object has.
    const namespaces: NamespaceLabelSource = {
      labels: (name) => ({ 'kubernetes.io/metadata.name': name, tier: 'restricted' }),
      object: (name) =>
        Promise.resolve(
          namespaceForPolicies({
            metadata: {
              name,
              labels: { 'kubernetes.io/metadata.name': name, tier: 'restricted' },
              annotations: { 'acme.io/owner': 'payments' },
            },
          }),
        ),
    };
    const chain = [
      { plugin: 'require-labels', settings: { labels: ['owner'] } },
      { plugin: 'image-policy', settings: { forbidLatest: true } },
      {
        policy: 'namespace-owner',
        mode: 'warn',
        match: PODS,
        validations: [
          {
            expression: 'false',
            messageExpression: "'owner ' + namespaceObject.metadata.annotations['acme.io/owner']",
          },
        ],
      },
    ];
    const used = { lane: [] as string[], main: [] as string[] };
    const extra = (which: 'lane' | 'main'): Extra => ({
      yaml: { exceptions: { files: [file] } },
      harness: { namespaceLabels: namespaces, onExceptionUsed: (e) => used[which].push(e.ref) },
    });
    const [lane, main] = await Promise.all([
      start(chain, { workers: 1 }, extra('lane')),
      start(chain, { workers: 0 }, extra('main')),
    ]);
    const both = async (uid: string) => {
      const [inLane, inMain] = await Promise.all([
        lane.review('/validate', largePod(uid)),
        main.review('/validate', largePod(uid)),
      ]);
      assert.deepEqual(inLane, inMain);
      assert.deepEqual(
        timeless(await explained(lane, uid, 0)),
        timeless(await explained(main, uid, 0)),
        'the decision traces',
      );
      return inLane;
    };
    // Before the cluster's exception is watched: the file's lets require-labels off, image-policy refuses.
    const before = await both('1a1c2d3e-4a5b-4c6d-8e7f-901234567890');
    assert.equal(before.response.allowed, false);
    assert.match(before.response.status?.message ?? '', /image-policy/);
    assert.ok(
      before.response.warnings?.includes('namespace-owner: owner payments (mode warn: not enforced)'),
      'namespaceObject was read',
    );
    // Then the watcher sets it (the lane's worker is started by now): image-policy's refusal becomes a warning.
    lane.gateway.exceptions.setWatched(watched);
    main.gateway.exceptions.setWatched(watched);
    const after = await both('2a1c2d3e-4a5b-4c6d-8e7f-901234567890');
    assert.equal(after.response.allowed, true);
    assert.ok(
      after.response.warnings?.some((w) => w.startsWith('image-policy: ')),
      'the refusal is a warning',
    );
    // And takes it away again.
    lane.gateway.exceptions.setWatched([]);
    main.gateway.exceptions.setWatched([]);
    assert.equal((await both('3a1c2d3e-4a5b-4c6d-8e7f-901234567890')).response.allowed, false);
    assert.equal(await laneTook(lane, 'validate'), 3, 'the lane took each review');

    assert.deepEqual(...(await settledCounts(lane, main)));
    const applied = { step: 'image-policy', exception: 'latest-tolerated', mode: 'Warn' };
    assert.equal(await lane.metric('admission_gateway_exceptions_applied_total', applied), 1);
    assert.deepEqual(used.lane, used.main, 'each review counts the exceptions it used into their usage');
    assert.equal(used.lane.length, 4);
  });

  it('runs the chain the main lane runs when the cluster has swapped the steps of an entry', async () => {
    const files = [fileURLToPath(new URL('../../fixtures/native-policies/pods.yaml', import.meta.url))];
    const chain = [{ admissionPolicies: 'cluster-policies', files, fromCluster: true }];
    const [lane, main] = await Promise.all([start(chain, { workers: 1 }), start(chain, { workers: 0 })]);
    const both = async (uid: string) => {
      const [inLane, inMain] = await Promise.all([
        lane.review('/validate', largePod(uid)),
        main.review('/validate', largePod(uid)),
      ]);
      assert.deepEqual(inLane, inMain);
      return inLane;
    };
    // The files' policies: no image may use the latest tag.
    assert.equal((await both('4a1c2d3e-4a5b-4c6d-8e7f-901234567890')).response.allowed, false);
    // The native policy watcher sets the cluster's (here: none) in place of the files'.
    lane.gateway.chains.setEntrySteps('cluster-policies', []);
    main.gateway.chains.setEntrySteps('cluster-policies', []);
    assert.equal((await both('5a1c2d3e-4a5b-4c6d-8e7f-901234567890')).response.allowed, true);
    assert.equal(await laneTook(lane, 'validate'), 1, 'the lane took the first review; the event loop, the second');
    assert.deepEqual(...(await settledCounts(lane, main)));
  });

  it('sends the spans the main lane sends, continued from the caller’s traceparent or of a trace of its own', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const extra: Extra = { yaml: { tracing: { otlpEndpoint: receiver.endpoint, exportDelaySeconds: 0.05 } } };
      const chain = [...SHIPPED_LIKE, { plugin: 'throws', failurePolicy: 'Ignore', settings: { message: 'broken' } }];
      const [lane, main] = await Promise.all([
        start(chain, { workers: 1 }, extra),
        start(chain, { workers: 0 }, extra),
      ]);
      const uid = 'ba1c2d3e-4a5b-4c6d-8e7f-901234567890';
      const callers = { lane: '4bf92f3577b34da6a3ce929d0e0e4736', main: '5bf92f3577b34da6a3ce929d0e0e4736' };
      const parent = '00f067aa0ba902b7';
      const [continued, own] = [
        await Promise.all([
          lane.post('/mutate', largePod(uid), { traceparent: `00-${callers.lane}-${parent}-01` }),
          main.post('/mutate', largePod(uid), { traceparent: `00-${callers.main}-${parent}-01` }),
        ]),
        await Promise.all([lane.post('/validate', largePod(uid)), main.post('/validate', largePod(uid))]),
      ];
      const traceOf = (answer: HttpAnswer): string => {
        const annotation = (answer.body as { response: { auditAnnotations: Record<string, string> } }).response
          .auditAnnotations['decision-trace']!;
        return /traceId=([0-9a-f]{32})/.exec(annotation)![1]!;
      };
      assert.equal(traceOf(continued[0]), callers.lane, 'the decision trace carries the caller’s trace id');
      const ownTraces = own.map(traceOf);
      assert.notEqual(ownTraces[0], uid.replaceAll('-', ''), 'a review without traceparent has the span’s trace id');
      const traceIds = [callers.lane, callers.main, ...ownTraces];
      const spansOf = (traceId: string) => receiver.spans.filter((span) => span.traceId === traceId);
      // Each review: its span and one per step that ran (four plugins and a policy on /mutate's three, ...).
      await receiver.until('every review and its steps are exported', () =>
        traceIds.every((id) => spansOf(id).some((span) => span.name === 'admission.review')),
      );
      const shape = (traceId: string) => spanShape(spansOf(traceId));
      const continuedShape = shape(callers.lane);
      assert.ok(continuedShape.some((span) => span.parent === parent && span.name === 'admission.review'));
      assert.ok(continuedShape.filter((span) => span.name === 'admission.step').length >= 2);
      assert.deepEqual(continuedShape, shape(callers.main));
      assert.deepEqual(shape(ownTraces[0]!), shape(ownTraces[1]!));
      // The answers are the same but for the trace ids they carry.
      const sameBut = (answer: HttpAnswer, traceId: string) => answer.text.replaceAll(traceId, 'TRACE');
      assert.equal(sameBut(continued[0], callers.lane), sameBut(continued[1], callers.main));
      assert.equal(sameBut(own[0], ownTraces[0]!), sameBut(own[1], ownTraces[1]!));
      assert.deepEqual([await laneTook(lane, 'mutate'), await laneTook(lane, 'validate')], [1, 1]);
    } finally {
      await receiver.close();
    }
  });

  it('answers 429 with Retry-After when every worker is busy and the queue is full', async () => {
    const release = join(await tempDir(), 'release');
    const chain = [{ plugin: 'spins-until', settings: { file: release, maxMs: 20_000 } }];
    const lane = await start(chain, { workers: 1, queue: 0 });
    const first = lane.post('/mutate', largePod('8f1c2d3e-4a5b-4c6d-8e7f-901234567890'));
    await logged(lane, 'spinning');
    const shed = await lane.post('/mutate', largePod('9f1c2d3e-4a5b-4c6d-8e7f-901234567890'));
    assert.equal(shed.status, 429);
    assert.equal(shed.headers['retry-after'], '1');
    assert.equal((shed.body as { response: { status: { code: number } } }).response.status.code, 429);
    assert.equal(await lane.metric('admission_gateway_shed_reviews_total', { reason: 'large_review_lane' }), 1);
    await writeFile(release, '');
    assert.equal((await first).status, 200);
    // The lane has room again, and the budget holds nothing of the shed review.
    assert.equal((await lane.post('/mutate', largePod('af1c2d3e-4a5b-4c6d-8e7f-901234567890'))).status, 200);
  });

  it('runs its worker at the configured niceness, the event loop at its own (Linux)', async function () {
    if (process.platform !== 'linux') this.skip();
    const atSeven = () => [...threadNiceness()].filter(([, nice]) => nice === 7).map(([tid]) => tid);
    assert.deepEqual(atSeven(), []);
    const lane = await start([SHIPPED_LIKE[0]!], { workers: 1, niceness: 7 });
    // Its worker starts with the first large review.
    const answer = await lane.review('/mutate', largePod('a71c2d3e-4a5b-4c6d-8e7f-901234567890'));
    assert.equal(answer.response.allowed, true);
    assert.equal(await laneTook(lane, 'mutate'), 1);
    const worker = atSeven();
    assert.equal(worker.length, 1, 'one thread, the worker, at niceness 7');
    assert.notEqual(worker[0], process.pid);
    assert.equal(threadNiceness().get(process.pid), 0, 'the event loop at its own niceness');
  });

  it('starts its worker with the configured young generation, which a --max-semi-space-size does not cap', async () => {
    // As the Deployment's NODE_OPTIONS does: V8's flags are the process's, and would size every heap made after.
    setFlagsFromString('--max-semi-space-size=2');
    try {
      const chain = [{ plugin: 'young-generation' }];
      const [small, large] = await Promise.all([
        start(chain, { workers: 1, youngGenerationMiB: 24 }),
        start(chain, { workers: 1, youngGenerationMiB: 40 }),
      ]);
      const uid = 'b71c2d3e-4a5b-4c6d-8e7f-901234567890';
      const warned = async (h: Harness, review: object) => {
        const warnings = (await h.review('/validate', review)).response.warnings ?? [];
        assert.equal(warnings.length, 1, JSON.stringify(warnings));
        const m = /^young-generation: young generation: (\w+); heap limit: (\d+(?:\.\d+)?) MiB$/.exec(warnings[0]!);
        assert.ok(m, warnings[0]);
        return { young: m[1], heapLimitMiB: Number(m[2]) };
      };
      const [inSmall, inLarge] = [await warned(small, largePod(uid)), await warned(large, largePod(uid))];
      assert.deepEqual([inSmall.young, inLarge.young], ['24', '40']);
      // Under the flag both workers' heaps would have its 2 MiB semi-spaces, and the same limit.
      assert.ok(
        inLarge.heapLimitMiB - inSmall.heapLimitMiB >= 16,
        `the heap limits ${inSmall.heapLimitMiB} and ${inLarge.heapLimitMiB} MiB differ by less than the young generations`,
      );
      assert.equal((await warned(small, podCreate())).young, 'none', 'the event loop');
    } finally {
      setFlagsFromString('--max-semi-space-size=0');
    }
  });

  it('answers probes and ordinary reviews while a worker holds a large review', async () => {
    const release = join(await tempDir(), 'release');
    const chain = [spinsOn('large', release, 20_000)];
    const lane = await start(chain, { workers: 1 });
    const large = largePodSized('bf1c2d3e-4a5b-4c6d-8e7f-901234567890', 'large');
    assert.equal((await heldInWorker(lane, large, release)).status, 200);
  });
});

describe('the large-review lane, a step that computes past its deadline', function () {
  this.timeout(60_000);
  let lane: Harness | undefined;
  afterEach(() => lane?.close());

  it('stops its worker (500), and the next large review gets a new one', async () => {
    const chain = [spinsOn('endless', join(await tempDir(), 'never'), 30_000)];
    lane = await gateway(chain, { workers: 1 });
    const endless = largePod('cf1c2d3e-4a5b-4c6d-8e7f-901234567890') as { request: { object: { metadata: object } } };
    endless.request.object.metadata = { ...endless.request.object.metadata, labels: { size: 'endless' } };
    // The worker started (its start-up would otherwise eat the endless review's second).
    assert.equal(
      (await lane.review('/mutate', largePod('ef1c2d3e-4a5b-4c6d-8e7f-901234567890'))).response.allowed,
      true,
    );
    const stopped = await lane.post('/mutate?timeout=1s', endless);
    assert.equal(stopped.status, 500);
    assert.match(
      (stopped.body as { response: { status: { message: string } } }).response.status.message,
      /ran more than 2000 ms, past its deadline: its worker was stopped/,
    );
    const next = await lane.review('/mutate', largePod('df1c2d3e-4a5b-4c6d-8e7f-901234567890'));
    assert.equal(next.response.allowed, true);
  });
});
