import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROUTES } from '../../../server/http/routes.js';
import { parseRecordedReview } from '../../../server/recording/recorded-review.js';
import { recordingLines, type RecordingLimits } from '../../../server/recording/recording-file.js';
import { podCreate, requestOf } from '../../fixtures/reviews/index.js';

describe('recordingLines()', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'recording-file-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  async function read(text: string | Buffer, limits?: RecordingLimits) {
    const file = join(dir, 'r.ndjson');
    await writeFile(file, text);
    const out: Array<[number, string]> = [];
    for await (const { line, text: t } of recordingLines(file, limits)) out.push([line, t]);
    return out;
  }

  it('gives the non-blank lines with their numbers, the last one without its newline too', async () => {
    assert.deepEqual(await read('a\n\n  \nb\r\nc'), [
      [1, 'a'],
      [4, 'b\r'],
      [5, 'c'],
    ]);
  });

  it('refuses a line over the bound, naming it, whichever chunks it spans', async () => {
    const long = 'x'.repeat(200 * 1024);
    await assert.rejects(read(`ok\n${long}\nok\n`, { maxLineBytes: 100 * 1024 }), {
      name: 'RecordingFileError',
      message: `${join(dir, 'r.ndjson')}: line 2: longer than 102400 bytes`,
    });
    assert.equal((await read(`${'y'.repeat(100 * 1024)}\n`, { maxLineBytes: 100 * 1024 })).length, 1);
  });

  it('refuses more reviews than the bound, naming the first line over it', async () => {
    await assert.rejects(read('a\nb\n\nc\n', { maxReviews: 2 }), {
      name: 'RecordingFileError',
      message: `${join(dir, 'r.ndjson')}: line 4: more than 2 recorded reviews`,
    });
  });

  it('says which file it cannot read', async () => {
    const missing = join(dir, 'missing.ndjson');
    const lines = recordingLines(missing);
    await assert.rejects(lines.next(), (err: Error) => err.message.startsWith(`cannot read ${missing}: ENOENT`));
  });
});

describe('parseRecordedReview()', () => {
  const line = (over: Record<string, unknown>) =>
    JSON.stringify({
      format: 1,
      route: 'validate',
      request: requestOf(podCreate()),
      answer: { allowed: true },
      steps: [],
      ...over,
    });
  const refusal = (text: string): string => {
    try {
      parseRecordedReview(text, ROUTES);
    } catch (err) {
      return (err as Error).message;
    }
    return assert.fail('accepted');
  };

  it('reads a recorded review back', () => {
    const review = parseRecordedReview(
      line({ steps: [{ step: 'a', source: 'provider', outcome: 'denied', message: 'no' }] }),
      ROUTES,
    );
    assert.equal(review.phase, 'validate');
    assert.equal(review.request.name, 'web');
    assert.deepEqual(review.steps, [{ step: 'a', source: 'provider', outcome: 'denied', message: 'no' }]);
  });

  it('says what is wrong with a line that is not one', () => {
    assert.match(refusal('{'), /^not JSON: /);
    assert.equal(refusal('[]'), 'expected a JSON object (a recorded review)');
    assert.equal(refusal(line({ format: 2 })), 'format 2: expected 1');
    assert.equal(refusal(line({ route: 'authorize' })), `route must be one of ${ROUTES.join(', ')}`);
    assert.equal(
      refusal(line({ request: { uid: 'u' } })),
      'request: request.operation=nothing, expected CREATE, UPDATE, DELETE or CONNECT',
    );
    assert.equal(refusal(line({ answer: { allowed: 'yes' } })), 'answer.allowed must be true or false');
    assert.equal(
      refusal(line({ answer: { allowed: true, patch: [{ op: 'nope', path: '/a' }] } })),
      'answer.patch[0] is not a JSON patch operation',
    );
    assert.equal(
      refusal(line({ steps: [{ step: 'a', source: 'x', outcome: 'allowed' }] })),
      'steps[0].source must be plugin, provider or policy',
    );
    assert.equal(
      refusal(line({ steps: [{ step: 'a', source: 'plugin', outcome: 'maybe' }] })),
      'steps[0].outcome is not a step outcome',
    );
  });
});
