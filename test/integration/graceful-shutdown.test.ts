/**
 * SIGTERM under load, against the real process (`admission-gateway serve` through server/main.ts, so the
 * signal wiring is what runs in a pod): reviews genuinely in flight at a remote provider, steady traffic
 * on keep-alive HTTPS connections the way kube-apiserver's client keeps them, and an account of every
 * request — answered in full, or refused before a byte of it was written. A request that was written and
 * then cut is what the apiserver cannot retry for a POST (its webhook call fails and failurePolicy
 * decides), so none may be lost that way.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateCertificates, writeCertificates, type CertificateBundle } from '../../certs/generate.js';
import { podCreate } from '../fixtures/reviews/index.js';
import { startGatedProvider, type GatedProvider } from '../helpers/gated-provider.js';
import { startHarness } from '../helpers/gateway-harness.js';
import { serveArgs, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { KeepAliveConnection, type Outcome } from '../helpers/keepalive-client.js';
import { startLoad, type LoadRecord } from '../helpers/review-load.js';
import { eventually } from '../helpers/wait.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAIN = join(ROOT, 'server', 'main.ts');
const PATCH = [{ op: 'add', path: '/metadata/labels/owner', value: 'platform' }];

/**
 * What the gateway must answer for the review with `uid`: allowed, with the default-labels patch (and no
 * decision-trace annotation: an allowed answer without warnings is not a notable one).
 */
function expectedAnswer(uid: string): unknown {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: {
      uid,
      allowed: true,
      patchType: 'JSONPatch',
      patch: Buffer.from(JSON.stringify(PATCH)).toString('base64'),
    },
  };
}

function reviewText(uid: string): string {
  const review = podCreate();
  review.request!.uid = uid;
  return JSON.stringify(review);
}

/** `kind` of every record, in order, with consecutive repeats collapsed: e.g. `answered×57, refused×4`. */
function summary(records: readonly { outcome: Outcome }[]): string {
  const counts = new Map<string, number>();
  for (const r of records) counts.set(r.outcome.kind, (counts.get(r.outcome.kind) ?? 0) + 1);
  return [...counts].map(([kind, n]) => `${kind}×${n}`).join(', ');
}

/** Every answered request got its own complete, correct AdmissionReview. */
function assertAnsweredCorrectly(records: readonly LoadRecord[]): void {
  for (const { uid, outcome } of records) {
    if (outcome.kind !== 'answered') continue;
    assert.equal(outcome.status, 200, outcome.body);
    assert.deepEqual(JSON.parse(outcome.body), expectedAnswer(uid));
  }
}

describe('graceful shutdown of `admission-gateway serve` on SIGTERM', function () {
  this.timeout(90_000);
  let dir: string;
  let bundle: CertificateBundle;
  let provider: GatedProvider | undefined;
  let gateway: GatewayProcess | undefined;

  before(function () {
    bundle = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  });

  beforeEach(async function () {
    dir = await mkdtemp(join(tmpdir(), 'gateway-shutdown-'));
    await writeCertificates(dir, bundle);
  });

  afterEach(async function () {
    gateway?.kill();
    gateway = undefined;
    await provider?.close();
    provider = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  /** Starts the gateway process: default-labels then a remote provider (the gated one) on /mutate. */
  async function start(options: { shutdownTimeoutSeconds: number; delayMs: number }): Promise<GatewayProcess> {
    provider = await startGatedProvider({ delayMs: options.delayMs });
    const file = join(dir, 'gateway.yaml');
    await writeFile(
      file,
      `
server:
  host: 127.0.0.1
  opsHost: 127.0.0.1
  healthHost: 127.0.0.1
  shutdownTimeoutSeconds: ${options.shutdownTimeoutSeconds}
  tls: { certFile: tls.crt, keyFile: tls.key, generate: false }
kube: { enabled: false }
chain:
  - plugin: default-labels
    settings: { labels: { owner: platform } }
  - provider: scanner
    url: ${provider.url}
    caBundle: ${provider.caBundle}
    phases: [mutate]
`,
    );
    gateway = await spawnGateway({
      command: process.execPath,
      args: ['--import', 'tsx', ...serveArgs(MAIN, file)],
      cwd: ROOT,
    });
    return gateway;
  }

  function connectOptions(gw: GatewayProcess) {
    const url = new URL(gw.webhook);
    return { host: url.hostname, port: Number(url.port), ca: bundle.caCert };
  }

  async function readyz(gw: GatewayProcess): Promise<{ status: number; text: string }> {
    const res = await fetch(`${gw.health}/readyz`);
    return { status: res.status, text: await res.text() };
  }

  it('finishes the reviews in flight, answers them with Connection: close, turns /readyz 503, closes idle connections cleanly and exits 0', async function () {
    const gw = await start({ shutdownTimeoutSeconds: 20, delayMs: 5 });
    // Two pooled connections that carried one review each and then sit idle, as the apiserver's pool keeps them.
    const idle: KeepAliveConnection[] = [];
    for (let i = 0; i < 2; i++) {
      const conn = await KeepAliveConnection.connect(connectOptions(gw));
      assert.ok(conn instanceof KeepAliveConnection, `could not connect: ${JSON.stringify(conn)}`);
      const outcome = await conn.request('POST', '/mutate', reviewText(`idle-${i}`));
      assert.equal(outcome.kind, 'answered');
      idle.push(conn);
    }
    const load = startLoad({ ...connectOptions(gw), path: '/mutate', connections: 4, review: reviewText });
    try {
      await load.until('40 reviews were answered', () => load.records.length >= 40);
      const readyBefore = await readyz(gw);
      provider!.shut();
      await provider!.until('every load connection has a review held at the provider', () => provider!.held === 4);
      const before = load.records.length;

      gw.child.kill('SIGTERM');
      await eventually('/readyz answers 503', async () => (await readyz(gw)).status === 503, { timeoutMs: 20_000 });
      const readyDuring = await readyz(gw);
      provider!.open();
      await load.finished;
      const exit = await gw.exited;

      assert.deepEqual(readyBefore, { status: 200, text: 'ok' });
      assert.deepEqual(readyDuring, { status: 503, text: 'not ready: shutdown (shutting down)' });
      // Per connection: the held review answered with Connection: close, then the reconnect refused.
      const during = load.records.slice(before);
      assert.deepEqual(
        [1, 2, 3, 4].map((c) =>
          during
            .filter((r) => r.connection === c)
            .map((r) =>
              r.outcome.kind === 'answered' ? `answered, connection: ${r.outcome.headers.connection}` : r.outcome.kind,
            ),
        ),
        Array.from({ length: 4 }, () => ['answered, connection: close', 'refused']),
        summary(during),
      );
      assert.deepEqual(
        load.records.slice(0, before).filter((r) => r.outcome.kind !== 'answered'),
        [],
        'nothing failed before SIGTERM',
      );
      assertAnsweredCorrectly(load.records);
      assert.deepEqual(
        idle.map((c) => c.idleClose),
        ['end', 'end'],
        'idle keep-alive connections were closed cleanly (FIN, no reset)',
      );
      assert.deepEqual(exit, { code: 0, signal: null });
      assert.deepEqual(
        gw
          .logs()
          .map((l) => l.msg)
          .filter((m) => m === 'stopping: draining in-flight reviews' || m === 'stopped'),
        ['stopping: draining in-flight reviews', 'stopped'],
      );
    } finally {
      await load.stop();
      for (const conn of idle) conn.close();
    }
  });

  it('loses no request when SIGTERM lands at an arbitrary moment of steady load', async function () {
    // Three rounds: each SIGTERM lands wherever the four connections happen to be (in flight, or between an
    // answer and the next request — the moment an idle close would race the client's next write).
    for (let round = 1; round <= 3; round++) {
      const gw = await start({ shutdownTimeoutSeconds: 20, delayMs: 2 });
      const load = startLoad({ ...connectOptions(gw), path: '/mutate', connections: 4, review: reviewText });
      try {
        await load.until('30 reviews were answered', () => load.records.length >= 30);
        gw.child.kill('SIGTERM');
        await load.finished;
        const exit = await gw.exited;

        const kinds = summary(load.records);
        assert.deepEqual(
          load.records.filter((r) => r.outcome.kind === 'lost'),
          [],
          `round ${round}: ${kinds}`,
        );
        assert.equal(
          load.records.filter((r) => r.outcome.kind === 'refused').length,
          4,
          `round ${round}: each connection ends refused once the gateway stopped listening: ${kinds}`,
        );
        assertAnsweredCorrectly(load.records);
        assert.deepEqual(exit, { code: 0, signal: null }, `round ${round}`);
      } finally {
        await load.stop();
        gateway?.kill();
        await provider?.close();
        provider = undefined;
      }
    }
  });

  it('cuts a review still in flight at shutdownTimeoutSeconds and exits 0: the client sees the connection close without an answer', async function () {
    const gw = await start({ shutdownTimeoutSeconds: 1, delayMs: 0 });
    provider!.shut();
    const load = startLoad({ ...connectOptions(gw), path: '/mutate', connections: 2, review: reviewText });
    try {
      await provider!.until('both reviews are held at the provider', () => provider!.held === 2);

      gw.child.kill('SIGTERM');
      await load.finished;
      const exit = await gw.exited;

      // Per connection (the two connections' records may interleave): the held review's connection closed
      // without an answer (a FIN, no reset — the apiserver reports EOF and applies failurePolicy), then the
      // reconnect refused.
      assert.deepEqual(
        [1, 2].map((c) => load.records.filter((r) => r.connection === c).map((r) => r.outcome)),
        [1, 2].map(() => [
          { kind: 'lost', error: 'end' },
          { kind: 'refused', error: 'ECONNREFUSED' },
        ]),
      );
      assert.deepEqual(exit, { code: 0, signal: null });
      const cut = gw.logs().find((l) => l.msg === 'shutdown bound reached: closing connections with reviews in flight');
      assert.deepEqual(cut && { level: cut.level, connections: cut.connections, boundSeconds: cut.boundSeconds }, {
        level: 'warn',
        connections: 2,
        boundSeconds: 1,
      });
    } finally {
      await load.stop();
    }
  });
});

describe('Gateway.close() on an idle keep-alive connection', function () {
  this.timeout(30_000);

  it('answers a review that arrives on it during the drain, with Connection: close, then closes it cleanly', async function () {
    // The race a SIGTERM used to lose: the apiserver writes its next review onto a pooled idle connection
    // just as the gateway starts closing. Closing idle connections at once would cut that review.
    const harness = await startHarness({
      yaml: 'chain:\n  - plugin: default-labels\n    settings: { labels: { owner: platform } }\n',
    });
    try {
      const url = new URL(harness.gateway.webhookUrl);
      const conn = await KeepAliveConnection.connect({ host: url.hostname, port: Number(url.port), ca: harness.ca });
      assert.ok(conn instanceof KeepAliveConnection, `could not connect: ${JSON.stringify(conn)}`);
      const before = await conn.request('POST', '/mutate', reviewText('before'));

      const closing = harness.gateway.close();
      const during = await conn.request('POST', '/mutate', reviewText('during'));
      await closing;
      await eventually('the client saw the connection end', () => conn.closed);

      const answers = [before, during].map((o) =>
        o.kind === 'answered' ? { connection: o.headers.connection, review: JSON.parse(o.body) as unknown } : o,
      );
      assert.deepEqual(answers, [
        { connection: 'keep-alive', review: expectedAnswer('before') },
        { connection: 'close', review: expectedAnswer('during') },
      ]);
      assert.equal(conn.idleClose, 'end', 'the server closed the connection after that answer, cleanly');
    } finally {
      await harness.close();
    }
  });
});
