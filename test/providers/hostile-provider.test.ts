/**
 * A compromised remote provider, through the real gateway and a real HTTPS provider: nothing it answers is
 * repeated at full length into the gateway's answer or its log, its notes are capped per step, and a patch
 * that would blow the object up or nest without end fails the step instead of the gateway.
 */
import assert from 'node:assert/strict';
import { MAX_MESSAGE_CHARS } from '../../server/base/limits.js';
import { podCreate } from '../fixtures/reviews/index.js';
import {
  HOSTILE_MESSAGE_CHARS,
  HOSTILE_NOTE_COUNT,
  startFakeProvider,
  type FakeProvider,
} from '../helpers/fake-provider.js';
import { assertBounded } from '../helpers/bounded.js';
import { reviewOf, startHarness, type Harness } from '../helpers/gateway-harness.js';

const UID = podCreate().request!.uid;

describe('a compromised provider (real gateway, real HTTPS provider)', function () {
  let fake: FakeProvider;
  let gw: Harness | undefined;

  before(async function () {
    fake = await startFakeProvider();
  });

  after(async function () {
    await fake.close();
  });

  afterEach(async function () {
    await gw?.close();
    gw = undefined;
  });

  async function start(behaviour: string, phase: 'mutate' | 'validate', policy: 'Fail' | 'Ignore'): Promise<Harness> {
    gw = await startHarness({
      yaml: `
chain:
  - provider: p
    url: ${fake.url(`/${behaviour}`)}
    caBundle: ${fake.caBundle}
    phases: [${phase}]
    failurePolicy: ${policy}
`,
    });
    return gw;
  }

  it('does not echo a 1 MiB uid: the call fails (invalid_response) with the uid cut short', async function () {
    const h = await start('hostile-uid', 'validate', 'Fail');

    const answer = await h.post('/validate', podCreate());

    const { response } = reviewOf(answer);
    assert.deepEqual([response.uid, response.allowed, response.status?.code], [UID, false, 500]);
    assert.match(
      response.status?.message ?? '',
      /^provider "p" failed \(invalid_response\): .*: expected response\.uid="[^"]+", got "u{256}… \(1048320 more characters\)"$/,
    );
    assertBounded(h, answer);
  });

  it('cuts a 5 MiB deny message and strips the terminal escapes and line breaks in it', async function () {
    const h = await start('hostile-deny', 'validate', 'Fail');

    const answer = await h.post('/validate', podCreate());

    const { response } = reviewOf(answer);
    assert.deepEqual([response.uid, response.allowed, response.status?.code], [UID, false, 403]);
    const message = response.status?.message ?? '';
    assert.ok(message.startsWith('p: denied [2J forged log line xxx'), message.slice(0, 60));
    // The escape and the line break became single spaces before the message was cut.
    const cut = HOSTILE_MESSAGE_CHARS - 1 - MAX_MESSAGE_CHARS;
    assert.ok(message.endsWith(`x… (${cut} more characters)`), message.slice(-60));
    // eslint-disable-next-line no-control-regex -- what must not be there
    assert.doesNotMatch(message, /[\u0000-\u001f]/);
    assertBounded(h, answer);
  });

  it('keeps 20 of its warnings and audit annotations and says how many it dropped', async function () {
    const h = await start('hostile-notes', 'validate', 'Fail');

    const answer = await h.post('/validate', podCreate());

    const { response } = reviewOf(answer);
    assert.equal(response.allowed, true);
    assert.deepEqual(
      response.warnings,
      Array.from({ length: 20 }, (_, i) => `p: warning ${i}`),
    );
    const dropped = HOSTILE_NOTE_COUNT - 20;
    assert.deepEqual(response.auditAnnotations, {
      ...Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`p.key-${i}`, `value ${i}`])),
      'p.notes-dropped': `${dropped} warnings and ${dropped} audit annotations over the limit of 20 each were dropped`,
    });
    const line = h.logs.find((l) => l.msg === 'warnings or audit annotations over a step limit were dropped');
    assert.deepEqual(line?.dropped, { p: { warnings: dropped, annotations: dropped } });
    assertBounded(h, answer);
  });

  it('fails a patch whose copies would keep doubling the object (invalid_patch), keeping the object as it was', async function () {
    const h = await start('hostile-copies', 'mutate', 'Ignore');

    const answer = await h.post('/mutate', podCreate());

    const { response } = reviewOf(answer);
    assert.deepEqual([response.uid, response.allowed, response.patch], [UID, true, undefined]);
    assert.match(
      response.warnings?.[0] ?? '',
      /^p: failed open \(invalid_patch\): returned a patch that does not apply: operation \d+ \(copy \/spec\/copy\d+\) does not apply: the patch copies more than 1048576 bytes$/,
    );
    assertBounded(h, answer);
  });

  it('fails a patch nested 100,000 levels deep (invalid_response) instead of answering HTTP 500', async function () {
    const h = await start('hostile-deep', 'mutate', 'Fail');

    const answer = await h.post('/mutate', podCreate());

    assert.equal(answer.status, 200);
    const { response } = reviewOf(answer);
    assert.deepEqual([response.uid, response.allowed, response.status?.code], [UID, false, 500]);
    assert.match(
      response.status?.message ?? '',
      /^provider "p" failed \(invalid_response\): .*: response\.patch nests more than 1000 levels deep$/,
    );
    assertBounded(h, answer);
  });
});
