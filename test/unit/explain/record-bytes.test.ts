/**
 * The bytes a kept trace is written as (explain/record-bytes.ts) read back exactly: strings of every length across
 * the places where their head grows a byte and where they stop being written by a loop, one-byte and two-byte,
 * with a wide unit anywhere in them; counts across each varint boundary; any number.
 */
import assert from 'node:assert/strict';
import { RecordReader, RecordWriter } from '../../../server/explain/record-bytes.js';

/** Writes with `write`, reads back with `read` from the written bytes (at an offset, as in the ring). */
function roundTrip<T>(write: (w: RecordWriter) => void, read: (r: RecordReader) => T): T {
  const w = new RecordWriter();
  write(w);
  const bytes = Buffer.concat([Buffer.from([1, 2, 3]), w.bytes.subarray(0, w.length)]);
  return read(new RecordReader(bytes, 3));
}

describe('record bytes', () => {
  it('read back strings of every length up to 300, one-byte and two-byte, wherever the wide unit is', () => {
    const strings: string[] = [];
    for (let n = 0; n <= 300; n++) {
      const plain = 'abcdefghij'.repeat(31).slice(0, n);
      strings.push(plain, 'é'.repeat(n));
      if (n > 0) {
        strings.push(
          `✓${plain.slice(1)}`,
          `${plain.slice(1)}✓`,
          `${plain.slice(0, n >> 1)}\ud800${plain.slice((n >> 1) + 1)}`,
        );
      }
    }
    const back = roundTrip(
      (w) => {
        w.count(strings.length);
        for (const s of strings) w.string(s);
        w.count(7);
      },
      (r) => {
        const out: string[] = [];
        for (let n = r.count(); n > 0; n--) out.push(r.string());
        return { out, end: r.count() };
      },
    );
    assert.equal(back.out.length, strings.length);
    for (let i = 0; i < strings.length; i++)
      assert.equal(back.out[i], strings[i], `string ${i}, of ${strings[i]!.length}`);
    assert.equal(back.end, 7, 'the next part is where it was written');
  });

  it('read back counts across each varint boundary, and any number', () => {
    const counts = [0, 1, 127, 128, 255, 16_383, 16_384, 2 ** 21 - 1, 2 ** 21, 2 ** 28, 2 ** 31, 2 ** 32 - 1];
    const numbers = [0, -0, 1.5, -1e-300, Number.MAX_VALUE, Infinity, -Infinity, Date.now(), 0.1 + 0.2];
    const back = roundTrip(
      (w) => {
        for (const c of counts) w.count(c);
        for (const x of numbers) w.number(x);
        w.number(NaN);
      },
      (r) => ({ counts: counts.map(() => r.count()), numbers: numbers.map(() => r.number()), nan: r.number() }),
    );
    assert.deepEqual(back.counts, counts);
    assert.deepEqual(back.numbers, numbers);
    assert.ok(Object.is(back.numbers[1], -0));
    assert.ok(Number.isNaN(back.nan));
  });

  it('grows past its first bytes for a record larger than them', () => {
    const big = 'x'.repeat(100_000);
    assert.equal(
      roundTrip(
        (w) => {
          w.string(big);
          w.string(big);
        },
        (r) => r.string() + r.string(),
      ),
      big + big,
    );
  });
});
