import assert from 'node:assert/strict';
import { parseTimeoutParam } from '../../../server/admission/timeout.js';

describe('parseTimeoutParam()', () => {
  const cases: Array<[string | null, number | undefined]> = [
    ['10s', 10_000],
    ['1m30s', 90_000],
    ['500ms', 500],
    ['1.5s', 1500],
    ['2h', 7_200_000],
    [null, undefined],
    ['', undefined],
    ['ten', undefined],
    ['10', undefined],
    ['10s junk', undefined],
    ['0s', undefined],
  ];
  for (const [input, expected] of cases) {
    it(`reads ${JSON.stringify(input)} as ${String(expected)}`, () => {
      assert.equal(parseTimeoutParam(input), expected);
    });
  }
});
