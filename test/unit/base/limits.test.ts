import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { clip, escapeControl } from '../../../server/base/limits.js';

const LIMITS = fileURLToPath(new URL('../../../server/base/limits.ts', import.meta.url));

describe('clip()', () => {
  it('cuts to the limit, says how much was cut, and never splits a surrogate pair', () => {
    assert.equal(clip('abcdef', 4), 'abcd… (2 more characters)');
    assert.equal(clip('abc', 4), 'abc');
    assert.equal(clip('abc😀def', 4), 'abc… (5 more characters)');
  });

  it('keeps none of the original alive: forty clips of 5,000,000-character strings hold kilobytes', async function () {
    this.timeout(30_000);
    // In a process of its own, for a heap measured after a full collection.
    const script = `
      const { clip } = await import(${JSON.stringify(LIMITS)});
      const kept = [];
      globalThis.gc();
      const before = process.memoryUsage().heapUsed;
      const clipped = (i) => clip(JSON.parse(JSON.stringify({ s: 'x'.repeat(5_000_000) + i })).s);
      for (let i = 0; i < 40; i++) kept.push(clipped(i));
      globalThis.gc();
      console.log(process.memoryUsage().heapUsed - before);`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: fileURLToPath(new URL('../../..', import.meta.url)) },
    );
    // Forty originals would be 200 MB.
    assert.ok(Number(stdout) < 10_000_000, `${stdout.trim()} bytes held`);
  });
});

describe('escapeControl()', () => {
  it('writes control characters and bidirectional overrides as \\u escapes, and leaves the rest', () => {
    assert.equal(
      escapeControl('a\u001b[2Jb\nc\u009bd\u202eé😀\u007f'),
      'a\\u001b[2Jb\\u000ac\\u009bd\\u202eé😀\\u007f',
    );
  });
});
