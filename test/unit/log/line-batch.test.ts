import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { LineBatch, createLogger } from '../../../server/base/log.js';

describe('LineBatch', () => {
  let dir: string;
  let file: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'line-batch-'));
    file = path.join(dir, 'log');
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const open = () => pino.destination({ dest: file, sync: true });

  it('holds lines until 8 KiB are batched, then writes them in order as one chunk', async () => {
    const batch = new LineBatch(open());
    const line = (i: number) => `${JSON.stringify({ i, pad: 'x'.repeat(90) })}\n`;
    for (let i = 0; i < 70; i++) batch.write(line(i));
    assert.equal(await readFile(file, 'utf8'), '', '70 lines of ~105 characters stay in the batch');
    for (let i = 70; i < 90; i++) batch.write(line(i));
    const written = (await readFile(file, 'utf8')).split('\n').filter(Boolean);
    assert.ok(written.length > 70 && written.length < 90, `${written.length} lines written`);
    assert.deepEqual(
      written.map((l) => (JSON.parse(l) as { i: number }).i),
      written.map((_, i) => i),
    );
    batch.flushSync();
    assert.equal((await readFile(file, 'utf8')).split('\n').filter(Boolean).length, 90);
  });

  it('writes a partial batch on release() and on flush()', async () => {
    const batch = new LineBatch(open());
    batch.write('a\n');
    batch.release();
    assert.equal(await readFile(file, 'utf8'), 'a\n');
    batch.write('b\n');
    await new Promise<void>((resolve, reject) => batch.flush((err) => (err ? reject(err) : resolve())));
    assert.equal(await readFile(file, 'utf8'), 'a\nb\n');
  });

  it("carries the gateway logger's lines, and logger.flush() writes them out", async () => {
    const batch = new LineBatch(open());
    const log = createLogger('info', batch);
    log.info({ uid: 'u-1', object: { secret: 'x' } }, 'review');
    assert.equal(await readFile(file, 'utf8'), '');
    log.flush();
    const entry = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    assert.equal(entry.msg, 'review');
    assert.equal(entry.uid, 'u-1');
    assert.equal(entry.object, '[redacted]');
  });
});
