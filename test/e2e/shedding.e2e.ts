import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import {
  apiError,
  core,
  eventually,
  kubeAtLeast,
  randomSuffix,
  readStatus,
  statusOf,
  warningTexts,
} from './cluster.js';
import { anyFailed, metricValue, startE2EGateway, type E2EGateway } from './gateway.js';
import { HOLD_LABEL, PASSED_HOLD_LABEL, holdGate, type HoldGate } from './plugins.js';
import { pausePod } from './objects.js';

// A small in-flight memory budget (server.maxInflightBytes) and one step, `hold`, that keeps the review of a
// Pod labelled with a gate waiting until the test opens the gate. While the held review fills the budget, the
// next one does not fit: the gateway answers it HTTP 429 with `Retry-After: 1`. What the real apiserver
// (client-go's REST client, which calls webhooks) does with that answer is what this file pins down: it
// sleeps the Retry-After and sends the same AdmissionReview again, for as long as the webhook's
// timeoutSeconds lasts.
//
// Weights as the gateway counts them (server/http/byte-budget.ts: 5 bytes per body byte when the
// Content-Length is read, 2048 per object or array once decoded), measured for these objects on v1.20.2:
// the held Pod about 102,150 (a 2 KB body, 45 objects and arrays), a plain Pod 91,290 (1.9 KB, 40), a Secret
// with LABELS 52,400 (1.1 KB, 23), a ServiceAccount with LABELS 50,390 (1.1 KB, 22), a probe ConfigMap 54,617.
// With 128 KiB each fits alone, and the held Pod leaves about 28,900: the body of any other review (under
// 10 KB) is still read — so its uid is known and logged — and its objects are not: shed. (Without LABELS a
// ServiceAccount weighs about 28,800 and would just fit.)
const MAX_BYTES = 131_072;
const LABELS = { 'e2e-a': 'a', 'e2e-b': 'b', 'e2e-c': 'c', 'e2e-d': 'd' };
/** The webhooks of Secrets and ServiceAccounts wait this long for the gateway: less than a Pod is held. */
const SHORT_TIMEOUT_SECONDS = 3;

const rule = (resource: string) => ({
  operations: ['CREATE'],
  apiGroups: [''],
  apiVersions: ['v1'],
  resources: [resource],
});

const CHAIN = `
- plugin: hold
  failurePolicy: Fail
  match:
    rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods, secrets, serviceaccounts] }]
`;

const SHED_MESSAGE = 'review shed: in-flight memory budget full (answered 429, the apiserver retries)';
const SHED_METRIC = 'admission_gateway_shed_reviews_total';

/** A Pod whose review waits at `gate`, holding most of the budget meanwhile. */
const heldPod = (name: string, gate: HoldGate): V1Pod => pausePod(name, { [HOLD_LABEL]: gate.name });

interface LogLine {
  readonly time: string;
  readonly msg: string;
  readonly uid?: string;
  readonly name?: string;
  /** What a shed review was weighed at. */
  readonly weight?: number;
  readonly allowed?: boolean;
  readonly steps?: readonly { readonly step: string; readonly outcome: string }[];
}

const at = (line: LogLine) => Date.parse(line.time);

/** Milliseconds between consecutive lines. */
const gaps = (lines: readonly LogLine[]) => lines.slice(1).map((line, i) => at(line) - at(lines[i]!));

/** A promise being awaited later, without an unhandled rejection meanwhile, and whether it has settled. */
interface Pending<T> {
  readonly settled: () => boolean;
  readonly result: Promise<T>;
}

function pending<T>(promise: Promise<T>): Pending<T> {
  let done = false;
  const result = promise.finally(() => (done = true));
  result.catch(() => undefined);
  return { settled: () => done, result };
}

/** Starts `create` and resolves once its review waits at `gate` (fails if the create ends first). */
async function heldCreate<T>(create: () => Promise<T>, gate: HoldGate): Promise<Pending<T>> {
  const created = pending(create());
  await Promise.race([
    gate.reached,
    created.result.then(
      () => Promise.reject(new Error('the held object was created without waiting at the gate')),
      (err: unknown) => Promise.reject(new Error(`the held object's create failed: ${String(err)}`)),
    ),
  ]);
  return created;
}

/**
 * Starts `create` while `held` waits at `gate`, waits until the gateway has shed its review (the create still
 * pending: the apiserver retries it), then opens the gate and waits for both creates. `shedCount` reads the
 * gateway's count of shed reviews; `took` is how long the create took, from `started`.
 */
async function shedWhileHeld(
  create: () => Promise<unknown>,
  held: Pending<unknown>,
  gate: HoldGate,
  shedCount: () => Promise<number>,
): Promise<{ shedBefore: number; started: number; took: number }> {
  const shedBefore = await shedCount();
  const started = Date.now();
  let created: Pending<unknown> | undefined;
  try {
    created = pending(create());
    await eventually('the gateway to shed the second review', async () =>
      (await shedCount()) > shedBefore ? true : undefined,
    );
    assert.equal(created.settled(), false, 'the shed create is still pending: the apiserver retries it');
  } finally {
    gate.open();
  }
  await held.result;
  await created.result;
  return { shedBefore, started, took: Date.now() - started };
}

describe('reviews shed with 429 when the in-flight memory budget is full, through a real kube-apiserver', function () {
  let gw: E2EGateway | undefined;
  let namespace: string;

  before(async function () {
    gw = await startE2EGateway({
      suite: 'shedding',
      chain: CHAIN,
      server: { maxRequestBytes: MAX_BYTES, maxInflightBytes: MAX_BYTES },
      mutating: [
        { name: 'pods', route: 'mutate', failurePolicy: 'Fail', timeoutSeconds: 10, rules: [rule('pods')] },
        {
          name: 'secrets',
          route: 'mutate',
          failurePolicy: 'Fail',
          timeoutSeconds: SHORT_TIMEOUT_SECONDS,
          rules: [rule('secrets')],
        },
        {
          name: 'serviceaccounts',
          route: 'mutate',
          failurePolicy: 'Ignore',
          timeoutSeconds: SHORT_TIMEOUT_SECONDS,
          rules: [rule('serviceaccounts')],
        },
      ],
    });
    namespace = await gw.namespace();
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
  });

  const shedCount = async () => metricValue(await gw!.metrics(), SHED_METRIC, { reason: 'inflight_bytes' }) ?? 0;
  const logLines = async () => (await gw!.logLines()) as unknown as LogLine[];
  const reviewsOf = (lines: readonly LogLine[], name: string) =>
    lines.filter((l) => l.msg === 'review' && l.name === name);
  const shedOf = (lines: readonly LogLine[], uid: string) =>
    lines.filter((l) => l.msg === SHED_MESSAGE && l.uid === uid);
  /** The shed lines logged since `since` (ms since the epoch; the gateway runs in this process). */
  const shedSince = (lines: readonly LogLine[], since: number) =>
    lines.filter((l) => l.msg === SHED_MESSAGE && at(l) >= since);

  /** Creates `pod` and resolves once its review waits at `gate` (fails if the create ends first). */
  const createHeld = (pod: V1Pod, gate: HoldGate) =>
    heldCreate(() => core().createNamespacedPod({ namespace, body: pod }), gate);

  /**
   * The apiserver's attempts at the review of `name` while its webhook's timeoutSeconds lasted: one a second,
   * all shed, none reviewed. client-go sleeps the Retry-After without looking at the deadline, and the attempt
   * after the last sleep starts past it, so the apiserver gives up — though Go's transport now and then still
   * writes that one onto the pooled connection (seen a few ms after the apiserver gave up): the gateway then
   * sheds one more copy that nobody waits for.
   */
  async function assertShedUntilTimeout(name: string, since: number, shedBefore: number): Promise<void> {
    const lines = await logLines();
    const sheds = shedSince(lines, since);
    assert.ok(sheds.length > 0, `the gateway shed no review of ${name}`);
    const inTime = sheds.filter((l) => at(l) - at(sheds[0]!) < SHORT_TIMEOUT_SECONDS * 1000);
    assert.equal(inTime.length, SHORT_TIMEOUT_SECONDS, 'attempts within timeoutSeconds');
    assert.ok(sheds.length <= SHORT_TIMEOUT_SECONDS + 1, `${sheds.length} attempts`);
    assert.equal(new Set(sheds.map((l) => l.uid)).size, 1, 'the same AdmissionReview each time');
    // Retry-After is a floor the apiserver honours; how late it comes back is the machine's business.
    for (const gap of gaps(sheds)) assert.ok(gap >= 1000, `attempts ${gap} ms apart`);
    const counted = (await shedCount()) - shedBefore;
    assert.ok(counted >= SHORT_TIMEOUT_SECONDS && counted <= SHORT_TIMEOUT_SECONDS + 1, `${counted} counted shed`);
    assert.deepEqual(reviewsOf(lines, name), [], `${name} never reviewed`);
  }

  it('retries a review shed with 429 and Retry-After: 1 a second later, and admits it once memory is free', async function () {
    const gate = holdGate(`retry-${randomSuffix()}`);
    const a = `held-${randomSuffix()}`;
    const b = `retried-${randomSuffix()}`;

    const createA = await createHeld(heldPod(a, gate), gate);
    const { shedBefore, took: tookB } = await shedWhileHeld(
      () => core().createNamespacedPod({ namespace, body: pausePod(b) }),
      createA,
      gate,
      shedCount,
    );

    for (const name of [a, b]) {
      const stored = await core().readNamespacedPod({ name, namespace });
      assert.equal(stored.metadata?.labels?.[PASSED_HOLD_LABEL], 'true', `${name} stored with hold's label`);
    }
    assert.equal(gate.arrivals, 1, 'the held review was not sent again');

    const lines = await logLines();
    const reviewsB = reviewsOf(lines, b);
    assert.equal(reviewsB.length, 1, `the gateway reviewed ${b} once`);
    const reviewB = reviewsB[0]!;
    assert.equal(reviewB.allowed, true);
    assert.deepEqual(
      reviewB.steps?.filter((s) => s.step === 'hold').map((s) => s.outcome),
      ['patched'],
    );
    // The retry is the AdmissionReview that was shed (same uid), sent again a Retry-After later.
    const sheds = shedOf(lines, reviewB.uid!);
    assert.ok(sheds.length >= 1, `the gateway shed the review of ${b} (uid ${reviewB.uid}) before reviewing it`);
    assert.equal((await shedCount()) - shedBefore, sheds.length, 'every shed review was the second Pod');
    for (const gap of gaps([...sheds, reviewB])) {
      assert.ok(gap >= 1000, `the apiserver sent it again ${gap} ms after a 429 with Retry-After: 1`);
    }
    assert.ok(tookB >= 1000, `the client waited ${tookB} ms for the retried create`);
  });

  it(`fails the create with failurePolicy Fail when the review is shed for the webhook's whole timeoutSeconds, naming the webhook`, async function () {
    const gate = holdGate(`timeout-${randomSuffix()}`);
    const a = `held-${randomSuffix()}`;
    const b = `shed-${randomSuffix()}`;
    const shedBefore = await shedCount();

    const createA = await createHeld(heldPod(a, gate), gate);
    let took: number;
    let err;
    const started = Date.now();
    try {
      err = await apiError(
        core().createNamespacedSecret({ namespace, body: { metadata: { name: b, labels: LABELS } } }),
      );
      took = Date.now() - started;
    } finally {
      gate.open();
    }
    assert.equal(err.code, 500);
    const status = statusOf(err);
    assert.equal(status.reason, 'InternalError');
    assert.equal(
      status.message,
      // Newer apiservers than the 1.20 floor say "failed to call webhook" before the client's error.
      `Internal error occurred: failed calling webhook "${gw!.webhookName('secrets')}": ` +
        `${kubeAtLeast(21) ? 'failed to call webhook: ' : ''}Post "${gw!.gateway.webhookUrl}/mutate?timeout=${SHORT_TIMEOUT_SECONDS}s": context deadline exceeded`,
    );
    assert.ok(took >= SHORT_TIMEOUT_SECONDS * 1000, `refused after ${took} ms, before the webhook's timeout`);
    assert.equal(await readStatus(() => core().readNamespacedSecret({ name: b, namespace })), 404);
    const stored = await createA.result;
    assert.equal(stored.metadata?.labels?.[PASSED_HOLD_LABEL], 'true', 'the held Pod is created once let go');

    await assertShedUntilTimeout(b, started, shedBefore);
  });

  it(`admits the object unmutated and without a warning with failurePolicy Ignore when the review is shed for the webhook's whole timeoutSeconds`, async function () {
    const gate = holdGate(`ignore-${randomSuffix()}`);
    const a = `held-${randomSuffix()}`;
    const b = `unmutated-${randomSuffix()}`;
    const shedBefore = await shedCount();

    const createA = await createHeld(heldPod(a, gate), gate);
    let created;
    let took: number;
    const started = Date.now();
    try {
      created = await core().createNamespacedServiceAccountWithHttpInfo({
        namespace,
        body: { metadata: { name: b, labels: LABELS } },
      });
      took = Date.now() - started;
    } finally {
      gate.open();
    }
    await createA.result;
    assert.equal(created.httpStatusCode, 201);
    assert.deepEqual(warningTexts(created.headers), [], 'v1.20 does not tell the client it failed open');
    assert.ok(took >= SHORT_TIMEOUT_SECONDS * 1000, `created after ${took} ms, before the webhook's timeout`);
    const stored = await core().readNamespacedServiceAccount({ name: b, namespace });
    assert.equal(stored.metadata?.labels?.[PASSED_HOLD_LABEL], undefined, 'stored without the chain');
    await assertShedUntilTimeout(b, started, shedBefore);
  });
});

// A ConfigMap's review shed at its headers: the gateway reads its body (hundreds of KB) to the end and drops it, then
// answers 429 on a connection it keeps. What the real apiserver does then is what matters: client-go sends the review
// again a Retry-After later, from the same reader rewound. Answered before the body has all arrived, the apiserver's
// transport can go on reading that reader for the first request after it was rewound, and the review is sent again
// with only its tail, or nothing, for a body (client-go before Kubernetes 1.26; seen here on v1.20 as a 400 for a
// body that is not JSON, and the create refused).
//
// Weights (5 bytes a body byte): the held ConfigMap about 5.0 MB of the 8 MiB budget, of which large reviews may
// hold all but a sixteenth (about 7.9 MB); the second about 3.5 MB, which does not fit beside it and does alone.
const LARGE_BUDGET = 8 * 1024 * 1024;
const HELD_DATA_BYTES = 1_000_000;
const SHED_DATA_BYTES = 700_000;

describe('a large review shed at its headers, its body read to the end and dropped, through a real kube-apiserver', function () {
  let gw: E2EGateway | undefined;
  let namespace: string;

  before(async function () {
    gw = await startE2EGateway({
      suite: 'shedding-large',
      chain: `
- plugin: hold
  failurePolicy: Fail
  match:
    rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [configmaps] }]
`,
      server: { maxRequestBytes: 3 * 1024 * 1024, maxInflightBytes: LARGE_BUDGET },
      mutating: [
        { name: 'configmaps', route: 'mutate', failurePolicy: 'Fail', timeoutSeconds: 10, rules: [rule('configmaps')] },
      ],
    });
    namespace = await gw.namespace();
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
  });

  it('is sent again by the apiserver a second later and admitted once memory is free', async function () {
    const gate = holdGate(`large-${randomSuffix()}`);
    const a = `held-${randomSuffix()}`;
    const b = `retried-${randomSuffix()}`;
    const createA = await heldCreate(
      () =>
        core().createNamespacedConfigMap({
          namespace,
          body: {
            metadata: { name: a, labels: { [HOLD_LABEL]: gate.name } },
            data: { pad: 'x'.repeat(HELD_DATA_BYTES) },
          },
        }),
      gate,
    );
    const { started: startedB, took: tookB } = await shedWhileHeld(
      () =>
        core().createNamespacedConfigMap({
          namespace,
          body: { metadata: { name: b }, data: { pad: 'y'.repeat(SHED_DATA_BYTES) } },
        }),
      createA,
      gate,
      async () => metricValue(await gw!.metrics(), SHED_METRIC, { reason: 'inflight_bytes' }) ?? 0,
    );

    const stored = await core().readNamespacedConfigMap({ name: b, namespace });
    assert.equal(stored.metadata?.labels?.[PASSED_HOLD_LABEL], 'true', `${b} stored with hold's label`);
    assert.equal(stored.data?.pad?.length, SHED_DATA_BYTES);
    const lines = (await gw!.logLines()) as unknown as LogLine[];
    const reviewsB = lines.filter((l) => l.msg === 'review' && l.name === b);
    assert.equal(reviewsB.length, 1, `the gateway reviewed ${b} once`);
    const sheds = lines.filter((l) => l.msg === SHED_MESSAGE && at(l) >= startedB);
    assert.ok(sheds.length >= 1, 'the gateway shed the second review before reviewing it');
    // Shed at its headers: weighed by its declared length (5 bytes a byte), its uid not read.
    for (const shed of sheds) {
      assert.equal(shed.uid, '');
      assert.ok((shed.weight ?? 0) >= 5 * SHED_DATA_BYTES, `shed at a weight of ${shed.weight}`);
    }
    for (const gap of gaps([...sheds, reviewsB[0]!])) {
      assert.ok(gap >= 1000, `the apiserver sent it again ${gap} ms after a 429 with Retry-After: 1`);
    }
    assert.ok(tookB >= 1000, `the client waited ${tookB} ms for the retried create`);
  });
});
